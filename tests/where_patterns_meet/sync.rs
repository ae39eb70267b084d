//! The deferred sync worker never stalls on one event, and version records ahead of their source (issue 27 Build 3 and item 9).

use crate::raw;
use docrel::admin::{run, Console, Exit};
use docrel::bson::{doc, oid::ObjectId, Bson, DateTime, Document as BsonDoc};
use docrel::denormalize::SyncWorker;
use docrel::testing::TestDb;
use docrel::{Document, View};
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// Where the worker keeps the events it could not apply, read raw.
const LETTERS: &str = "_docrel_dead_letters";
const WAIT: Duration = Duration::from_secs(30);

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "sync_writers")]
struct Writer {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "sync_novels")]
struct Novel {
    #[serde(rename = "_id")]
    id: ObjectId,
    title: String,
    #[reference(to = Writer)]
    writer: ObjectId,
    #[denormalize(from = Writer::name, via = writer)]
    writer_name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "sync_threads")]
struct Thread {
    #[serde(rename = "_id")]
    id: i32,
    #[embed(max = 3, subset_of = Reply, sort = "-n", key = n, max_bytes = 200)]
    latest: Vec<ReplySummary>,
}

#[derive(View, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[view(of = Reply)]
struct ReplySummary {
    n: i32,
    text: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "sync_replies")]
struct Reply {
    #[serde(rename = "_id")]
    id: ObjectId,
    n: i32,
    #[parent_ref(to = Thread)]
    thread: i32,
    text: String,
}

/// A worker running in a task, and a way to stop it.
pub(crate) struct Running {
    pub(crate) task: tokio::task::JoinHandle<docrel::Result<()>>,
    stop: oneshot::Sender<()>,
    pub(crate) ready: mpsc::UnboundedReceiver<()>,
}

pub(crate) fn start(worker: SyncWorker) -> Running {
    let (ready_tx, ready) = mpsc::unbounded_channel();
    let (stop, stopped) = oneshot::channel::<()>();
    let worker = worker.on_ready(move || {
        let _ = ready_tx.send(());
    });
    let task = tokio::spawn(async move {
        let until = async {
            let _ = stopped.await;
        };
        worker.run_until(until, |_| {}).await
    });
    Running { task, stop, ready }
}

impl Running {
    pub(crate) async fn ready(&mut self) {
        tokio::time::timeout(WAIT, self.ready.recv()).await.expect("the worker opens its stream").expect("running");
    }

    /// Stops it gracefully: it must still be running, and end with `Ok`.
    pub(crate) async fn stop(self) -> docrel::Result<()> {
        assert!(!self.task.is_finished(), "the worker stopped on its own: {:?}", self.task.await);
        let _ = self.stop.send(());
        tokio::time::timeout(WAIT, self.task).await.expect("the worker stops promptly").expect("no panic")
    }
}

