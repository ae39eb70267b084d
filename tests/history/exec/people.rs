//! The operations on people and their tasks: the two-way reference
//! `people.tasks` / `tasks.owner`, the copy `tasks.owner_name`, and the
//! notes of a task (`tasks.notes[].who`, a reference inside an element,
//! with its copy `by_name`).

use super::{link, outcome, Ctx, Sess, Within};
use crate::history::op::Op;
use crate::history::schema::*;
use crate::history::universe::*;
use docrel::bson::oid::ObjectId;
use docrel::repository::Repository;

/// Runs `op` if it is an operation on people or tasks.
pub async fn run(c: &Ctx, op: &Op, mut s: Sess<'_>) -> Option<docrel::Result<String>> {
    if let Some(r) = people(c, op, s.as_deref_mut()).await {
        return Some(r);
    }
    if let Some(r) = tasks(c, op, s.as_deref_mut()).await {
        return Some(r);
    }
    if let Some(r) = notes_of_tasks(c, op, s.as_deref_mut()).await {
        return Some(r);
    }
    links(c, op, s).await
}

fn task_doc(t: usize, description: &str, owner: Option<usize>) -> Task {
    Task {
        id: Universe::task(t),
        description: description.to_owned(),
        owner: owner.map(Universe::person),
        owner_name: STALE.into(),
        notes: vec![],
    }
}

/// Task `t`, no owner, with notes by `by` (see [`notes`]).
fn noted_task(t: usize, by: &[usize], text: &str) -> Task {
    Task { notes: notes(by, text), ..task_doc(t, text, None) }
}

async fn people(c: &Ctx, op: &Op, s: Sess<'_>) -> Option<docrel::Result<String>> {
    let repo = c.repo::<Person>(false);
    Some(match op {
        Op::InsertPerson { h, name } | Op::InsertPersonWithTasks { h, name, .. } => {
            let tasks = match op {
                Op::InsertPersonWithTasks { tasks, .. } => tasks.iter().map(|t| Universe::task(*t)).collect(),
                _ => vec![],
            };
            let person = Person { id: Universe::person(*h), name: name.clone(), tasks };
            repo.insert(&person).within(s).await.map(|()| String::new())
        }
        Op::RenamePerson { h, name, txn } => c
            .repo::<Person>(*txn)
            .update_by_id(&Universe::person(*h), Person::fields().name.set(name.clone()))
            .within(s)
            .await
            .map(outcome),
        Op::ReplacePerson { h, name } => rewrite_person(&repo, *h, name, false, s).await,
        Op::SavePerson { h, name } => rewrite_person(&repo, *h, name, true, s).await,
        Op::DeletePerson { h } => {
            repo.delete_by_id(&Universe::person(*h)).within(s).await.map(|d| format!("deleted {d}"))
        }
        Op::DeletePersonWithTasks { h } => delete_with_tasks(c, *h, s).await,
        _ => return None,
    })
}

/// Deletes the tasks person `h` owns, then the person: the way a delete
/// gets past `Task.owner`'s restrict, so that the pull of the person's
/// notes runs (a task given to it meanwhile refuses it). Plain writes
/// only: unlinking the tasks instead would be a transaction, which the
/// gate cannot hold apart from the pull's plain `updateMany` (`gate.rs`).
async fn delete_with_tasks(c: &Ctx, h: usize, mut s: Sess<'_>) -> docrel::Result<String> {
    let person = Universe::person(h);
    let owned = Task::fields().owner.eq(Some(person));
    let tasks = c.repo::<Task>(false).delete_many(owned).within(s.as_deref_mut()).await?;
    let deleted = c.repo::<Person>(false).delete_by_id(&person).within(s).await?;
    Ok(format!("deleted {tasks} tasks, deleted {deleted}"))
}

/// Reads person `h`, then replaces or saves it with a new name.
async fn rewrite_person(
    repo: &Repository<Person>,
    h: usize,
    name: &str,
    save: bool,
    mut s: Sess<'_>,
) -> docrel::Result<String> {
    let person = match repo.get(&Universe::person(h)).within(s.as_deref_mut()).await? {
        Some(p) => Person { name: name.to_owned(), ..p },
        None if save => Person { id: Universe::person(h), name: name.to_owned(), tasks: vec![] },
        None => return Ok("no such person".into()),
    };
    if save {
        repo.save(&person).within(s).await?;
    } else {
        repo.replace(&person).within(s).await?;
    }
    Ok(format!("tasks as read {}", person.tasks.len()))
}

async fn tasks(c: &Ctx, op: &Op, s: Sess<'_>) -> Option<docrel::Result<String>> {
    let repo = c.repo::<Task>(false);
    let inserted = |r: docrel::Result<()>| r.map(|()| String::new());
    Some(match op {
        Op::InsertTask { t, description } => inserted(repo.insert(&task_doc(*t, description, None)).within(s).await),
        Op::InsertTaskOwned { t, h, description } | Op::InsertTaskOwnedEarly { t, h, description } => {
            inserted(repo.insert(&task_doc(*t, description, Some(*h))).within(s).await)
        }
        Op::ReplaceTask { t, description } => rewrite_task(&repo, *t, description, false, s).await,
        Op::SaveTask { t, description } => rewrite_task(&repo, *t, description, true, s).await,
        Op::DeleteTask { t } => repo.delete_by_id(&Universe::task(*t)).within(s).await.map(|d| format!("deleted {d}")),
        Op::DeleteTaskDoc { t } => delete_as_read(&repo, *t, s).await,
        Op::SetOwnerPlainly { t, h } => {
            let u = Task::fields().owner.set(Some(Universe::person(*h)));
            repo.update_by_id(&Universe::task(*t), u).within(s).await.map(outcome)
        }
        _ => return None,
    })
}

