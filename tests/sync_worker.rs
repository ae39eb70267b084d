//! The sync worker of deferred mode on the real server: its position kept
//! near the present while its sources are quiet, truncated arrays fanned
//! out, lost history reported or repaired, invalidates left behind, subsets
//! kept when children change, a ready signal and a graceful shutdown. Every
//! outcome is read back with the raw driver.

use docrel::bson::{doc, oid::ObjectId, Bson, DateTime, Document as BsonDoc};
use docrel::denormalize::{Applied, HistoryLost, SyncWorker};
use docrel::mongodb::change_stream::event::{ChangeStreamEvent, ResumeToken};
use docrel::testing::TestDb;
use docrel::{Document, Error, View};
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "authors")]
struct Author {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    tags: Vec<String>,
    born: i32,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "books")]
struct Book {
    #[serde(rename = "_id")]
    id: ObjectId,
    title: String,
    #[reference(to = Author)]
    author: ObjectId,
    #[denormalize(from = Author::name, via = author)]
    author_name: String,
    #[denormalize(from = Author::tags, via = author)]
    author_tags: Vec<String>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "posts")]
struct Post {
    #[serde(rename = "_id")]
    id: i32,
    title: String,
    #[embed(max = 3, subset_of = Comment, sort = "-at", key = n, max_bytes = 1000)]
    latest: Vec<CommentSummary>,
}

#[derive(View, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[view(of = Comment)]
struct CommentSummary {
    n: i32,
    text: String,
    at: DateTime,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "comments")]
struct Comment {
    #[serde(rename = "_id")]
    id: ObjectId,
    n: i32,
    #[parent_ref(to = Post)]
    post: i32,
    text: String,
    at: DateTime,
}

const WAIT: Duration = Duration::from_secs(30);

/// One author with tags and one book holding copies of its name and tags.
async fn shelf(t: &TestDb) -> docrel::Result<(Author, Book)> {
    let author = Author {
        id: ObjectId::new(),
        name: "Ursula".into(),
        tags: vec!["a".into(), "b".into(), "c".into()],
        born: 1929,
    };
    Author::repo(&t.db).insert(&author).await?;
    let book = Book {
        id: ObjectId::new(),
        title: "The Dispossessed".into(),
        author: author.id,
        author_name: "filled on insert".into(),
        author_tags: vec![],
    };
    Book::repo(&t.db).insert(&book).await?;
    assert_eq!(raw(t, "books", book.id).await.get_str("author_name").unwrap(), "Ursula");
    Ok((author, book))
}

fn comment(n: i32, post: i32) -> Comment {
    Comment {
        id: ObjectId::new(),
        n,
        post,
        text: format!("comment {n}"),
        at: DateTime::from_millis(1_550_448_000_000 + i64::from(n) * 60_000),
    }
}

/// Posts 1 and 2; comments 1..=4 on post 1 (its subset: 4, 3, 2).
async fn blog(t: &TestDb) -> docrel::Result<Vec<Comment>> {
    for id in [1, 2] {
        Post::repo(&t.db).insert(&Post { id, title: format!("post {id}"), latest: vec![] }).await?;
    }
    let comments: Vec<Comment> = (1..=4).map(|n| comment(n, 1)).collect();
    for c in &comments {
        Comment::repo(&t.db).insert(c).await?;
    }
    assert_eq!(latest(t, 1).await, [4, 3, 2]);
    Ok(comments)
}

async fn raw(t: &TestDb, coll: &str, id: impl Into<Bson>) -> BsonDoc {
    t.db.collection::<BsonDoc>(coll).find_one(doc! {"_id": id.into()}).await.unwrap().expect("stored")
}

/// The `n` of the summaries in a post's subset, as stored.
async fn latest(t: &TestDb, post: i32) -> Vec<i32> {
    raw(t, "posts", post)
        .await
        .get_array("latest")
        .unwrap()
        .iter()
        .map(|s| s.as_document().unwrap().get_i32("n").unwrap())
        .collect()
}

fn strings(d: &BsonDoc, field: &str) -> Vec<String> {
    d.get_array(field).unwrap().iter().map(|s| s.as_str().unwrap().to_owned()).collect()
}

