//! Issue 39, N:M one-way → two-way: `mi_students.courses` is an array of
//! course ids in the old version; the new one makes it two-way with
//! `mi_courses.students`. `docrel schema apply` publishes the inverse (the
//! old version then keeps the other side of each of its writes of the
//! array, in a transaction) and, two leases later, builds it from the
//! arrays written before, page by page.
//!
//! This binary plays the new version (`link_only`): it links and unlinks
//! its own students while the change runs. A second OS process, started
//! from it, plays the old one: it seeds the data, then pushes, pulls,
//! sets, replaces, inserts and deletes its own students (and replaces
//! courses, whose type has no `students`) until told to stop, and prints
//! what it last wrote.

use docrel::admin::change::{change, ChangeReport};
use docrel::bson::{doc, oid::ObjectId, Document as BsonDoc};
use docrel::schema::stored;
use docrel::testing::TestDb;
use docrel::Error;
use futures::TryStreamExt;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const V1: &str = concat!(module_path!(), "::v1");
const V2: &str = concat!(module_path!(), "::v2");
const DB_VARIABLE: &str = "DOCREL_MOVES_INVERSE_DB";
const MODE_VARIABLE: &str = "DOCREL_MOVES_INVERSE_MODE";
const SEED_VARIABLE: &str = "DOCREL_MOVES_INVERSE_SEED";
/// The seeds the fleet test runs (`1..9` or `3`; 1 by default): each draws
/// both versions' writes and where the first run of the change is cut.
const SEEDS_VARIABLE: &str = "DOCREL_MOVES_INVERSE_SEEDS";
const LEASE: Duration = Duration::from_millis(400);
/// The collection where the test tells the old version to stop.
const STOP: &str = "mi_stop";
/// The seeds run with fail points (as the above; 2 by default): on the
/// clients of both versions and of the change.
const FAULT_SEEDS_VARIABLE: &str = "DOCREL_MOVES_INVERSE_FAULT_SEEDS";
const FAULTS_VARIABLE: &str = "DOCREL_MOVES_INVERSE_FAULTS";
/// Set, the server's profiler records every command of the test's
/// database, and a violation prints those naming its documents.
const PROFILE_VARIABLE: &str = "DOCREL_MOVES_INVERSE_PROFILE";

mod faults;
use faults::{client, faults, Seeded};
const COURSES: usize = 6;

/// The old version: a student holds the ids of its courses, one-way.
pub mod v1 {
    use docrel::bson::oid::ObjectId;
    use docrel::Document;
    use serde::{Deserialize, Serialize};

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mi_courses")]
    pub struct Course {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub title: String,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mi_students")]
    pub struct Student {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub name: String,
        #[reference(many, to = Course, max = 20)]
        pub courses: Vec<ObjectId>,
    }
}

/// The new version: both sides hold the ids of the other.
pub mod v2 {
    use docrel::bson::oid::ObjectId;
    use docrel::Document;
    use serde::{Deserialize, Serialize};

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mi_courses")]
    pub struct Course {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub title: String,
        #[serde(default)]
        #[reference(many, to = Student, inverse = courses, max = 500)]
        pub students: Vec<ObjectId>,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mi_students")]
    pub struct Student {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub name: String,
        #[reference(many, to = Course, inverse = students, max = 20)]
        pub courses: Vec<ObjectId>,
    }
}

/// This process is the new version, whichever test runs first.
fn new_version() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| docrel::testing::link_only(&[V2]));
}

fn err(e: docrel::mongodb::error::Error) -> Error {
    Error::driver("test", "mi", e)
}

async fn raw(db: &docrel::mongodb::Database, collection: &str) -> docrel::Result<Vec<BsonDoc>> {
    let coll = db.collection::<BsonDoc>(collection);
    coll.find(doc! {}).sort(doc! {"_id": 1}).await.map_err(err)?.try_collect().await.map_err(err)
}

fn ids(d: &BsonDoc, field: &str) -> Vec<ObjectId> {
    d.get_array(field).map(|a| a.iter().filter_map(|i| i.as_object_id()).collect()).unwrap_or_default()
}

/// Some of `of`, drawn by `n`.
fn some_of(n: &mut Seeded, of: &[ObjectId]) -> Vec<ObjectId> {
    of.iter().filter(|_| n.below(3) == 0).copied().collect()
}