/// The writes of a task's notes: inserted with them, pushed, set whole,
/// pulled by writer.
async fn notes_of_tasks(c: &Ctx, op: &Op, s: Sess<'_>) -> Option<docrel::Result<String>> {
    let repo = c.repo::<Task>(false);
    let inserted = |r: docrel::Result<()>| r.map(|()| String::new());
    Some(match op {
        Op::InsertTaskNoted { t, by, text } => inserted(repo.insert(&noted_task(*t, by, text)).within(s).await),
        Op::InsertManyTasks { tasks, text } => {
            let docs: Vec<Task> =
                tasks.iter().enumerate().map(|(k, (t, by))| noted_task(*t, by, &format!("{text}.{k}"))).collect();
            inserted(repo.insert_many(&docs).within(s).await)
        }
        Op::PushTaskNote { t, h, text, txn } => {
            let u = Task::fields().notes.push(notes(&[*h], text));
            c.repo::<Task>(*txn).update_by_id(&Universe::task(*t), u).within(s).await.map(outcome)
        }
        Op::SetTaskNotes { t, by, text } => {
            let u = Task::fields().notes.set(notes(by, text));
            repo.update_by_id(&Universe::task(*t), u).within(s).await.map(outcome)
        }
        Op::PullOneTaskNote { text } => pull_one_note(c, text).await,
        Op::PullTaskNotes { t, h } => {
            let who = Universe::person(*h);
            let u = Task::fields().notes.pull_where(|e| e.at::<ObjectId>("who").eq(who));
            repo.update_by_id(&Universe::task(*t), u).within(s).await.map(outcome)
        }
        _ => return None,
    })
}

/// Reads task `t`, then replaces or saves it with a new description.
async fn rewrite_task(
    repo: &Repository<Task>,
    t: usize,
    description: &str,
    save: bool,
    mut s: Sess<'_>,
) -> docrel::Result<String> {
    let task = match repo.get(&Universe::task(t)).within(s.as_deref_mut()).await? {
        // The notes as read, their copies stale: docrel fills them.
        Some(task) => Task { description: description.to_owned(), notes: restaled(task.notes), ..task },
        None if save => task_doc(t, description, None),
        None => return Ok("no such task".into()),
    };
    if save {
        repo.save(&task).within(s).await?;
    } else {
        repo.replace(&task).within(s).await?;
    }
    Ok(format!("owner as read {:?}", task.owner))
}

/// Reads task `t`, then deletes it as read (`delete(&doc)`).
async fn delete_as_read(repo: &Repository<Task>, t: usize, mut s: Sess<'_>) -> docrel::Result<String> {
    let Some(task) = repo.get(&Universe::task(t)).within(s.as_deref_mut()).await? else {
        return Ok("no such task".into());
    };
    let deleted = repo.delete(&task).within(s).await?;
    Ok(format!("deleted {deleted} (owner as read {:?})", task.owner))
}

async fn links(c: &Ctx, op: &Op, s: Sess<'_>) -> Option<docrel::Result<String>> {
    let db = &c.db;
    let written = match op {
        Op::Reassign { t, h } => {
            Task::rels().owner.reassign(db, &Universe::task(*t), &Universe::person(*h)).within(s).await
        }
        Op::LinkTask { h, t } => {
            Person::rels().tasks.link(db, &Universe::person(*h), &Universe::task(*t)).within(s).await
        }
        Op::UnlinkTask { h, t } => {
            Person::rels().tasks.unlink(db, &Universe::person(*h), &Universe::task(*t)).within(s).await
        }
        Op::UnlinkOwner { t, h } => {
            Task::rels().owner.unlink(db, &Universe::task(*t), &Universe::person(*h)).within(s).await
        }
        _ => return None,
    };
    Some(written.map(link))
}

/// What a [`Op::PullOneTaskNote`] whose pull removed more than the one
/// note says (`run::facts` makes it an [`super::super::check::Inv::Call`]).
pub const PULLED_OTHERS: &str = "the pull of one note removed others";

/// A person no other operation knows, a task no other operation names with
/// two notes by that person (sharing the key `who`), and a pull of the
/// first as read: the second stays.
async fn pull_one_note(c: &Ctx, text: &str) -> docrel::Result<String> {
    let (who, id) = (ObjectId::new(), ObjectId::new());
    Person::repo(&c.db).insert(&Person { id: who, name: format!("{text}.who"), tasks: Vec::new() }).await?;
    let note = |k: u8| Note { text: format!("{text}.{k}"), by: who, by_name: STALE.into() };
    let task = Task {
        id,
        description: text.to_owned(),
        owner: None,
        owner_name: String::new(),
        notes: vec![note(1), note(2)],
    };
    let repo = c.repo::<Task>(false);
    repo.insert(&task).await?;
    let first = repo.require(&id).await?.notes.swap_remove(0);
    repo.update_by_id(&id, Task::fields().notes.pull(&first)).await?;
    let left: Vec<String> = repo.require(&id).await?.notes.into_iter().map(|n| n.text).collect();
    Ok(if left == [format!("{text}.2")] {
        "pulled one of two".to_owned()
    } else {
        format!("{PULLED_OTHERS}: left {left:?}")
    })
}