/// Polls `check` until it holds, failing after [`WAIT`] (and saying how the
/// worker ended, when it did).
async fn eventually<F, Fut>(what: &str, w: &mut Running, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + WAIT;
    while !check().await {
        if w.task.is_finished() {
            let ended = (&mut w.task).await;
            panic!("never happened: {what}; the worker ended with {ended:?}");
        }
        assert!(Instant::now() < deadline, "never happened: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Runs `admin --db <the test's database> args..`: its exit and output.
async fn admin(t: &TestDb, args: &[&str]) -> (Exit, String) {
    let mut console = Console::captured();
    let mut full = vec!["admin", "--db", t.db.name()];
    full.extend_from_slice(args);
    let exit = run(full, &mut console, std::future::pending()).await;
    (exit, format!("{}{}", console.output(), console.errors()))
}

async fn letters(t: &TestDb) -> Vec<BsonDoc> {
    use futures::TryStreamExt;
    t.db.collection::<BsonDoc>(LETTERS).find(doc! {}).await.expect("find").try_collect().await.expect("letters")
}

async fn writer_name(t: &TestDb, novel: ObjectId) -> String {
    raw(t, "sync_novels", novel).await.expect("stored").get_str("writer_name").expect("a copy").to_owned()
}

/// Two writers, a novel of each holding a copy of its writer's name.
async fn shelf(t: &TestDb) -> docrel::Result<[(Writer, Novel); 2]> {
    let mut out = Vec::new();
    for name in ["Ursula", "Octavia"] {
        let writer = Writer { id: ObjectId::new(), name: name.into() };
        Writer::repo(&t.db).insert(&writer).await?;
        let novel =
            Novel { id: ObjectId::new(), title: format!("by {name}"), writer: writer.id, writer_name: String::new() };
        Novel::repo(&t.db).insert(&novel).await?;
        assert_eq!(writer_name(t, novel.id).await, name);
        out.push((writer, novel));
    }
    Ok(out.try_into().expect("two"))
}

/// Novels refuse a writer's name over 12 characters: a fan-out of a longer
/// one fails for good (121 DocumentValidationFailure), whatever the retries.
async fn validate_names(t: &TestDb, on: bool) {
    let validator = if on {
        doc! {"$jsonSchema": {"properties": {"writer_name": {"bsonType": "string", "maxLength": 12}}}}
    } else {
        doc! {}
    };
    t.db.run_command(doc! {"collMod": "sync_novels", "validator": validator}).await.expect("collMod");
}

/// Build 3: an event the worker cannot apply (its fan-out is refused by the
/// holders' validator) is recorded as a dead letter with its reason, and
/// the worker goes on: the next rename still reaches its copy. The admin
/// tool lists it in `verify` (a problem, exit 1); `repair` leaves it while
/// the cause stands, and once it is fixed re-applies the fan-out and
/// removes the letter. Before, the worker ended with the error, and every
/// restart replayed the event and ended again: no copy synced any more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_event_becomes_a_dead_letter_and_the_worker_goes_on() -> docrel::Result<()> {
    let t = TestDb::new("sync_poison").await?;
    let [(ursula, first), (octavia, second)] = shelf(&t).await?;
    validate_names(&t, true).await;
    let mut w = start(SyncWorker::new(&t.db, "poison"));
    w.ready().await;
    let writers = Writer::repo(&t.db).deferred_fan_out();

    let long = "Ursula Kroeber Le Guin";
    writers.update_by_id(&ursula.id, Writer::fields().name.set(long.into())).await?;
    writers.update_by_id(&octavia.id, Writer::fields().name.set("O. E. Butler".into())).await?;
    eventually("the rename after the poison event reaches its copy", &mut w, || async {
        writer_name(&t, second.id).await == "O. E. Butler"
    })
    .await;
    assert_eq!(writer_name(&t, first.id).await, "Ursula", "the refused copy is unchanged");

    // The letter, as stored: which worker, what it could not apply, and why.
    let stored = letters(&t).await;
    assert_eq!(stored.len(), 1, "{stored:?}");
    let letter = &stored[0];
    assert_eq!(letter.get_str("worker").unwrap(), "poison");
    assert_eq!(letter.get_str("collection").unwrap(), "sync_writers");
    assert_eq!(letter.get("document"), Some(&Bson::ObjectId(ursula.id)));
    assert_eq!(letter.get_str("operation").unwrap(), "update");
    let reason = letter.get_str("reason").unwrap();
    assert!(reason.contains("sync_novels") && reason.contains("validation"), "{reason}");
    assert!(letter.get_i32("attempts").unwrap() >= 1);
    assert!(letter.get_datetime("at").is_ok() && letter.get_document("token").is_ok(), "{letter}");
    w.stop().await?;

    // `verify` lists it and counts it as a problem.
    let (exit, out) = admin(&t, &["verify"]).await;
    assert_eq!(exit, Exit::Found, "{out}");
    let line = out.lines().find(|l| l.starts_with("sync")).unwrap_or_else(|| panic!("no sync job:\n{out}"));
    assert!(line.contains("found    1"), "{line}\n{out}");
    assert!(out.contains("sync_writers") && out.contains(&ursula.id.to_hex()) && out.contains("validation"), "{out}");
    // Limited to a collection: the letters of that collection only.
    let (exit, out) = admin(&t, &["verify", "sync_replies"]).await;
    assert_eq!(exit, Exit::Ok, "{out}");
    assert!(out.lines().any(|l| l.starts_with("sync ")), "{out}");

    // While the cause stands, re-applying it fails the same way: the
    // letter stays, with the new failure in the report. The admin
    // `repair` counts the refused copy as one it cannot fix and goes on.
    let report = docrel::check::dead_letters().repair(&t.db).run().await?;
    assert_eq!((report.dead_letters, report.fixed, report.unfixable), (1, 0, 1), "{report:?}");
    assert!(report.problems[0].contains("re-applying it failed") && report.problems[0].contains("validation"));
    let (exit, out) = admin(&t, &["repair"]).await;
    assert_eq!(exit, Exit::Found, "{out}");
    assert!(out.contains("validation"), "{out}");
    assert_eq!(letters(&t).await.len(), 1);
    assert_eq!(writer_name(&t, first.id).await, "Ursula");

    // The cause fixed, repair re-applies the fan-out and clears the letter.
    validate_names(&t, false).await;
    let (exit, out) = admin(&t, &["repair"]).await;
    assert_eq!(exit, Exit::Ok, "{out}");
    assert_eq!(writer_name(&t, first.id).await, long);
    assert!(letters(&t).await.is_empty());
    let (exit, out) = admin(&t, &["verify"]).await;
    assert_eq!(exit, Exit::Ok, "{out}");
    Ok(())
}

/// Transient errors (here WriteConflict, twice) are retried, not dead
/// letters: the copy follows and nothing is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transient_error_is_retried_not_dead_lettered() -> docrel::Result<()> {
    // The fail point is the server's: one test of this binary holds it at a time.
    let _alone = crate::leftovers::FAIL_POINTS.lock().await;
    let t = TestDb::new("sync_transient").await?;
    let [(ursula, first), _] = shelf(&t).await?;
    let mut w = start(SyncWorker::new(&t.db, "transient").checkpoint_every(Duration::from_secs(3600)));
    w.ready().await;
    // The worker's fan-out is an `update`; the source write below is not.
    t.client
        .database("admin")
        .run_command(doc! {
            "configureFailPoint": "failCommand",
            "mode": {"times": 2},
            "data": {"failCommands": ["update"], "errorCode": 112, "appName": t.db.name()},
        })
        .await
        .expect("fail point");
    t.db.collection::<BsonDoc>("sync_writers")
        .find_one_and_update(doc! {"_id": ursula.id}, doc! {"$set": {"name": "U. K."}, "$inc": {"_docrel.v": 1_i64}})
        .await
        .expect("raw rename");
    eventually("the rename reaches its copy", &mut w, || async { writer_name(&t, first.id).await == "U. K." }).await;
    t.client
        .database("admin")
        .run_command(doc! {"configureFailPoint": "failCommand", "mode": "off"})
        .await
        .expect("fail point off");
    assert!(letters(&t).await.is_empty());
    w.stop().await
}

/// Item 1's poison event: a reply edited outside docrel so that its
/// summary exceeds `max_bytes` is left out of its thread's subset, and the
/// event is a dead letter saying so; the edit of another thread still syncs; once the
/// reply is short again, repair rebuilds the subset and clears the letter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_summary_is_a_dead_letter_and_other_subsets_follow() -> docrel::Result<()> {
    let t = TestDb::new("sync_oversize").await?;
    let replies = Reply::repo(&t.db);
    let mut ids = Vec::new();
    for thread in [1, 2] {
        Thread::repo(&t.db).insert(&Thread { id: thread, latest: vec![] }).await?;
        let reply = Reply { id: ObjectId::new(), n: thread, thread, text: "short".into() };
        replies.insert(&reply).await?;
        ids.push(reply.id);
    }
    let mut w = start(SyncWorker::new(&t.db, "oversize"));
    w.ready().await;
    let coll = t.db.collection::<BsonDoc>("sync_replies");
    let big = "x".repeat(400);
    coll.update_one(doc! {"_id": ids[0]}, doc! {"$set": {"text": &big}}).await.expect("raw edit");
    coll.update_one(doc! {"_id": ids[1]}, doc! {"$set": {"text": "edited"}}).await.expect("raw edit");
    eventually("the other thread's subset follows", &mut w, || async { summary(&t, 2).await == "edited" }).await;
    let stored = letters(&t).await;
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(stored[0].get_str("collection").unwrap(), "sync_replies");
    assert_eq!(stored[0].get("document"), Some(&Bson::ObjectId(ids[0])));
    assert!(stored[0].get_str("reason").unwrap().contains("max_bytes"), "{}", stored[0]);
    // The oversized reply is left out of its thread's subset (not kept as a stale summary).
    let thread = raw(&t, "sync_threads", 1).await.expect("stored");
    assert!(thread.get_array("latest").unwrap().is_empty(), "{thread}");
    w.stop().await?;

    coll.update_one(doc! {"_id": ids[0]}, doc! {"$set": {"text": "shorter"}}).await.expect("raw edit");
    let (exit, out) = admin(&t, &["repair"]).await;
    assert_eq!(exit, Exit::Ok, "{out}");
    assert_eq!(summary(&t, 1).await, "shorter");
    assert!(letters(&t).await.is_empty());
    Ok(())
}