/// Each version's students as it last wrote them (`None`: deleted).
type Model = BTreeMap<ObjectId, Option<Vec<ObjectId>>>;

async fn course_ids(db: &docrel::mongodb::Database) -> docrel::Result<Vec<ObjectId>> {
    Ok(raw(db, "mi_courses").await?.iter().filter_map(|c| c.get_object_id("_id").ok()).collect())
}

/// The old version's data: courses, and students of both versions (the
/// new version's are named `new`), none linked back.
async fn seed(db: &docrel::mongodb::Database) -> docrel::Result<()> {
    docrel::schema::publish(db).await?;
    let courses: Vec<v1::Course> =
        (0..COURSES).map(|i| v1::Course { id: ObjectId::new(), title: format!("course {i}") }).collect();
    v1::Course::repo(db).insert_many(&courses).await?;
    let all: Vec<ObjectId> = courses.iter().map(|c| c.id).collect();
    let mut n = Seeded(5);
    let students: Vec<v1::Student> = (0..16)
        .map(|i| v1::Student {
            id: ObjectId::new(),
            name: if i % 2 == 0 { "old".into() } else { "new".into() },
            courses: some_of(&mut n, &all),
        })
        .collect();
    v1::Student::repo(db).insert_many(&students).await.map(drop)
}

/// A write that failed, with the student it may have written (`None`: an
/// insert, or a course).
struct Unsure(Option<ObjectId>, Error);

/// One write of the old version to one of its students, drawn by `n`,
/// recorded in `model` when it returns `Ok`.
async fn old_write(db: &docrel::mongodb::Database, n: &mut Seeded, model: &mut Model) -> Result<(), Unsure> {
    let courses = course_ids(db).await.map_err(|e| Unsure(None, e))?;
    let live: Vec<ObjectId> = model.iter().filter(|(_, c)| c.is_some()).map(|(s, _)| *s).collect();
    let (repo, fields) = (v1::Student::repo(db), v1::Student::fields());
    let Some(&s) = live.get(n.below(live.len())) else { return Ok(()) };
    let c = courses[n.below(courses.len())];
    let mine = model.get(&s).cloned().flatten().unwrap_or_default();
    let unsure = |e| Unsure(Some(s), e);
    let after = match n.below(7) {
        0 => {
            repo.update_by_id(&s, fields.courses.push([c])).await.map_err(unsure)?;
            Some([mine, vec![c]].concat())
        }
        1 => {
            repo.update_by_id(&s, fields.courses.pull(&c)).await.map_err(unsure)?;
            Some(mine.into_iter().filter(|x| *x != c).collect())
        }
        2 => {
            let set = some_of(n, &courses);
            repo.update_by_id(&s, fields.courses.set(set.clone())).await.map_err(unsure)?;
            Some(set)
        }
        3 => {
            let set = some_of(n, &courses);
            repo.replace(&v1::Student { id: s, name: "old".into(), courses: set.clone() }).await.map_err(unsure)?;
            Some(set)
        }
        4 => {
            let new = v1::Student { id: ObjectId::new(), name: "old".into(), courses: some_of(n, &courses) };
            repo.insert(&new).await.map_err(|e| Unsure(None, e))?;
            println!("@op {} inserted {:?} {}", new.id, new.courses, now_ms());
            model.insert(new.id, Some(new.courses));
            return Ok(());
        }
        5 => {
            repo.delete_by_id(&s).await.map_err(unsure)?;
            None
        }
        _ => {
            // A course written whole by a type without `students` keeps them.
            let course = v1::Course { id: c, title: format!("renamed {}", n.below(99)) };
            let began = now_ms();
            v1::Course::repo(db).replace(&course).await.map_err(|e| Unsure(None, e))?;
            println!("@course {c} replaced {began}..{}", now_ms());
            return Ok(());
        }
    };
    println!("@op {s} {after:?} {}", now_ms());
    model.insert(s, after);
    Ok(())
}

fn now_ms() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0)
}

