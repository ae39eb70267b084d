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
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const V1: &str = concat!(module_path!(), "::inverse_fleet::v1");
const V2: &str = concat!(module_path!(), "::inverse_fleet::v2");
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
mod inverse_fleet;
use faults::{client, faults, seeds, Seeded};
use inverse_fleet::*;

/// This process is the new version, whichever test runs first.
fn new_version() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| docrel::testing::link_only(&[V2]));
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
    let marker = client(&name, "mi-janitor").await?.database(&name).collection::<BsonDoc>(STOP);
    write_until_stopped(&db, (Version::OneWay, "old"), seed, faulted, marker).await
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
        match two_way_write(&t.db, &mut n, model).await {
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

    let mut model = model_of(&t.db, "new").await?;
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
        if let Err(Unsure(_, e)) = two_way_write(&t.db, &mut n, &mut model).await {
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
        explain(&t, &pairs, std::env::var_os(PROFILE_VARIABLE).is_some()).await?;
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

/// Every course's students as the students' arrays name them.
async fn linked_from_arrays(db: &docrel::mongodb::Database) -> docrel::Result<BTreeMap<ObjectId, BTreeSet<ObjectId>>> {
    let mut out: BTreeMap<ObjectId, BTreeSet<ObjectId>> =
        course_ids(db).await?.into_iter().map(|c| (c, BTreeSet::new())).collect();
    for s in raw(db, "mi_students").await? {
        for c in ids(&s, "courses") {
            out.entry(c).or_default().insert(s.get_object_id("_id").unwrap());
        }
    }
    Ok(out)
}

/// The new version reads every course's students, by id, all at once, and
/// counted, as the arrays name them.
async fn reads_every_link(db: &docrel::mongodb::Database, when: &str) -> docrel::Result<()> {
    let want = linked_from_arrays(db).await?;
    let repo = v2::Course::repo(db);
    for course in repo.find(docrel::Filter::new(doc! {})).to_vec().await? {
        let read: BTreeSet<ObjectId> = course.students.iter().copied().collect();
        assert_eq!(read.len(), course.students.len(), "{when}: course {} names each student once", course.id);
        assert_eq!(Some(&read), want.get(&course.id), "{when}: the students of course {}", course.id);
        let one = repo.require(&course.id).await?.students.into_iter().collect::<BTreeSet<_>>();
        assert_eq!(one, read, "{when}: course {} by its id", course.id);
    }
    let (first, named) = want.iter().find(|(_, s)| !s.is_empty()).expect("a course with students");
    let someone = *named.iter().next().unwrap();
    let counted = repo.count(docrel::Filter::new(doc! {"students": someone})).await?;
    let courses = want.values().filter(|s| s.contains(&someone)).count() as u64;
    assert_eq!(counted, courses, "{when}: the courses of student {someone} (course {first} among them), counted");
    Ok(())
}

/// Until the change has built `mi_courses.students`, the new version reads
/// it from the students' arrays: every link, before the change, once it is
/// announced, and (as stored) once it is complete.
#[tokio::test]
async fn the_new_version_reads_every_link_before_the_other_side_is_built() -> docrel::Result<()> {
    new_version();
    let t = TestDb::new("moves_inverse_reads").await?;
    stored::set_lease_for(&t.db, LEASE);
    let seeded = old_version_process(t.db.name(), "seed", 1).output().expect("the old version seeds");
    assert!(seeded.status.success(), "{}", String::from_utf8_lossy(&seeded.stderr));
    docrel::schema::publish(&t.db).await?;
    // As a process starting now reads it at its first write.
    stored::obey(&t.db).await?;
    reads_every_link(&t.db, "before the change").await?;
    // The diff counts what the change builds on the live data.
    let want = linked_from_arrays(&t.db).await?;
    let students = raw(&t.db, "mi_students").await?;
    let holders = students.iter().filter(|s| !ids(s, "courses").is_empty()).count();
    let (links, into) = (want.values().map(BTreeSet::len).sum::<usize>(), want.values().filter(|s| !s.is_empty()));
    let most = want.values().map(BTreeSet::len).max().unwrap_or(0);
    let preview = docrel::admin::change_preview::preview(&t.db, &stored::program()).await?.to_text();
    let counted = format!(
        "inverse count: `mi_courses.students`: {holders} document(s) hold {links} link(s) into {} `mi_courses` \
         document(s), at most {most} into one; 0 would pass its bound of 500",
        into.count()
    );
    assert!(preview.contains(&counted), "{counted}\n{preview}");
    let s = students[0].get_object_id("_id").unwrap();
    let c = course_ids(&t.db).await?.into_iter().find(|c| !ids(&students[0], "courses").contains(c)).unwrap();
    v2::Student::rels().courses.link(&t.db, &s, &c).await?;
    let held: usize = raw(&t.db, "mi_courses").await?.iter().map(|c| ids(c, "students").len()).sum();
    assert_eq!(held, 1, "the side holds only the link written since");
    reads_every_link(&t.db, "after one link").await?;

    let steps = AtomicUsize::new(0);
    let stop = || steps.load(Ordering::SeqCst) >= 1;
    let step = |_: &str| {
        steps.fetch_add(1, Ordering::SeqCst);
    };
    let cut = change(&t.db, stored::program()).run(stop, step).await?;
    assert_eq!(cut.state, "announced", "{cut:?}");
    assert_eq!(stored::load_building(&t.db).await?.len(), 1, "the side is listed as being built");
    let status = docrel::admin::moves::status(&t.db, LEASE).await?.to_text();
    assert!(status.contains("two-way mi_students.courses ↔ mi_courses.students: being built"), "{status}");
    stored::obey(&t.db).await?;
    reads_every_link(&t.db, "announced").await?;

    let done = change(&t.db, stored::program()).run(|| false, |_| {}).await?;
    assert!(done.complete(), "{done:?}");
    assert!(stored::load_building(&t.db).await?.is_empty(), "built: no longer listed");
    let schema = t.db.collection::<BsonDoc>(stored::SCHEMA_COLLECTION);
    assert_eq!(schema.count_documents(doc! {"_id": stored::MOVES_ID}).await.map_err(err)?, 0);
    stored::obey(&t.db).await?;
    reads_every_link(&t.db, "complete").await?;
    let want = linked_from_arrays(&t.db).await?;
    for course in raw(&t.db, "mi_courses").await? {
        let held: BTreeSet<ObjectId> = ids(&course, "students").into_iter().collect();
        assert_eq!(Some(&held), want.get(&course.get_object_id("_id").unwrap()), "built as stored: {course}");
    }
    Ok(())
}
