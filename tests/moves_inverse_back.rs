//! Issue 39, N:M two-way → one-way: the stored schema keeps
//! `mi_students.courses` two-way with `mi_courses.students` (the old
//! version declares both); the new version declares the array one-way and
//! its `Course` without `students`. Deployed, the new version adopts the
//! stored inverse, so each of its writes of the array keeps the other side
//! for the old version's readers. `docrel schema retire` lists the side
//! that goes, is refused while the old version runs, and once it is gone
//! takes `mi_courses.students` out of the stored schema and then (with
//! `--drop-old`) out of the documents.
//!
//! This binary plays the new version (`link_only`); a second OS process,
//! started from it, plays the old one: it seeds two-way data, then links
//! and unlinks its own students until told to stop.

use docrel::admin::moves::make_one_way;
use docrel::admin::Exit;
use docrel::bson::{doc, Document as BsonDoc};
use docrel::schema::stored;
use docrel::testing::TestDb;
use docrel::Error;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const OLD: &str = concat!(module_path!(), "::inverse_fleet::v2");
const NEW: &str = concat!(module_path!(), "::inverse_fleet::v1");
const DB_VARIABLE: &str = "DOCREL_MOVES_INVERSE_BACK_DB";
const MODE_VARIABLE: &str = "DOCREL_MOVES_INVERSE_BACK_MODE";
const SEED_VARIABLE: &str = "DOCREL_MOVES_INVERSE_BACK_SEED";
/// The seeds the test runs (`1..9` or `3`; 1 by default): each draws both
/// versions' writes and where the first run of the retirement is cut.
const SEEDS_VARIABLE: &str = "DOCREL_MOVES_INVERSE_BACK_SEEDS";
/// The seeds run with fail points (as the above; 2 by default), on the
/// clients of the new version and of the retirement.
const FAULT_SEEDS_VARIABLE: &str = "DOCREL_MOVES_INVERSE_BACK_FAULT_SEEDS";
const LEASE: Duration = Duration::from_millis(400);
/// The collection where the test tells the old version to stop.
const STOP: &str = "mi_stop";

mod faults;
mod inverse_fleet;
use faults::{admin, client, faults, seeds, Seeded};
use inverse_fleet::*;

/// This process is the new version, whichever test runs first.
fn new_version() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        docrel::testing::link_only(&[NEW]);
        docrel::schema::set_lease(LEASE);
    });
}

fn err(e: docrel::mongodb::error::Error) -> Error {
    Error::driver("test", "mi", e)
}

/// The old version's data: courses and students of both versions (the new
/// version's are named `new`), linked on both sides.
async fn seed(db: &docrel::mongodb::Database) -> docrel::Result<()> {
    docrel::schema::publish(db).await?;
    let courses: Vec<v2::Course> = (0..COURSES)
        .map(|i| v2::Course { id: docrel::bson::oid::ObjectId::new(), title: format!("course {i}"), students: vec![] })
        .collect();
    v2::Course::repo(db).insert_many(&courses).await?;
    let students: Vec<v2::Student> = (0..16)
        .map(|i| v2::Student {
            id: docrel::bson::oid::ObjectId::new(),
            name: if i % 2 == 0 { "old".into() } else { "new".into() },
            courses: vec![],
        })
        .collect();
    v2::Student::repo(db).insert_many(&students).await?;
    let mut n = Seeded(5);
    for s in &students {
        for c in &courses {
            if n.below(3) == 0 {
                v2::Student::rels().courses.link(db, &s.id, &c.id).await?;
            }
        }
    }
    Ok(())
}

/// The old version, in its own process: `seed` seeds; `write` links and
/// unlinks its students until the test inserts into [`STOP`].
#[tokio::test]
#[ignore = "run by `a_two_way_array_becomes_one_way_once_the_old_version_is_gone`"]
async fn old_version() -> docrel::Result<()> {
    let Ok(name) = std::env::var(DB_VARIABLE) else { return Ok(()) };
    docrel::testing::link_only(&[OLD]);
    docrel::schema::set_lease(LEASE);
    // Its client is never faulted: a fault can leave a process without a
    // server, and so without its lease, for longer than two short leases
    // (a `ShutdownInProgress` has the driver wait for a heartbeat), and a
    // process without a lease is one the retirement rightly does not wait
    // for. Fail points hit the new version and the retirement.
    let db = client(&name, "mi-old").await?.database(&name);
    if std::env::var(MODE_VARIABLE).as_deref() == Ok("seed") {
        return seed(&db).await;
    }
    let seed: u64 = std::env::var(SEED_VARIABLE).ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    let marker = client(&name, "mi-janitor").await?.database(&name).collection::<BsonDoc>(STOP);
    // As a service does: it holds its lease between writes too (faults
    // may leave it no student of its own to write).
    let keeping = stored::keep_current(&db, LEASE / 2);
    let wrote = write_until_stopped(&db, (Version::TwoWay, "old"), seed, false, marker).await;
    keeping.abort();
    wrote
}