/// The old version, in its own process: `seed` seeds; `write` writes until
/// the test inserts into [`STOP`], then prints its model.
#[tokio::test]
#[ignore = "run by `a_reference_array_becomes_two_way_while_both_versions_write`"]
async fn old_version() -> docrel::Result<()> {
    let Ok(name) = std::env::var(DB_VARIABLE) else { return Ok(()) };
    docrel::testing::link_only(&[V1]);
    docrel::schema::set_lease(LEASE);
    let faulted = std::env::var(FAULTS_VARIABLE).is_ok();
    // The fail points target the clients named after the database.
    let db = client(&name, if faulted { &name } else { "mi-old" }).await?.database(&name);
    match std::env::var(MODE_VARIABLE).as_deref() {
        Ok("seed") => return seed(&db).await,
        Ok("full") => return push_into_full(&db).await,
        _ => {}
    }
    let seed: u64 = std::env::var(SEED_VARIABLE).ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    let mut model: Model = raw(&db, "mi_students")
        .await?
        .iter()
        .filter(|s| s.get_str("name").ok() == Some("old"))
        .map(|s| (s.get_object_id("_id").unwrap(), Some(ids(s, "courses"))))
        .collect();
    let (mut n, until) = (Seeded(11 + seed * 131), Instant::now() + Duration::from_secs(90));
    let marker = client(&name, "mi-janitor").await?.database(&name).collection::<BsonDoc>(STOP);
    let mut writes = 0;
    while Instant::now() < until && marker.find_one(doc! {}).await.map_err(err)?.is_none() {
        match old_write(&db, &mut n, &mut model).await {
            Ok(()) => writes += 1,
            // A fault: the write may or may not have landed; its student
            // is no longer known exactly, and no longer written.
            Err(Unsure(Some(s), _)) if faulted => drop(model.remove(&s)),
            Err(Unsure(None, _)) if faulted => {}
            Err(Unsure(_, e)) => return Err(e),
        }
    }
    println!("@writes {writes}");
    for (s, courses) in &model {
        let hex: Option<Vec<String>> = courses.as_ref().map(|c| c.iter().map(|i| i.to_hex()).collect());
        println!("@student {s} {}", serde_json::to_string(&hex).expect("json"));
    }
    Ok(())
}

/// The old version pushes the one course into the one student, whose
/// inverse is full, and says what it was answered.
async fn push_into_full(db: &docrel::mongodb::Database) -> docrel::Result<()> {
    let course = course_ids(db).await?[0];
    let student = raw(db, "mi_students").await?[0].get_object_id("_id").unwrap();
    let pushed = v1::Student::repo(db).update_by_id(&student, v1::Student::fields().courses.push([course])).await;
    match pushed {
        Err(Error::EmbedFull { collection, field, max, .. }) => println!("@full {collection}.{field} {max}"),
        other => println!("@answered {other:?}"),
    }
    Ok(())
}

fn old_version_process(db: &str, mode: &str, seed: u64) -> std::process::Command {
    let mut command = std::process::Command::new(std::env::current_exe().expect("this test binary"));
    command.args(["old_version", "--exact", "--ignored", "--nocapture"]).env(DB_VARIABLE, db).env(MODE_VARIABLE, mode);
    command.env(SEED_VARIABLE, seed.to_string());
    command
}

/// The old version's model, from what it printed.
fn printed(out: &str) -> Model {
    out.lines()
        .filter_map(|l| l.strip_prefix("@student "))
        .map(|l| {
            let (id, courses) = l.split_once(' ').expect("id and courses");
            let courses: Option<Vec<String>> = serde_json::from_str(courses).expect("json");
            let parsed = courses.map(|c| c.iter().map(|h| ObjectId::parse_str(h).unwrap()).collect());
            (ObjectId::parse_str(id).unwrap(), parsed)
        })
        .collect()
}

/// One link or unlink of the new version to one of its students.
async fn new_write(db: &docrel::mongodb::Database, n: &mut Seeded, model: &mut Model) -> Result<(), Unsure> {
    let courses = course_ids(db).await.map_err(|e| Unsure(None, e))?;
    let students: Vec<ObjectId> = model.keys().copied().collect();
    let Some(&s) = students.get(n.below(students.len())) else { return Ok(()) };
    let c = courses[n.below(courses.len())];
    let mine = model.get(&s).cloned().flatten().unwrap_or_default();
    let rels = v2::Student::rels();
    let after = if n.below(2) == 0 {
        rels.courses.link(db, &s, &c).await.map_err(|e| Unsure(Some(s), e))?;
        if mine.contains(&c) {
            mine
        } else {
            [mine, vec![c]].concat()
        }
    } else {
        rels.courses.unlink(db, &s, &c).await.map_err(|e| Unsure(Some(s), e))?;
        mine.into_iter().filter(|x| *x != c).collect()
    };
    model.insert(s, Some(after));
    Ok(())
}