/// The text of the first summary in a thread's subset, as stored.
async fn summary(t: &TestDb, thread: i32) -> String {
    let stored = raw(t, "sync_threads", thread).await.expect("stored");
    stored.get_array("latest").unwrap()[0].as_document().unwrap().get_str("text").unwrap().to_owned()
}

// ---- item 9: a version record ahead of its source's version --------------------------------

/// The version a holder records for its copy of `writer`, and the
/// writer's own, as stored.
async fn versions(t: &TestDb, writer: ObjectId, novel: ObjectId) -> (i64, i64) {
    let source = raw(t, "sync_writers", writer).await.expect("stored");
    let holder = raw(t, "sync_novels", novel).await.expect("stored");
    let record = holder.get_document("_docrel").unwrap().get_document("copies").unwrap();
    let record = record.get_document("writer").unwrap().get_i64(writer.to_hex()).unwrap();
    (record, source.get_document("_docrel").unwrap().get_i64("v").unwrap())
}

/// Item 9: a source restored outside docrel (its version back below the
/// holder's record, other values) is stale to verify, and repair rewrote
/// nothing: the guard refused the older version. Now repair moves the
/// source's version past the record (only while the source is still what
/// it read) and rewrites the copy: verify is clean, the record is the
/// source's version, and the next rename reaches the copy. A late fan-out
/// of an older version still cannot overwrite it.
#[tokio::test]
async fn a_record_ahead_of_a_restored_source_is_repaired() -> docrel::Result<()> {
    let t = TestDb::new("sync_ahead").await?;
    let [(ursula, novel), _] = shelf(&t).await?;
    let writers = Writer::repo(&t.db);
    writers.update_by_id(&ursula.id, Writer::fields().name.set("renamed".into())).await?;
    let (record, version) = versions(&t, ursula.id, novel.id).await;
    assert_eq!(record, version);
    let old_event = event(&t, &raw(&t, "sync_writers", ursula.id).await.expect("stored"));

    // Restored from a backup taken before the rename: an older version.
    t.db.collection::<BsonDoc>("sync_writers")
        .replace_one(doc! {"_id": ursula.id}, doc! {"name": "restored", "_docrel": {"v": 5_i64}})
        .await
        .expect("raw restore");
    let report = docrel::check::copies::<Writer>().verify(&t.db).run().await?;
    assert_eq!(report.stale, 1, "{report:?}");
    let report = docrel::check::copies::<Writer>().repair(&t.db).run().await?;
    assert_eq!((report.stale, report.fixed), (1, 1), "{report:?}");
    assert_eq!(writer_name(&t, novel.id).await, "restored");
    let (record, version) = versions(&t, ursula.id, novel.id).await;
    assert_eq!(record, version, "the record is the source's version");
    assert!(version > 5);
    assert!(docrel::check::copies::<Writer>().verify(&t.db).run().await?.clean());

    // A fan-out of the version before the restore, applied late, is refused.
    SyncWorker::new(&t.db, "late").apply_event(&old_event).await?;
    assert_eq!(writer_name(&t, novel.id).await, "restored");

    writers.update_by_id(&ursula.id, Writer::fields().name.set("after".into())).await?;
    assert_eq!(writer_name(&t, novel.id).await, "after");
    Ok(())
}