fn old_version_process(db: &str, mode: &str, seed: u64) -> std::process::Command {
    let mut command = std::process::Command::new(std::env::current_exe().expect("this test binary"));
    command.args(["old_version", "--exact", "--ignored", "--nocapture"]).env(DB_VARIABLE, db).env(MODE_VARIABLE, mode);
    command.env(SEED_VARIABLE, seed.to_string());
    command
}

/// The new version writes its students while `task` runs; how many
/// writes returned `Ok`.
async fn writing_while<T>(
    db: &docrel::mongodb::Database,
    n: &mut Seeded,
    model: &mut Model,
    faulted: bool,
    task: &tokio::task::JoinHandle<T>,
) -> docrel::Result<u64> {
    let mut writes = 0;
    while !task.is_finished() {
        match one_way_write(db, (n, "new"), model).await {
            Ok(()) => writes += 1,
            Err(Unsure(s, _)) if faulted => drop(s.map(|s| model.remove(&s))),
            Err(Unsure(_, e)) => return Err(e),
        }
    }
    Ok(writes)
}

/// Runs the retirement with `--drop-old` until it completes, the first run
/// cut after `cut_after` steps, again after each fault when `faulted`.
async fn retire(db: docrel::mongodb::Database, cut_after: usize, faulted: bool) -> docrel::Result<()> {
    let program = stored::program();
    let steps = AtomicUsize::new(0);
    let stop = || steps.load(Ordering::SeqCst) >= cut_after;
    let step = |_: &str| {
        steps.fetch_add(1, Ordering::SeqCst);
    };
    let first = make_one_way(&db, &program, true, LEASE, stop, step).await;
    assert!(first.as_ref().map_or(faulted, |r| r.iter().all(|r| !r.complete)), "the first run was cut: {first:?}");
    for attempt in 0.. {
        match make_one_way(&db, &program, true, LEASE, || false, |_| {}).await {
            Err(e) if faulted && attempt < 50 => println!("the retirement failed ({e}); resumed"),
            Err(e) => return Err(e),
            // A run that failed after its last step leaves nothing to do.
            Ok(reports) if reports.is_empty() && faulted => return Ok(()),
            Ok(reports) => {
                assert!(reports.len() == 1 && reports[0].complete, "{reports:?}");
                return Ok(());
            }
        }
    }
    unreachable!("the loop returns")
}

/// Refused while the old version runs: the side stays, listed.
async fn refused_while_the_old_version_runs(db: &docrel::mongodb::Database, faulted: bool) -> docrel::Result<()> {
    let program = stored::program();
    for attempt in 0.. {
        match make_one_way(db, &program, true, LEASE, || false, |_| {}).await {
            Err(Error::Invalid { message, .. }) if message.contains("still declare") => {
                assert!(message.contains("`mi_courses.students` cannot be made one-way yet"), "{message}");
                assert!(message.contains("nothing was retracted"), "{message}");
                break;
            }
            Err(e) if faulted && attempt < 50 => println!("the retirement failed ({e}); run again"),
            other => panic!("retired while the old version runs: {other:?}"),
        }
    }
    // Read back on a client no fail point names.
    let db = &client(db.name(), "mi-janitor").await?.database(db.name());
    let courses = stored::load(db).await?.into_iter().find(|t| t.collection == "mi_courses").expect("stored");
    assert!(courses.relations.iter().any(|r| r.field == "students"), "the side is still stored");
    let listed = stored::load_retiring(db).await?;
    assert!(listed.len() == 1 && !listed[0].retracted, "{listed:?}");
    let status = docrel::admin::moves::status(db, LEASE).await?.to_text();
    assert!(status.contains("one-way mi_students.courses ↔ mi_courses.students → one-way: announced"), "{status}");
    assert!(status.contains("links old `mi_courses.students`"), "the old version's row says so: {status}");
    Ok(())
}