/// Both sides say the same, each link once, and each version's students
/// hold what it last wrote.
async fn assert_two_way(
    db: &docrel::mongodb::Database,
    expected: &Model,
) -> docrel::Result<Result<(), Vec<(ObjectId, ObjectId)>>> {
    let students = raw(db, "mi_students").await?;
    let courses = raw(db, "mi_courses").await?;
    let mut forward = BTreeSet::new();
    for s in &students {
        let id = s.get_object_id("_id").unwrap();
        let named = ids(s, "courses");
        if let Some(wanted) = expected.get(&id) {
            assert_eq!(Some(&named), wanted.as_ref(), "student {id} holds what its version last wrote");
        }
        forward.extend(named.into_iter().map(|c| (id, c)));
    }
    for (id, wanted) in expected {
        let stored = students.iter().any(|s| s.get_object_id("_id").ok() == Some(*id));
        assert_eq!(stored, wanted.is_some(), "student {id} is stored exactly when its version did not delete it");
    }
    let mut back = BTreeSet::new();
    for c in &courses {
        let id = c.get_object_id("_id").unwrap();
        let held = ids(c, "students");
        let once: BTreeSet<ObjectId> = held.iter().copied().collect();
        assert_eq!(once.len(), held.len(), "course {id} names each student once: {held:?}");
        assert!(c.get_str("title").is_ok(), "course {id} keeps its title");
        back.extend(held.into_iter().map(|s| (s, id)));
    }
    Ok(if forward == back { Ok(()) } else { Err(forward.symmetric_difference(&back).copied().collect()) })
}

/// The new version's writes while the change runs (cut once, then run
/// again until complete), with fail points when `faulted`: the change's
/// last report and how many writes returned `Ok`.
async fn during(t: &TestDb, seed: u64, faulted: bool, model: &mut Model) -> docrel::Result<(ChangeReport, u64)> {
    let mut n = Seeded(seed * 7 + 3);
    let cut_after = 1 + n.below(3);
    let (db, program) = (t.db.clone(), stored::program());
    let changing = tokio::spawn(async move {
        // The first run is cut after `cut_after` steps; then it resumes,
        // again after a fault, until complete.
        let steps = AtomicUsize::new(0);
        let stop = || steps.load(Ordering::SeqCst) >= cut_after;
        let step = |_: &str| {
            steps.fetch_add(1, Ordering::SeqCst);
        };
        let first = change(&db, program.clone()).run(stop, step).await;
        assert!(first.as_ref().map_or(faulted, |r| r.state != "complete"), "the first run was cut: {first:?}");
        for attempt in 0.. {
            match change(&db, program.clone()).run(|| false, |_| {}).await {
                Err(e) if faulted && attempt < 50 => println!("the change failed ({e}); resumed"),
                other => return other,
            }
        }
        unreachable!("the loop returns")
    });
    let mut writes = 0;
    while !changing.is_finished() {
        match new_write(&t.db, &mut n, model).await {
            Ok(()) => writes += 1,
            Err(Unsure(s, _)) if faulted => drop(s.map(|s| model.remove(&s))),
            Err(Unsure(_, e)) => return Err(e),
        }
    }
    let report = changing.await.expect("the change ran")?;
    assert_eq!(report.state, "complete", "{report:?}");
    // The other side is built, not repaired (a repair could undo a link).
    assert_eq!(report.backfilled, ["inverse:mi_students.courses"], "{report:?}");
    Ok((report, writes))
}