/// Item 9, the other way: a source deleted and inserted again by a process
/// whose clock is behind starts below the records of its earlier life. The
/// values agree, so verify said nothing; but the next rename's fan-out was
/// refused and the copy stayed stale with `Ok`. Verify now reports the
/// record ahead, and repair moves the source past it.
#[tokio::test]
async fn a_record_ahead_of_a_reinserted_source_is_reported_and_repaired() -> docrel::Result<()> {
    let t = TestDb::new("sync_skew").await?;
    let [(ursula, novel), _] = shelf(&t).await?;
    let (record, _) = versions(&t, ursula.id, novel.id).await;
    let coll = t.db.collection::<BsonDoc>("sync_writers");
    coll.delete_one(doc! {"_id": ursula.id}).await.expect("raw delete");
    // Inserted again a minute behind.
    let behind = record - 60_000_000;
    coll.insert_one(doc! {"_id": ursula.id, "name": "Ursula", "_docrel": {"v": behind}}).await.expect("raw insert");

    let report = docrel::check::copies::<Writer>().verify(&t.db).run().await?;
    assert_eq!(report.stale, 1, "a record ahead of its source: {report:?}");
    let report = docrel::check::copies::<Writer>().repair(&t.db).run().await?;
    assert_eq!((report.stale, report.fixed), (1, 1), "{report:?}");
    let (record, version) = versions(&t, ursula.id, novel.id).await;
    assert_eq!(record, version);
    assert!(docrel::check::copies::<Writer>().verify(&t.db).run().await?.clean());

    Writer::repo(&t.db).update_by_id(&ursula.id, Writer::fields().name.set("after".into())).await?;
    assert_eq!(writer_name(&t, novel.id).await, "after");
    Ok(())
}