/// One history: both versions write, the retirement is refused, the old
/// version stops (both sides agree then), and the retirement runs (cut,
/// resumed) while the new version writes. `false` when the sides
/// disagreed where the embedded server's own index explains it
/// ([`index_lost`]).
async fn one_seed(seed: u64, faulted: bool) -> docrel::Result<bool> {
    let t = TestDb::new(&format!("moves_inverse_back_{seed}")).await?;
    stored::set_lease_for(&t.db, LEASE);
    let name = t.db.name().to_owned();
    let seeded = old_version_process(&name, "seed", seed).output().expect("the old version seeds");
    assert!(seeded.status.success(), "{}", String::from_utf8_lossy(&seeded.stderr));
    // The new version starts: declaring the array one-way under a stored
    // two-way is no conflict; the diff says what a retirement does.
    docrel::schema::publish(&t.db).await?;
    // As a process starting now reads it at its first write (the test's
    // database read the empty schema when it was made, within a lease).
    stored::obey(&t.db).await?;
    let diff = stored::diff(&stored::load(&t.db).await?, &stored::program());
    assert!(diff.conflicts.is_empty() && diff.inverses.is_empty() && diff.one_way.len() == 1, "{diff:?}");
    let text = diff.to_text();
    assert!(text.contains("`mi_students.courses` becomes one-way: `mi_courses.students` is no longer kept"), "{text}");

    let (mut n, mut model) = (Seeded(seed * 7 + 3), model_of(&t.db, "new").await?);
    let old = old_version_process(&name, "write", seed).stdout(std::process::Stdio::piped()).spawn();
    let old = old.expect("the old version writes");
    let quiet = Arc::new(AtomicBool::new(false));
    let faulting = faulted.then(|| tokio::spawn(faults(name.clone(), seed, quiet.clone(), "mi-janitor")));
    let ran = async {
        let db = client(&name, if faulted { &name } else { "mi-new" }).await?.database(&name);
        stored::set_lease_for(&db, LEASE);
        let (db2, refusing) = (db.clone(), faulted);
        let refused = tokio::spawn(async move { refused_while_the_old_version_runs(&db2, refusing).await });
        let writes = writing_while(&db, &mut n, &mut model, faulted, &refused).await?;
        refused.await.expect("the refused retirement ran")?;
        Ok::<_, Error>((db, writes))
    }
    .await;

    // The old version stops (whatever happened above); every link is on
    // both sides, and each version's students hold what it last wrote.
    let stopped = async {
        let janitor = client(&name, "mi-janitor").await?.database(&name);
        janitor.collection::<BsonDoc>(STOP).insert_one(doc! {}).await.map_err(err).map(drop)
    }
    .await;
    let out = old.wait_with_output().expect("the old version ends");
    let (db, mut writes) = ran?;
    stopped?;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let old_model = printed(&String::from_utf8_lossy(&out.stdout));
    assert!(old_model.len() >= 4, "the old version printed its students: {old_model:?}");
    let mut both = model.clone();
    both.extend(old_model.clone());
    quiet.store(true, Ordering::SeqCst);
    let set = match faulting {
        Some(f) => f.await.expect("the fail points ran")?,
        None => 0,
    };
    settled(&t.db).await;
    if let Err(pairs) = assert_two_way(&t.db, &both).await? {
        explain(&t, &pairs, false).await?;
        if index_lost(&t.db, &pairs).await? {
            return Ok(false);
        }
        panic!("seed {seed}: {} link(s) on one side only before the retirement: {pairs:?}", pairs.len());
    }

    // Its row ages two leases; the retirement runs while the new version
    // writes.
    tokio::time::sleep(LEASE * 2 + Duration::from_millis(100)).await;
    let quiet = Arc::new(AtomicBool::new(false));
    let faulting = faulted.then(|| tokio::spawn(faults(name.clone(), seed + 1, quiet.clone(), "mi-janitor")));
    let retiring = tokio::spawn(retire(db.clone(), 1 + n.below(2), faulted));
    writes += writing_while(&db, &mut n, &mut model, faulted, &retiring).await?;
    quiet.store(true, Ordering::SeqCst);
    let set = set
        + match faulting {
            Some(f) => f.await.expect("the fail points ran")?,
            None => 0,
        };
    retiring.await.expect("the retirement ran")?;
    settled(&t.db).await;
    settled(&db).await;
    for _ in 0..20 {
        if let Err(Unsure(_, e)) = one_way_write(&db, (&mut n, "new"), &mut model).await {
            return Err(e);
        }
    }
    println!("seed {seed}{}: {writes} new-version writes ({set} fail points)", if faulted { " faulted" } else { "" });
    assert_one_way(&t.db, &model, &old_model).await?;
    Ok(true)
}