/// One history; `false` when it ended in a violation the embedded
/// server's own index explains ([`index_lost`]).
async fn one_seed(seed: u64, faulted: bool) -> docrel::Result<bool> {
    let t = TestDb::new(&format!("moves_inverse_{seed}")).await?;
    stored::set_lease_for(&t.db, LEASE);
    let name = t.db.name().to_owned();
    let seeded = old_version_process(&name, "seed", seed).output().expect("the old version seeds");
    assert!(seeded.status.success(), "{}", String::from_utf8_lossy(&seeded.stderr));
    // The new version starts: its publish adds `mi_courses.students` and
    // keeps `mi_students.courses` one-way, which is no conflict.
    if std::env::var_os(PROFILE_VARIABLE).is_some() {
        t.db.run_command(doc! {"profile": 2}).await.map_err(err)?;
    }
    docrel::schema::publish(&t.db).await?;
    let diff = stored::diff(&stored::load(&t.db).await?, &stored::program());
    assert_eq!(diff.inverses.len(), 1, "{diff:?}");
    assert!(diff.conflicts.is_empty() && diff.repairs.is_empty(), "{}", diff.to_text());
    assert!(diff.to_text().contains("inverse: `mi_students.courses` becomes two-way with `mi_courses.students`"));

    let mut model: Model = raw(&t.db, "mi_students")
        .await?
        .iter()
        .filter(|s| s.get_str("name").ok() == Some("new"))
        .map(|s| (s.get_object_id("_id").unwrap(), Some(ids(s, "courses"))))
        .collect();
    let mut old = old_version_process(&name, "write", seed);
    if faulted {
        old.env(FAULTS_VARIABLE, "1");
    }
    let old = old.stdout(std::process::Stdio::piped()).spawn().expect("the old version writes");
    let quiet = Arc::new(AtomicBool::new(false));
    let faulting = faulted.then(|| tokio::spawn(faults(name.clone(), seed, quiet.clone(), "mi-janitor")));
    let started = now_ms();
    let ran = during(&t, seed, faulted, &mut model).await;
    quiet.store(true, Ordering::SeqCst);
    let set = match faulting {
        Some(f) => f.await.expect("the fail points ran"),
        None => Ok(0),
    };
    let stopped = async {
        let janitor = client(&name, "mi-janitor").await?.database(&name);
        janitor.collection::<BsonDoc>(STOP).insert_one(doc! {}).await.map_err(err).map(drop)
    }
    .await;
    let out = old.wait_with_output().expect("the old version ends");
    let ((report, writes), set) = (ran?, set?);
    stopped?;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed_out = String::from_utf8_lossy(&out.stdout);
    let old_writes = printed_out.lines().find_map(|l| l.strip_prefix("@writes ")).unwrap_or("?").to_owned();
    let old_model = printed(&printed_out);
    assert!(old_model.len() >= 4, "the old version printed its students: {old_model:?}");
    // The old version's Ok writes and the new version's after the change.
    let mut n = Seeded(seed * 11 + 5);
    for _ in 0..20 {
        if let Err(Unsure(_, e)) = new_write(&t.db, &mut n, &mut model).await {
            return Err(e);
        }
    }
    model.extend(old_model);
    println!(
        "seed {seed}{}: {writes} new-version and {old_writes} old-version writes during the change ({set} fail \
         points); backfilled {}",
        if faulted { " with fail points" } else { "" },
        report.backfilled.join(", ")
    );
    if let Err(pairs) = assert_two_way(&t.db, &model).await? {
        for (s, c) in &pairs {
            let ops: Vec<&str> = printed_out
                .lines()
                .filter(|l| l.contains(&s.to_hex()) || l.contains(&format!("@course {c}")))
                .collect();
            println!("link ({s}, {c}) is on one side only; the old version's writes of {s}:\n{}", ops.join("\n"));
        }
        println!("change started {started} ms, ended {} ms", now_ms());
        explain(&t, &pairs).await?;
        if index_lost(&t.db, &pairs).await? {
            return Ok(false);
        }
        panic!("{} link(s) on one side only: {pairs:?}", pairs.len());
    }
    // The stored schema now says two-way, and a second run changes nothing.
    let after = stored::diff(&stored::load(&t.db).await?, &stored::program());
    assert!(after.inverses.is_empty() && !after.has_changes(), "{}", after.to_text());
    Ok(true)
}

/// Whether the other side's multikey index misses a document a scan
/// finds holding a student of `pairs`: the embedded test server loses an
/// index key now and then under concurrent transactions (its `validate`
/// does not see it), and a query by element, docrel's pull included, then
/// misses that document. Not a rule docrel broke: on MongoDB the two
/// counts are always equal.
async fn index_lost(db: &docrel::mongodb::Database, pairs: &[(ObjectId, ObjectId)]) -> docrel::Result<bool> {
    let courses = db.collection::<BsonDoc>("mi_courses");
    let mut lost = false;
    for (s, _) in pairs {
        let by_index = courses.count_documents(doc! {"students": s}).await.map_err(err)?;
        let scan = docrel::mongodb::options::Hint::Keys(doc! {"$natural": 1});
        let scanned = courses.count_documents(doc! {"students": s}).hint(scan).await.map_err(err)?;
        println!("@index {s}: {by_index} course(s) by the index, {scanned} by a scan");
        lost |= by_index != scanned;
    }
    Ok(lost)
}