/// Polls `check` until it holds, failing the test after [`WAIT`].
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + WAIT;
    while !check().await {
        assert!(Instant::now() < deadline, "never happened: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Held by each test that sets a fail point: the server keeps one
/// `failCommand` setting, so two tests setting theirs at once would
/// replace (or turn off) each other's.
static FAIL_POINTS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn fail_point(t: &TestDb, command: &str, code: i32) {
    t.client
        .database("admin")
        .run_command(doc! {
            "configureFailPoint": "failCommand",
            "mode": {"times": 1},
            "data": {"failCommands": [command], "errorCode": code, "appName": t.db.name()},
        })
        .await
        .expect("fail point");
}

async fn fail_point_off(t: &TestDb) {
    t.client
        .database("admin")
        .run_command(doc! {"configureFailPoint": "failCommand", "mode": "off"})
        .await
        .expect("fail point off");
}

/// A worker running in a task, with its ready signals, what it applied, and
/// a way to stop it gracefully.
struct Running {
    task: tokio::task::JoinHandle<docrel::Result<()>>,
    stop: oneshot::Sender<()>,
    ready: mpsc::UnboundedReceiver<()>,
    applied: mpsc::UnboundedReceiver<Applied>,
}

fn start(worker: SyncWorker) -> Running {
    let (ready_tx, ready) = mpsc::unbounded_channel();
    let (applied_tx, applied) = mpsc::unbounded_channel();
    let (stop, stopped) = oneshot::channel::<()>();
    let worker = worker.on_ready(move || {
        let _ = ready_tx.send(());
    });
    let task = tokio::spawn(async move {
        worker
            .run_until(
                async {
                    let _ = stopped.await;
                },
                move |a| drop(applied_tx.send(a.clone())),
            )
            .await
    });
    Running { task, stop, ready, applied }
}

impl Running {
    async fn ready(&mut self) {
        tokio::time::timeout(WAIT, self.ready.recv()).await.expect("the worker opens its stream").expect("running");
    }

    async fn applied(&mut self) -> Applied {
        tokio::time::timeout(WAIT, self.applied.recv()).await.expect("the worker applies a change").expect("running")
    }

    /// Stops it gracefully, returning what `run_until` returned.
    async fn stop(self) -> docrel::Result<()> {
        let _ = self.stop.send(());
        tokio::time::timeout(WAIT, self.task).await.expect("the worker stops promptly").expect("no panic")
    }

    /// Waits for it to end on its own.
    async fn ended(self) -> docrel::Result<()> {
        tokio::time::timeout(WAIT, self.task).await.expect("the worker ends").expect("no panic")
    }
}

async fn stored(t: &TestDb, name: &str) -> ResumeToken {
    SyncWorker::new(&t.db, name).stored_token().await.unwrap().expect("a stored token")
}

/// How many change events (other than the workers' own bookkeeping) a
/// stream resumed after `token` delivers at once.
async fn replayed_after(t: &TestDb, token: ResumeToken) -> usize {
    let mut stream =
        t.db.watch()
            .pipeline([doc! {"$match": {"ns.coll": {"$ne": docrel::denormalize::SYNC_COLLECTION}}}])
            .resume_after(token)
            .await
            .unwrap();
    let mut n = 0;
    while stream.next_if_any().await.unwrap().is_some() {
        n += 1;
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_source_keeps_its_resume_point_near_now() -> docrel::Result<()> {
    let t = TestDb::new("sync_quiet").await?;
    let (author, book) = shelf(&t).await?;
    let worker = || SyncWorker::new(&t.db, "quiet").checkpoint_every(Duration::from_millis(100));
    let mut w = start(worker());
    w.ready().await;
    let opened = stored(&t, "quiet").await;

    // Nothing the worker acts on: writes elsewhere, and a change of a field
    // of the source that nothing copies.
    for i in 0..3 {
        t.db.collection::<BsonDoc>("unrelated").insert_one(doc! {"i": i}).await.unwrap();
    }
    t.db.collection::<BsonDoc>("authors")
        .update_one(doc! {"_id": author.id}, doc! {"$set": {"born": 1930}})
        .await
        .unwrap();
    // The worker checkpoints as the quiet events arrive, so a position
    // that differs from the opening one may still lie before the last of
    // them: what must come is a position past all four.
    eventually("the position passes every quiet write", || async {
        replayed_after(&t, stored(&t, "quiet").await).await == 0
    })
    .await;
    let moved = stored(&t, "quiet").await;
    assert!(w.applied.try_recv().is_err(), "nothing was applied");
    w.stop().await?;

    // Stopping keeps a position past the quiet writes: resuming from it
    // replays none of them, where the opening position replays all four.
    assert_eq!(replayed_after(&t, stored(&t, "quiet").await).await, 0);
    assert!(replayed_after(&t, opened.clone()).await >= 4);
    assert_ne!(moved, opened);

    // A restart resumes from there and follows the next change.
    let mut w = start(worker());
    w.ready().await;
    Author::repo(&t.db).deferred_fan_out().update_by_id(&author.id, Author::fields().name.set("U. K.".into())).await?;
    let a = w.applied().await;
    assert_eq!((a.source, a.id.clone()), ("authors", Bson::ObjectId(author.id)));
    assert_eq!(raw(&t, "books", book.id).await.get_str("author_name").unwrap(), "U. K.");
    w.stop().await
}

#[tokio::test]
async fn a_truncated_array_is_fanned_out() -> docrel::Result<()> {
    // The embedded server reports a shrinking `$push`/`$slice` as an
    // updated field and a shrinking pipeline update as a replace, never as
    // `truncatedArrays` (nor does mongod for operator updates), so the
    // event a truncation produces elsewhere is built here and applied the
    // way the worker applies the events of its stream.
    let t = TestDb::new("sync_truncate").await?;
    let (author, book) = shelf(&t).await?;
    let authors = t.db.collection::<BsonDoc>("authors");
    authors
        .update_one(
            doc! {"_id": author.id},
            doc! {"$push": {"tags": {"$each": [], "$slice": 1}}, "$inc": {"_docrel.v": 1_i64}},
        )
        .await
        .unwrap();
    let now = raw(&t, "authors", author.id).await;
    assert_eq!(strings(&now, "tags"), ["a"]);
    let version = now.get_document("_docrel").unwrap().get("v").cloned().unwrap();
    let event = |truncated: Vec<BsonDoc>| -> ChangeStreamEvent<BsonDoc> {
        docrel::bson_compat::from_document(doc! {
            "_id": {"_data": "00"},
            "operationType": "update",
            "ns": {"db": t.db.name(), "coll": "authors"},
            "documentKey": {"_id": author.id},
            "updateDescription": {
                "updatedFields": {"_docrel.v": version.clone()},
                "removedFields": [],
                "truncatedArrays": truncated,
            },
            "fullDocument": now.clone(),
        })
        .expect("a change event")
    };
    let worker = SyncWorker::new(&t.db, "truncate");

    // Without the truncation the event touches nothing copied.
    assert_eq!(worker.apply_event(&event(vec![])).await?, None);
    assert_eq!(strings(&raw(&t, "books", book.id).await, "author_tags"), ["a", "b", "c"]);

    let applied = worker.apply_event(&event(vec![doc! {"field": "tags", "newSize": 1}])).await?;
    assert_eq!(applied.map(|a| (a.source, Bson::Int64(a.version))), Some(("authors", version.clone())));
    let stored = raw(&t, "books", book.id).await;
    assert_eq!(strings(&stored, "author_tags"), ["a"]);
    assert_eq!(stored.get_str("author_name").unwrap(), "Ursula");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_history_is_an_error_that_says_to_run_repair() -> docrel::Result<()> {
    let _alone = FAIL_POINTS.lock().await;
    let t = TestDb::new("sync_lost").await?;
    shelf(&t).await?;
    let mut w = start(SyncWorker::new(&t.db, "lost"));
    w.ready().await;
    w.stop().await?;
    let before = stored(&t, "lost").await;

    // Resuming is refused (286 ChangeStreamHistoryLost).
    fail_point(&t, "aggregate", 286).await;
    let err = SyncWorker::new(&t.db, "lost").run(|_| {}).await.expect_err("history lost");
    fail_point_off(&t).await;
    let Error::SyncHistoryLost { ref worker, ref sources, .. } = err else { panic!("{err}") };
    assert_eq!(worker, "lost");
    assert!(sources.contains("authors") && sources.contains("comments"), "{sources}");
    let message = err.to_string();
    assert!(message.contains("docrel::check::copies") && message.contains("RepairAndContinue"), "{message}");
    assert_eq!(stored(&t, "lost").await, before, "the lost position stays stored, so a restart reports it again");

    // The stream fails for good while followed (280 ChangeStreamFatalError).
    let mut w = start(SyncWorker::new(&t.db, "lost"));
    w.ready().await;
    fail_point(&t, "getMore", 280).await;
    let err = w.ended().await.expect_err("fatal");
    fail_point_off(&t).await;
    assert!(matches!(err, Error::SyncHistoryLost { .. }), "{err}");
    Ok(())
}

/// MongoDB 9.0 interrupts change streams at an election (11602,
/// InterruptedDueToReplStateChange), and a `getMore` failing so without the
/// label the driver resumes on ends the driver's stream. The worker opens
/// it again from where it was (its ready signal fires a second time) and
/// applies what came after: the copy follows, nothing is a dead letter,
/// and the worker stops gracefully afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_election_interrupting_the_stream_loses_nothing_and_records_no_dead_letter() -> docrel::Result<()> {
    let _alone = FAIL_POINTS.lock().await;
    let t = TestDb::new("sync_election").await?;
    let (author, book) = shelf(&t).await?;
    let mut w = start(SyncWorker::new(&t.db, "election"));
    w.ready().await;
    fail_point(&t, "getMore", 11602).await;
    w.ready().await;
    fail_point_off(&t).await;
    Author::repo(&t.db)
        .deferred_fan_out()
        .update_by_id(&author.id, Author::fields().name.set("Le Guin".into()))
        .await?;
    assert_eq!(w.applied().await.source, "authors");
    assert_eq!(raw(&t, "books", book.id).await.get_str("author_name").unwrap(), "Le Guin");
    let letters = t.db.collection::<BsonDoc>(docrel::denormalize::DEAD_LETTER_COLLECTION);
    assert_eq!(letters.count_documents(doc! {}).await.unwrap(), 0, "no dead letter");
    w.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repair_and_continue_fixes_stale_copies_and_subsets_then_follows_from_now() -> docrel::Result<()> {
    let _alone = FAIL_POINTS.lock().await;
    let t = TestDb::new("sync_heal").await?;
    let (author, book) = shelf(&t).await?;
    blog(&t).await?;
    let worker = || SyncWorker::new(&t.db, "heal").on_history_lost(HistoryLost::RepairAndContinue);
    let mut w = start(worker());
    w.ready().await;
    w.stop().await?;
    let lost = stored(&t, "heal").await;

    // Written while the worker was away, outside docrel: the copies and
    // the subset are stale, and the history of these writes is lost.
    t.db.collection::<BsonDoc>("authors")
        .update_one(doc! {"_id": author.id}, doc! {"$set": {"name": "by hand", "tags": ["z"]}})
        .await
        .unwrap();
    t.db.collection::<BsonDoc>("posts").update_one(doc! {"_id": 1}, doc! {"$set": {"latest": []}}).await.unwrap();
    fail_point(&t, "aggregate", 286).await;

    let mut w = start(worker());
    w.ready().await; // after the repair
    fail_point_off(&t).await;
    let stored_book = raw(&t, "books", book.id).await;
    assert_eq!(stored_book.get_str("author_name").unwrap(), "by hand");
    assert_eq!(strings(&stored_book, "author_tags"), ["z"]);
    assert_eq!(latest(&t, 1).await, [4, 3, 2]);
    assert_ne!(stored(&t, "heal").await, lost, "it goes on from now");

    // And it follows what comes next.
    Author::repo(&t.db).deferred_fan_out().update_by_id(&author.id, Author::fields().name.set("after".into())).await?;
    w.applied().await;
    assert_eq!(raw(&t, "books", book.id).await.get_str("author_name").unwrap(), "after");
    w.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_an_invalidate_the_worker_goes_on_after_it() -> docrel::Result<()> {
    let t = TestDb::new("sync_invalidate").await?;
    let mut w = start(SyncWorker::new(&t.db, "inv"));
    w.ready().await;

    // Dropping the database ends the stream with an invalidate: the worker
    // saves a position after it and opens a new stream from there.
    t.db.drop().await.unwrap();
    w.ready().await;
    let entry =
        t.db.collection::<BsonDoc>(docrel::denormalize::SYNC_COLLECTION).find_one(doc! {"_id": "inv"}).await.unwrap();
    assert_eq!(entry.and_then(|e| e.get_bool("start_after").ok()), Some(true));
    w.stop().await?;

    // A restart starts after the invalidate, once, and follows new writes.
    let mut w = start(SyncWorker::new(&t.db, "inv"));
    w.ready().await;
    let (author, book) = shelf(&t).await?;
    Author::repo(&t.db).deferred_fan_out().update_by_id(&author.id, Author::fields().name.set("again".into())).await?;
    eventually("the rename reaches the copy", || async {
        raw(&t, "books", book.id).await.get_str("author_name").unwrap() == "again"
    })
    .await;
    assert!(w.applied.try_recv().is_ok(), "the worker applied it");
    assert!(w.ready.try_recv().is_err(), "the stream was opened once: no loop on the invalidate");
    w.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deferred_edits_of_children_reach_their_parents_subsets() -> docrel::Result<()> {
    let t = TestDb::new("sync_subset").await?;
    let comments = blog(&t).await?;
    // Pre-images let the worker find the parent of a deleted child.
    t.db.run_command(doc! {"collMod": "comments", "changeStreamPreAndPostImages": {"enabled": true}})
        .await
        .expect("pre-images");
    let mut w = start(SyncWorker::new(&t.db, "subsets"));
    w.ready().await;
    let deferred = Comment::repo(&t.db).deferred_fan_out();

    // An edit of a summarized field: rewritten in place.
    deferred.update_by_id(&comments[3].id, Comment::fields().text.set("edited".into())).await?;
    eventually("the edit reaches the subset", || async {
        let post = raw(&t, "posts", 1).await;
        post.get_array("latest").unwrap()[0].as_document().unwrap().get_str("text").unwrap() == "edited"
    })
    .await;

    // A move to another parent: out of one subset, into the other.
    deferred.update_by_id(&comments[2].id, Comment::fields().post.set(2)).await?;
    eventually("the move reaches both subsets", || async {
        latest(&t, 1).await == [4, 2, 1] && latest(&t, 2).await == [3]
    })
    .await;

    // A delete outside docrel: the subset is rebuilt without it.
    t.db.collection::<BsonDoc>("comments").delete_one(doc! {"_id": comments[3].id}).await.unwrap();
    eventually("the delete reaches the subset", || async { latest(&t, 1).await == [2, 1] }).await;
    let post = raw(&t, "posts", 1).await;
    let first = post.get_array("latest").unwrap()[0].as_document().unwrap().clone();
    assert_eq!(first, doc! {"n": 2, "text": "comment 2", "at": comments[1].at});
    w.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_worker_saved_its_position_and_replays_nothing() -> docrel::Result<()> {
    let t = TestDb::new("sync_stop").await?;
    let (author, book) = shelf(&t).await?;
    // No periodic saves: only the idle and shutdown ones.
    let worker = || SyncWorker::new(&t.db, "graceful").checkpoint_every(Duration::from_secs(3600));
    let deferred = Author::repo(&t.db).deferred_fan_out();
    let mut w = start(worker());
    w.ready().await;
    deferred.update_by_id(&author.id, Author::fields().name.set("first".into())).await?;
    let first = w.applied().await;
    w.stop().await?;
    assert_eq!(raw(&t, "books", book.id).await.get_str("author_name").unwrap(), "first");

    let mut w = start(worker());
    w.ready().await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(w.applied.try_recv().is_err(), "nothing before the stop is replayed");
    deferred.update_by_id(&author.id, Author::fields().name.set("second".into())).await?;
    let second = w.applied().await;
    assert!(second.version > first.version, "{first:?} then {second:?}");
    assert_eq!(raw(&t, "books", book.id).await.get_str("author_name").unwrap(), "second");
    w.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_stopped_while_it_retries_an_event_replays_it_at_the_next_start() -> docrel::Result<()> {
    let _alone = FAIL_POINTS.lock().await;
    let t = TestDb::new("sync_retry_stop").await?;
    let (author, book) = shelf(&t).await?;
    let worker = || SyncWorker::new(&t.db, "retrying").checkpoint_every(Duration::from_secs(3600));
    let mut w = start(worker());
    w.ready().await;
    // Every `update` fails as transient (a write conflict): the fan-out is
    // retried, never given up. The rename itself is a `findAndModify`,
    // outside docrel.
    t.client
        .database("admin")
        .run_command(doc! {
            "configureFailPoint": "failCommand",
            "mode": "alwaysOn",
            "data": {"failCommands": ["update"], "errorCode": 112, "appName": t.db.name()},
        })
        .await
        .expect("fail point");
    t.db.collection::<BsonDoc>("authors")
        .find_one_and_update(doc! {"_id": author.id}, doc! {"$set": {"name": "retried"}, "$inc": {"_docrel.v": 1_i64}})
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!w.task.is_finished(), "a transient error does not end the worker");
    w.stop().await?;
    fail_point_off(&t).await;
    assert_eq!(raw(&t, "books", book.id).await.get_str("author_name").unwrap(), "Ursula");
    let letters = t.db.collection::<BsonDoc>(docrel::denormalize::DEAD_LETTER_COLLECTION);
    assert_eq!(letters.count_documents(doc! {}).await.unwrap(), 0, "a transient error is no dead letter");

    // Stopped before the event was applied, it replays it.
    let mut w = start(worker());
    w.ready().await;
    eventually("the replayed rename reaches the copy", || async {
        raw(&t, "books", book.id).await.get_str("author_name").unwrap() == "retried"
    })
    .await;
    w.stop().await
}

/// Issue 38, review 5: a running worker watched the collections fixed at
/// its start, so one that an online change made a source was never
/// followed. Another program publishes shelf labels copying each book's
/// title; within a lease the running worker follows books too, and a
/// deferred rename of a book reaches its label.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_worker_follows_a_collection_an_online_change_makes_a_source() -> docrel::Result<()> {
    let t = TestDb::new("sync_new_source").await?;
    docrel::schema::set_lease_for(&t.db, Duration::from_millis(200));
    let (_, book) = shelf(&t).await?;
    let mut w = start(SyncWorker::new(&t.db, "new_source"));
    w.ready().await;

    let label = ObjectId::new();
    let labels = t.db.collection::<BsonDoc>("sw_labels");
    labels.insert_one(doc! {"_id": label, "book": book.id, "title": "The Dispossessed"}).await.expect("insert");
    let stored: docrel::schema::stored::StoredType = serde_json::from_value(serde_json::json!({
        "collection": "sw_labels", "rust_name": "Label", "module": "shelves",
        "fields": [
            {"rust": "id", "bson": "_id", "rust_type": "ObjectId", "kind": "plain", "target": null},
            {"rust": "book", "bson": "book", "rust_type": "ObjectId", "kind": "one", "target": "books"},
            {"rust": "title", "bson": "title", "rust_type": "String", "kind": "plain", "target": null}
        ],
        "relations": [{"field": "book", "rust_field": "book", "kind": {"pattern": "ref_one", "optional": false},
            "target": "books", "target_type": "Book", "inverse": null, "on_delete": "nothing", "order": [],
            "copies": [], "subset": null, "bucket": null, "warn_above": null}],
        "indexes": [],
        "copies": [{"field": "title", "source": "books", "source_type": "Book", "source_field": "title", "via": "book"}],
        "shard_key": []
    }))
    .expect("a stored type");
    docrel::schema::stored::publish_types(&t.db, &[stored]).await?;
    // A lease for the worker to see it; then a rename the worker fans out.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    Book::repo(&t.db).deferred_fan_out().update_by_id(&book.id, Book::fields().title.set("Anarres".into())).await?;
    eventually("the label's copy of the title follows the rename", || async {
        raw(&t, "sw_labels", label).await.get_str("title").ok() == Some("Anarres")
    })
    .await;
    w.stop().await
}
