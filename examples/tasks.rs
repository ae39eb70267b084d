//! The task tracker of *6 Rules of Thumb*, part 2: two-way referencing.
//! A person lists the ids of their tasks, each task references its owner,
//! and reassigning a task keeps both sides right in one call (inside a
//! transaction when the deployment has them).
//!
//! ```text
//! people: {_id, name, tasks: [task ids]}
//! tasks:  {_id, description, due_date, owner}
//! ```
//!
//! Run: `MONGODB_URI=mongodb://... cargo run --example tasks` (database
//! `DOCREL_DB`, default `docrel_tasks`; dropped first, left in place).

use docrel::bson::{oid::ObjectId, DateTime};
use docrel::mongodb::Database;
use docrel::{relations::LinkOutcome, Document, Filter, View};
use serde::{Deserialize, Serialize};

#[path = "common/mod.rs"]
pub mod common;

// ANCHOR: schema
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "people")]
pub struct Person {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
    #[reference(many, to = Task, inverse = owner, max = 500)]
    pub tasks: Vec<ObjectId>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "tasks")]
pub struct Task {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub description: String,
    pub due_date: DateTime,
    #[reference(to = Person, inverse = tasks)]
    pub owner: ObjectId,
}
// ANCHOR_END: schema

#[derive(View, Deserialize, Debug)]
#[view(of = Person)]
pub struct PersonName {
    pub name: String,
}

#[derive(View, Deserialize, Debug)]
#[view(of = Task)]
pub struct TaskLine {
    pub description: String,
    pub due_date: DateTime,
}

/// The ids the scenario created.
#[derive(Debug, Clone)]
pub struct Tasks {
    /// Kate Monster, Joe Bookreader.
    pub people: Vec<ObjectId>,
    /// Write lesson plan, Grade homework, Order chalk.
    pub tasks: Vec<ObjectId>,
    /// What the reassignment did.
    pub reassigned: LinkOutcome,
}

/// Midnight UTC of a day of April 2014.
fn april(day: i64) -> DateTime {
    DateTime::from_millis(1_396_310_400_000 + (day - 1) * 86_400_000)
}

/// `2014-04-01`.
fn day(d: DateTime) -> String {
    d.try_to_rfc3339_string().map(|s| s[..10].to_owned()).unwrap_or_else(|_| d.to_string())
}

fn outcome(o: &LinkOutcome) -> String {
    let how = if o.transactional {
        "both sides in one transaction"
    } else {
        "one write after the other: this deployment has no transactions"
    };
    format!("changed: {}, transactional: {} ({how})", o.changed, o.transactional)
}

pub async fn scenario(db: &Database, log: &common::Log) -> docrel::Result<Tasks> {
    log.title("tasks: people list their tasks and tasks reference their owner (two-way)");
    log.step("create the indexes of people and tasks", async {
        Person::repo(db).ensure_indexes().await?;
        Task::repo(db).ensure_indexes().await
    })
    .await?;
    let kate = Person { id: ObjectId::new(), name: "Kate Monster".into(), tasks: Vec::new() };
    let joe = Person { id: ObjectId::new(), name: "Joe Bookreader".into(), tasks: Vec::new() };
    log.step("insert Kate Monster and Joe Bookreader", Person::repo(db).insert_many(&[kate.clone(), joe.clone()]))
        .await?;
    let tasks: Vec<Task> = [("Write lesson plan", 1), ("Grade homework", 2), ("Order chalk", 3)]
        .iter()
        .map(|(description, day)| Task {
            id: ObjectId::new(),
            description: (*description).into(),
            due_date: april(*day),
            owner: kate.id,
        })
        .collect();
    log.step("insert 3 tasks owned by Kate", Task::repo(db).insert_many(&tasks)).await?;
    for task in &tasks {
        let linked = log
            .step(
                &format!("add {:?} to Kate's tasks (both sides)", task.description),
                Person::rels().tasks.link(db, &kate.id, &task.id),
            )
            .await?;
        log.show(outcome(&linked));
    }

    let all = log
        .step("load every task", Task::repo(db).find(Filter::all()).sort(Task::fields().due_date.asc()).to_vec())
        .await?;
    let owners = log
        .step("load the owner of every task (one $in on people)", Task::rels().owner.load::<PersonName>(db, &all))
        .await?;
    for (i, t) in all.iter().enumerate() {
        log.show(format!(
            "{:<18} due {}  owner {}",
            t.description,
            day(t.due_date),
            owners.one(i).map_or("?", |p| p.name.as_str())
        ));
    }

    let reassigned = log
        .step("reassign \"Write lesson plan\" to Joe", Task::rels().owner.reassign(db, &tasks[0].id, &joe.id))
        .await?;
    log.show(outcome(&reassigned));

    let people = log
        .step("load both people", Person::repo(db).find(Filter::all()).sort(Person::fields().name.asc()).to_vec())
        .await?;
    let their_tasks = log
        .step(
            "load their tasks through their arrays (one $in on tasks)",
            Person::rels().tasks.load::<TaskLine>(db, &people),
        )
        .await?;
    for (i, p) in people.iter().enumerate() {
        let names: Vec<&str> = their_tasks.of(i).map(|t| t.description.as_str()).collect();
        log.show(format!("{}: {names:?}", p.name));
    }
    Ok(Tasks { people: vec![kate.id, joe.id], tasks: tasks.iter().map(|t| t.id).collect(), reassigned })
}

#[tokio::main]
async fn main() {
    common::finish("tasks", run().await);
}

async fn run() -> docrel::Result<()> {
    let (db, log) = common::open("tasks").await?;
    scenario(&db, &log).await?;
    common::done(&db);
    Ok(())
}