/// What the server recorded of the documents of `pairs`: every write as
/// its oplog has it (a diff per update, with its transaction), and with
/// `DOCREL_MOVES_INVERSE_PROFILE` every command naming them.
async fn explain(t: &TestDb, pairs: &[(ObjectId, ObjectId)]) -> docrel::Result<()> {
    let oplog = t.client.database("local").collection::<BsonDoc>("oplog.rs");
    for (s, c) in pairs {
        let mine = doc! {"ns": {"$regex": "^t_moves_inverse"}, "o2._id": {"$in": [s, c]}};
        let found: Vec<BsonDoc> = oplog.find(mine).await.map_err(err)?.try_collect().await.map_err(err)?;
        for e in found {
            println!("@oplog {}", format!("{e}").chars().take(700).collect::<String>());
        }
    }
    if std::env::var_os(PROFILE_VARIABLE).is_none() {
        return Ok(());
    }
    for p in raw(&t.db, "system.profile").await? {
        let text = format!("{p}");
        if pairs.iter().any(|(s, c)| text.contains(&s.to_hex()) || text.contains(&c.to_hex())) {
            println!("@profile {}", text.chars().take(900).collect::<String>());
        }
    }
    Ok(())
}

fn seeds(variable: &str, default: &str) -> Vec<u64> {
    let spec = std::env::var(variable).unwrap_or_else(|_| default.into());
    match spec.split_once("..") {
        Some((a, b)) => (a.parse().unwrap()..b.parse().unwrap()).collect(),
        None => spec.split(',').filter_map(|s| s.trim().parse().ok()).collect(),
    }
}

/// A program declaring the array one-way keeps the stored inverse's bound
/// too: a push whose other side is full is refused, with nothing written.
#[tokio::test]
async fn the_old_version_keeps_the_other_side_s_bound() -> docrel::Result<()> {
    new_version();
    let t = TestDb::new("moves_inverse_full").await?;
    docrel::schema::publish(&t.db).await?;
    let (course, student) = (ObjectId::new(), ObjectId::new());
    let others: Vec<ObjectId> = (0..500).map(|_| ObjectId::new()).collect();
    let courses = t.db.collection::<BsonDoc>("mi_courses");
    courses.insert_one(doc! {"_id": course, "title": "full", "students": &others}).await.map_err(err)?;
    let students = t.db.collection::<BsonDoc>("mi_students");
    students.insert_one(doc! {"_id": student, "name": "old", "courses": []}).await.map_err(err)?;
    let out = old_version_process(t.db.name(), "full", 1).output().expect("the old version pushes");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("@full mi_courses.students 500"), "{said}\n{}", String::from_utf8_lossy(&out.stderr));
    let stored = students.find_one(doc! {"_id": student}).await.map_err(err)?.expect("the student");
    assert_eq!(ids(&stored, "courses"), Vec::<ObjectId>::new(), "nothing was written: {stored}");
    let stored = courses.find_one(doc! {"_id": course}).await.map_err(err)?.expect("the course");
    assert_eq!(ids(&stored, "students"), others);
    Ok(())
}

#[tokio::test]
async fn a_reference_array_becomes_two_way_while_both_versions_write() -> docrel::Result<()> {
    new_version();
    docrel::schema::set_lease(LEASE);
    let runs = seeds(SEEDS_VARIABLE, "1").into_iter().map(|s| (s, false));
    for (seed, faulted) in runs.chain(seeds(FAULT_SEEDS_VARIABLE, "2").into_iter().map(|s| (s, true))) {
        if !one_seed(seed, faulted).await? {
            // The server lost an index key (above): the history runs once
            // more, and must hold then.
            println!("@server seed {seed}: the embedded server's index lost a key; running it again");
            assert!(one_seed(seed, faulted).await?, "seed {seed}: the server lost an index key twice");
        }
    }
    Ok(())
}