/// The change event of an update of `writer` (its name), as the worker
/// receives it.
fn event(t: &TestDb, writer: &BsonDoc) -> docrel::mongodb::change_stream::event::ChangeStreamEvent<BsonDoc> {
    docrel::bson_compat::from_document(doc! {
        "_id": {"_data": "00"},
        "operationType": "update",
        "ns": {"db": t.db.name(), "coll": "sync_writers"},
        "documentKey": {"_id": writer.get("_id").cloned().unwrap()},
        "updateDescription": {"updatedFields": {"name": writer.get("name").cloned().unwrap()}, "removedFields": []},
        "fullDocument": writer.clone(),
        "clusterTime": docrel::bson::Timestamp { time: 1, increment: 1 },
        "wallTime": DateTime::now(),
    })
    .expect("a change event")
}

/// A copy of `Novel`'s copy of its writer's name: the second level of a chain.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "sync_shelves")]
struct Shelf {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Novel)]
    novel: ObjectId,
    #[denormalize(from = Novel::writer_name, via = novel)]
    writer_name: String,
}

/// A copy of `Shelf`'s copy: the third level.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "sync_labels")]
struct Label {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Shelf)]
    shelf: ObjectId,
    #[denormalize(from = Shelf::writer_name, via = shelf)]
    writer_name: String,
}