/// Waits until `db`'s client reaches the server again: a fail point's
/// `ShutdownInProgress` leaves it without a server until a heartbeat.
async fn settled(db: &docrel::mongodb::Database) {
    for _ in 0..100 {
        if db.run_command(doc! {"ping": 1}).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// After the retirement: the stored schema is one-way, nothing is listed
/// or leased, no course holds `students`, and each version's students hold
/// what it last wrote.
async fn assert_one_way(db: &docrel::mongodb::Database, new: &Model, old: &Model) -> docrel::Result<()> {
    let types = stored::load(db).await?;
    let students = types.iter().find(|t| t.collection == "mi_students").expect("stored");
    let courses = types.iter().find(|t| t.collection == "mi_courses").expect("stored");
    let array = students.relations.iter().find(|r| r.field == "courses").expect("the array");
    assert_eq!(array.inverse, None, "the array is one-way");
    assert!(!courses.relations.iter().any(|r| r.field == "students"), "{courses:?}");
    assert!(stored::load_retiring(db).await?.is_empty() && stored::load_moves(db).await?.is_empty());
    let schema = db.collection::<BsonDoc>(stored::SCHEMA_COLLECTION);
    assert_eq!(schema.count_documents(doc! {"_id": stored::MOVES_ID}).await.map_err(err)?, 0);
    let leases = db.collection::<BsonDoc>(stored::LEASES_COLLECTION);
    assert_eq!(leases.count_documents(doc! {}).await.map_err(err)?, 0, "no lease row is kept");
    for c in raw(db, "mi_courses").await? {
        assert!(!c.contains_key("students") && c.get_str("title").is_ok(), "dropped, title kept: {c}");
    }
    let mut expected = new.clone();
    expected.extend(old.iter().map(|(k, v)| (*k, v.clone())));
    let stored_students = raw(db, "mi_students").await?;
    for (id, wanted) in &expected {
        let found = stored_students.iter().find(|s| s.get_object_id("_id").ok() == Some(*id));
        assert_eq!(found.map(|s| ids(s, "courses")).as_ref(), wanted.as_ref(), "student {id}");
    }
    let after = stored::diff(&stored::load(db).await?, &stored::program());
    assert!(after.one_way.is_empty(), "{}", after.to_text());
    let again = make_one_way(db, &stored::program(), true, LEASE, || false, |_| {}).await?;
    assert!(again.is_empty(), "a second run has nothing to do: {again:?}");
    Ok(())
}

#[tokio::test]
async fn a_two_way_array_becomes_one_way_once_the_old_version_is_gone() -> docrel::Result<()> {
    new_version();
    let runs = seeds(SEEDS_VARIABLE, "1").into_iter().map(|s| (s, false));
    for (seed, faulted) in runs.chain(seeds(FAULT_SEEDS_VARIABLE, "2").into_iter().map(|s| (s, true))) {
        if !one_seed(seed, faulted).await? {
            println!("@server seed {seed}: the embedded server's index lost a key; running it again");
            assert!(one_seed(seed, faulted).await?, "seed {seed}: the server lost an index key twice");
        }
    }
    Ok(())
}

/// From the command line: `schema diff` says what a retirement does,
/// `schema retire --drop-old` makes the array one-way with no old version
/// running, and run again it has nothing to retire.
#[tokio::test]
async fn the_command_line_makes_the_array_one_way() -> docrel::Result<()> {
    new_version();
    let t = TestDb::new("moves_inverse_back_cli").await?;
    let seeded = old_version_process(t.db.name(), "seed", 1).output().expect("the old version seeds");
    assert!(seeded.status.success(), "{}", String::from_utf8_lossy(&seeded.stderr));
    let file = std::env::temp_dir().join(format!("docrel_mib_{}.json", std::process::id()));
    std::fs::write(&file, docrel::schema::export()).expect("export written");
    let path = file.to_str().expect("a UTF-8 path");
    let (exit, out, err) = admin(&t.db, &["schema", "diff", "--file", path]).await;
    assert_eq!(exit, Exit::Found, "{err}");
    assert!(out.contains("inverse: `mi_students.courses` becomes one-way: `mi_courses.students` is no longer kept"));
    let linked = raw(&t.db, "mi_courses").await?.iter().map(|c| ids(c, "students").len()).sum::<usize>();
    assert!(linked > 0, "the seed linked courses back");
    let holding = raw(&t.db, "mi_courses").await?.iter().filter(|c| !ids(c, "students").is_empty()).count();
    let counted = format!("inverse count: `mi_courses.students`: {holding} document(s) hold {linked} id(s), ");
    assert!(out.contains(&counted), "{counted}\n{out}");
    let retire = ["schema", "retire", "--file", path, "--drop-old", "--lease", "0.05", "--json"];
    let (exit, out, err) = admin(&t.db, &retire).await;
    assert_eq!(exit, Exit::Ok, "{err}");
    let reports: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(reports[0]["id"], "inverse:mi_courses.students", "{out}");
    assert_eq!((reports[0]["complete"].as_bool(), reports[0]["dropped"].as_u64()), (Some(true), Some(COURSES as u64)));
    for c in raw(&t.db, "mi_courses").await? {
        assert!(!c.contains_key("students"), "{c}");
    }
    let (exit, out, _) = admin(&t.db, &["schema", "status"]).await;
    assert_eq!((exit, out.contains("no move in progress")), (Exit::Ok, true), "{out}");
    let (exit, _, err) = admin(&t.db, &retire).await;
    assert_ne!(exit, Exit::Ok);
    assert!(err.contains("makes no two-way array one-way; nothing to retire"), "{err}");
    let _ = std::fs::remove_file(&file);
    Ok(())
}