/// Issue 38, reviews 3 and 14: a worker's retry wrote the first level of
/// a chain again at the same version, modified nothing there and skipped
/// the levels past it; a dead letter's repair rewrote one level of copies
/// only, so a copy further down (the label of a shelf) stayed stale until
/// some worker saw the shelf change. Now a retry follows every level, and
/// a letter's repair writes the whole chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_copy_of_a_copy_is_a_dead_letter_and_its_repair_writes_the_chain() -> docrel::Result<()> {
    let t = TestDb::new("sync_chain_letter").await?;
    let [(ursula, novel), _] = shelf(&t).await?;
    let shelf = Shelf { id: ObjectId::new(), novel: novel.id, writer_name: String::new() };
    Shelf::repo(&t.db).insert(&shelf).await?;
    let label = Label { id: ObjectId::new(), shelf: shelf.id, writer_name: String::new() };
    Label::repo(&t.db).insert(&label).await?;
    let shelf_name = |t: &TestDb| {
        let t = t.db.clone();
        async move {
            let found = t.collection::<BsonDoc>("sync_shelves").find_one(doc! {"_id": shelf.id}).await.expect("find");
            found.expect("stored").get_str("writer_name").expect("a copy").to_owned()
        }
    };
    assert_eq!(shelf_name(&t).await, "Ursula");
    let validator = doc! {"$jsonSchema": {"properties": {"writer_name": {"bsonType": "string", "maxLength": 12}}}};
    t.db.run_command(doc! {"collMod": "sync_shelves", "validator": validator}).await.expect("collMod");
    let mut w = start(SyncWorker::new(&t.db, "chain"));
    w.ready().await;

    let long = "Ursula Kroeber Le Guin";
    Writer::repo(&t.db).deferred_fan_out().update_by_id(&ursula.id, Writer::fields().name.set(long.into())).await?;
    eventually("the refused copy of a copy is a dead letter", &mut w, || async { letters(&t).await.len() == 1 }).await;
    w.stop().await?;
    assert_eq!(writer_name(&t, novel.id).await, long, "the first level is written");
    assert_eq!(shelf_name(&t).await, "Ursula", "the refused level is unchanged");
    let reason = letters(&t).await[0].get_str("reason").unwrap().to_owned();
    assert!(reason.contains("sync_shelves") && reason.contains("validation"), "{reason}");

    // The cause fixed, the letter's repair writes every level.
    t.db.run_command(doc! {"collMod": "sync_shelves", "validator": {}}).await.expect("collMod");
    let report = docrel::check::dead_letters().repair(&t.db).run().await?;
    assert_eq!((report.dead_letters, report.fixed, report.unfixable), (1, 1, 0), "{report:?}");
    assert_eq!(shelf_name(&t).await, long);
    let stored = raw(&t, "sync_labels", label.id).await.expect("stored");
    assert_eq!(stored.get_str("writer_name").unwrap(), long, "the level past the refused one");
    assert!(letters(&t).await.is_empty());
    Ok(())
}

/// Issue 38, review 9: an upsert that matched nothing inserts, then owes
/// what any insert owes. When that fails (here the reply's summary is over
/// its thread's `max_bytes`), the error said nothing was written, while
/// the reply was stored. Now it says the document is stored.
#[tokio::test]
async fn an_upsert_that_inserted_says_so_when_what_it_owes_fails() -> docrel::Result<()> {
    let t = TestDb::new("upsert_owed").await?;
    Thread::repo(&t.db).insert(&Thread { id: 1, latest: vec![] }).await?;
    let filter = Reply::fields().n.eq(7).and(Reply::fields().thread.eq(1));
    let update = Reply::fields().text.set("x".repeat(400));
    let err = Reply::repo(&t.db).upsert(filter, update).await.unwrap_err();
    let text = err.to_string();
    assert_eq!(err.kind(), "InsertUnfinished", "{text}");
    assert!(text.contains("inserted") && text.contains("stays stored") && !text.starts_with("nothing"), "{text}");
    let stored = t.db.collection::<BsonDoc>("sync_replies").find_one(doc! {"n": 7}).await.expect("find");
    assert!(stored.is_some(), "the reply is stored, as the error says");
    Ok(())
}
