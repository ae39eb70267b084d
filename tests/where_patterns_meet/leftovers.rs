//! The last open points of issue 27: bucket pages of a parent deleted and
//! inserted again with the same id (item 11's variant), an image that no
//! longer decodes into its type (item 15), the fill of a source inserted
//! behind its earlier life's records, a lost-history repair that fails for
//! good, and the linking back of more new documents than one page.

use crate::raw;
use crate::sync::start;
use docrel::bson::{doc, oid::ObjectId, Bson, Document as BsonDoc};
use docrel::denormalize::{HistoryLost, SyncWorker};
use docrel::testing::TestDb;
use docrel::{Document, Error, View};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A fail point configured on the server replaces the one before, so the
/// tests here and in `checker_found.rs` that set one run one at a time.
pub(crate) static FAIL_POINTS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Holds this test client's `command`s, `skip` of them let through first,
/// then one held for `ms`.
pub(crate) async fn hold(t: &TestDb, command: &str, skip: i32, ms: i32) {
    let fail_point = doc! {
        "configureFailPoint": "failCommand",
        "mode": {"skip": skip, "times": 1},
        "data": {"failCommands": [command], "blockConnection": true, "blockTimeMS": ms, "appName": t.db.name()},
    };
    t.client.database("admin").run_command(fail_point).await.expect("fail point");
}

pub(crate) async fn fail_point_off(t: &TestDb) {
    let off = doc! {"configureFailPoint": "failCommand", "mode": "off"};
    t.client.database("admin").run_command(off).await.expect("fail point off");
}

// ---- item 11's variant: a parent deleted and inserted again with the same id -------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "lo_posts")]
struct LoPost {
    #[serde(rename = "_id")]
    id: i32,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct LoComment {
    text: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "lo_pages")]
struct LoPage {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = LoPost, on_delete = cascade)]
    post: i32,
    page: i32,
    count: i32,
    #[bucket(size = 2)]
    comments: Vec<LoComment>,
}

/// The pages of `post` as stored, in order: (page, count, texts).
async fn pages(t: &TestDb, post: i32) -> Vec<(i32, i32, Vec<String>)> {
    use futures::TryStreamExt;
    let stored: Vec<BsonDoc> =
        t.db.collection::<BsonDoc>("lo_pages")
            .find(doc! {"post": post})
            .sort(doc! {"page": 1})
            .await
            .expect("find")
            .try_collect()
            .await
            .expect("pages");
    let texts = |p: &BsonDoc| -> Vec<String> {
        let comments = p.get_array("comments").unwrap().iter();
        comments.map(|c| c.as_document().unwrap().get_str("text").unwrap().to_owned()).collect()
    };
    stored.iter().map(|p| (p.get_i32("page").unwrap(), p.get_i32("count").unwrap(), texts(p))).collect()
}

/// I4 of a parent that is there: pages 1..=n, each `count` its array's
/// length and at most the bucket's size.
fn assert_contiguous(stored: &[(i32, i32, Vec<String>)], what: &str) {
    for (i, (page, count, texts)) in stored.iter().enumerate() {
        assert_eq!(*page, i as i32 + 1, "{what}: pages {stored:?}");
        assert_eq!(*count as usize, texts.len(), "{what}: pages {stored:?}");
        assert!(*count <= 2, "{what}: pages {stored:?}");
    }
}

fn comment(text: &str) -> LoComment {
    LoComment { text: text.into() }
}

/// An append that found page 1 full opens page 2; meanwhile the post is
/// deleted (its cascade removes page 1) and inserted again with the same
/// id. The new post must not start at page 2. Before, the append's check
/// saw a post and kept page 2: the new post had page 2 and no page 1, and
/// every later append went on from page 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_opened_across_a_reinsert_of_its_parent_leaves_no_gap() -> docrel::Result<()> {
    let _alone = FAIL_POINTS.lock().await;
    let t = TestDb::new("lo_gap").await?;
    LoPage::repo(&t.db).ensure_indexes().await?;
    LoPost::repo(&t.db).insert(&LoPost { id: 1 }).await?;
    // Page 1 full, written raw so this process remembers no open page.
    t.db.collection::<BsonDoc>("lo_pages")
        .insert_one(doc! {"post": 1, "page": 1, "count": 2, "comments": [{"text": "a"}, {"text": "b"}]})
        .await
        .expect("raw page");
    // The append's first update (page 1, full) goes through; its second
    // (opening page 2) waits while the post goes and comes back.
    hold(&t, "update", 1, 900).await;
    let db = t.db.clone();
    let append = tokio::spawn(async move { LoPage::rels().comments.append(&db, &1, &comment("late")).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    LoPost::repo(&t.db).delete_by_id(&1).await?;
    LoPost::repo(&t.db).insert(&LoPost { id: 1 }).await?;
    let outcome = append.await.expect("the append ran");
    fail_point_off(&t).await;
    let stored = pages(&t, 1).await;
    match outcome {
        Ok(_) => assert_eq!(stored, [(1, 1, vec!["late".to_owned()])], "the append lands on the new post's page 1"),
        Err(Error::NotFound { .. }) => assert!(stored.is_empty(), "a refused append leaves nothing: {stored:?}"),
        Err(e) => panic!("the append failed with {e}"),
    }
    LoPage::rels().comments.append(&t.db, &1, &comment("next")).await?;
    assert_contiguous(&pages(&t, 1).await, "after the next append");
    Ok(())
}

/// An append to a post that is gone opens page 1 and, finding no post,
/// removes the post's pages; meanwhile the post is inserted again and
/// another append lands on that page. The second append returned `Ok`, so
/// its comment must stay. Before, the first append's clean-up removed
/// every page of the post, the second's comment with them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clean_up_of_a_refused_append_keeps_the_new_parents_pages() -> docrel::Result<()> {
    let _alone = FAIL_POINTS.lock().await;
    let t = TestDb::new("lo_cleanup").await?;
    LoPage::repo(&t.db).ensure_indexes().await?;
    let comments = LoPage::rels().comments;
    LoPost::repo(&t.db).insert(&LoPost { id: 2 }).await?;
    comments.append(&t.db, &2, &comment("first life")).await?;
    LoPost::repo(&t.db).delete_by_id(&2).await?;
    assert!(pages(&t, 2).await.is_empty());
    // The late append's clean-up (its first delete) waits.
    hold(&t, "delete", 0, 900).await;
    let db = t.db.clone();
    let late = tokio::spawn(async move { LoPage::rels().comments.append(&db, &2, &comment("late")).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    LoPost::repo(&t.db).insert(&LoPost { id: 2 }).await?;
    comments.append(&t.db, &2, &comment("second life")).await?;
    let late = late.await.expect("the append ran");
    fail_point_off(&t).await;
    let stored = pages(&t, 2).await;
    let texts: Vec<String> = stored.iter().flat_map(|p| p.2.clone()).collect();
    assert!(texts.contains(&"second life".to_owned()), "an append that returned Ok lost its comment: {stored:?}");
    match late {
        Ok(_) => assert!(texts.contains(&"late".to_owned()), "{stored:?}"),
        Err(Error::NotFound { .. }) => assert!(!texts.contains(&"late".to_owned()), "{stored:?}"),
        Err(e) => panic!("the late append failed with {e}"),
    }
    assert_contiguous(&stored, "after both appends");
    Ok(())
}

/// A post deleted while a comment is appended to it again right after it
/// is inserted again: the cascade of the delete reads the post's pages
/// after the post was deleted; a page of the new post must not be taken
/// with it. Before, the cascade deleted the new post's page with the
/// comment of an append that returned `Ok`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cascade_of_a_deleted_parent_keeps_the_new_parents_pages() -> docrel::Result<()> {
    let _alone = FAIL_POINTS.lock().await;
    let t = TestDb::new("lo_cascade").await?;
    LoPage::repo(&t.db).ensure_indexes().await?;
    let uri = std::env::var("MONGODB_URI").expect("MONGODB_URI");
    let other = docrel::mongodb::Client::with_uri_str(&uri).await.expect("a second client").database(t.db.name());
    LoPost::repo(&t.db).insert(&LoPost { id: 3 }).await?;
    LoPage::rels().comments.append(&t.db, &3, &comment("first life")).await?;
    // The delete's cascade reads the pages (its first find) late.
    hold(&t, "find", 0, 900).await;
    let db = t.db.clone();
    let delete = tokio::spawn(async move { LoPost::repo(&db).delete_by_id(&3).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    LoPost::repo(&other).insert(&LoPost { id: 3 }).await?;
    LoPage::rels().comments.append(&other, &3, &comment("second life")).await?;
    assert!(delete.await.expect("the delete ran")?);
    fail_point_off(&t).await;
    let stored = pages(&t, 3).await;
    let texts: Vec<String> = stored.iter().flat_map(|p| p.2.clone()).collect();
    assert!(texts.contains(&"second life".to_owned()), "an append that returned Ok lost its comment: {stored:?}");
    assert_contiguous(&stored, "after the delete");
    Ok(())
}

// ---- item 15: a stored document that no longer decodes into its type ---------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "lo_makers")]
struct LoMaker {
    #[serde(rename = "_id")]
    id: i32,
    name: String,
    founded: i32,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "lo_gadgets")]
struct LoGadget {
    #[serde(rename = "_id")]
    id: i32,
    #[reference(to = LoMaker)]
    maker: i32,
    #[denormalize(from = LoMaker::name, via = maker)]
    maker_name: String,
}

/// A maker stored with a field its type cannot read (written raw: a
/// string where `LoMaker` has an `i32`) is renamed through each update
/// that reads its image back. Each either returns `Ok` with the copy
/// rewritten, or an error saying the update was written and how to repair;
/// never `Ok` with the copy stale. The image docrel fans out is the
/// stored document as BSON, not the Rust type: a decode of it into the
/// type (once an empty document on failure) would skip the fan-out.
#[tokio::test]
async fn an_update_of_a_document_its_type_cannot_read_still_fans_out() -> docrel::Result<()> {
    let t = TestDb::new("lo_undecodable").await?;
    t.db.collection::<BsonDoc>("lo_makers")
        .insert_one(doc! {"_id": 1, "name": "Acme", "founded": "long ago"})
        .await
        .expect("raw insert");
    LoGadget::repo(&t.db).insert(&LoGadget { id: 1, maker: 1, maker_name: String::new() }).await?;
    assert_eq!(raw(&t, "lo_gadgets", 1).await.unwrap().get_str("maker_name").unwrap(), "Acme");
    assert!(matches!(LoMaker::repo(&t.db).get(&1).await, Err(Error::Decode { .. })), "the type cannot read it");

    let makers = LoMaker::repo(&t.db);
    let name = LoMaker::fields().name;
    for (what, new) in [("update_by_id", "by id"), ("update_one", "one"), ("update_many", "many"), ("tx", "tx")] {
        let outcome = match what {
            "update_by_id" => makers.update_by_id(&1, name.set(new.into())).await.map(drop),
            "update_one" => makers.update_one(doc! {"_id": 1}, name.set(new.into())).await.map(drop),
            "update_many" => makers.update_many(doc! {"_id": 1}, name.set(new.into())).await.map(drop),
            _ => LoMaker::repo(&t.db).transactional_fan_out().update_by_id(&1, name.set(new.into())).await.map(drop),
        };
        assert_eq!(raw(&t, "lo_makers", 1).await.unwrap().get_str("name").unwrap(), new, "{what}: written");
        let copy = raw(&t, "lo_gadgets", 1).await.unwrap().get_str("maker_name").unwrap().to_owned();
        match outcome {
            Ok(()) => assert_eq!(copy, new, "{what} returned Ok with the copy stale"),
            Err(e) => {
                let text = e.to_string();
                assert!(text.contains("was written") && text.contains("repair"), "{what}: {text}");
            }
        }
    }
    Ok(())
}

// ---- a source inserted behind the records of its earlier life ----------------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "lo_brands")]
struct LoBrand {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "lo_shoes")]
struct LoShoe {
    #[serde(rename = "_id")]
    id: i32,
    #[reference(to = LoBrand)]
    brand: ObjectId,
    #[denormalize(from = LoBrand::name, via = brand)]
    brand_name: String,
}

/// The shoe's copy of its brand's name and its record of the brand's
/// version, and the brand's own version, as stored.
async fn shoe_and_brand(t: &TestDb, shoe: i32, brand: ObjectId) -> (String, i64, i64) {
    let stored = raw(t, "lo_shoes", shoe).await.expect("stored");
    let copies = stored.get_document("_docrel").unwrap().get_document("copies").unwrap();
    let record = copies.get_document("brand").unwrap().get_i64(brand.to_hex()).unwrap();
    let source = raw(t, "lo_brands", brand).await.expect("stored");
    let version = source.get_document("_docrel").unwrap().get_i64("v").unwrap();
    (stored.get_str("brand_name").unwrap().to_owned(), record, version)
}

/// Moves the shoe's record of `brand` a minute ahead of the clock, as the
/// brand's earlier life left it when its process's clock ran ahead of
/// this one's.
async fn record_ahead(t: &TestDb, shoe: i32, brand: ObjectId) -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros() as i64;
    let ahead = now + 60_000_000;
    let path = format!("_docrel.copies.brand.{}", brand.to_hex());
    t.db.collection::<BsonDoc>("lo_shoes")
        .update_one(doc! {"_id": shoe}, doc! {"$set": {path: ahead}})
        .await
        .expect("raw record");
    ahead
}

/// A brand deleted (outside docrel) and inserted again through docrel by a
/// process whose clock is behind the records of its earlier life: the
/// shoes already referring to it get its copies. Before, the fill of the
/// existing holders was refused by their records (older than them, by the
/// clock) and the insert returned `Ok` with every copy stale; only a
/// repair fixed it.
#[tokio::test]
async fn a_source_inserted_behind_its_earlier_records_fills_its_holders() -> docrel::Result<()> {
    let t = TestDb::new("lo_behind").await?;
    let brand = LoBrand { id: ObjectId::new(), name: "Acme".into() };
    LoBrand::repo(&t.db).insert(&brand).await?;
    LoShoe::repo(&t.db).insert(&LoShoe { id: 1, brand: brand.id, brand_name: String::new() }).await?;
    let ahead = record_ahead(&t, 1, brand.id).await;
    t.db.collection::<BsonDoc>("lo_brands").delete_one(doc! {"_id": brand.id}).await.expect("raw delete");

    LoBrand::repo(&t.db).insert(&LoBrand { name: "Bolt".into(), ..brand.clone() }).await?;
    let (copy, record, version) = shoe_and_brand(&t, 1, brand.id).await;
    assert_eq!(copy, "Bolt", "the insert returned Ok with the copy stale");
    assert!(version > ahead && record == version, "record {record}, version {version}, ahead {ahead}");
    assert!(docrel::check::copies::<LoBrand>().verify(&t.db).run().await?.clean());
    LoBrand::repo(&t.db).update_by_id(&brand.id, LoBrand::fields().name.set("Crown".into())).await?;
    assert_eq!(shoe_and_brand(&t, 1, brand.id).await.0, "Crown");
    Ok(())
}

/// The refresh of a holder whose reference an update wrote (here set to
/// the brand it already refers to) rewrites a stale copy recorded ahead of
/// its source. Before, the refresh's guard refused it and the update
/// returned `Ok` with the copy stale.
#[tokio::test]
async fn a_refresh_moves_past_a_record_ahead_of_its_source() -> docrel::Result<()> {
    let t = TestDb::new("lo_refresh_ahead").await?;
    let brand = LoBrand { id: ObjectId::new(), name: "Acme".into() };
    LoBrand::repo(&t.db).insert(&brand).await?;
    LoShoe::repo(&t.db).insert(&LoShoe { id: 1, brand: brand.id, brand_name: String::new() }).await?;
    let ahead = record_ahead(&t, 1, brand.id).await;
    t.db.collection::<BsonDoc>("lo_shoes")
        .update_one(doc! {"_id": 1}, doc! {"$set": {"brand_name": "stale"}})
        .await
        .expect("raw copy");

    LoShoe::repo(&t.db).update_by_id(&1, LoShoe::fields().brand.set(brand.id)).await?;
    let (copy, record, version) = shoe_and_brand(&t, 1, brand.id).await;
    assert_eq!(copy, "Acme", "the update returned Ok with the copy stale");
    assert!(version > ahead && record == version, "record {record}, version {version}, ahead {ahead}");
    assert!(docrel::check::copies::<LoBrand>().verify(&t.db).run().await?.clean());
    Ok(())
}

// ---- a lost-history repair that fails for good --------------------------------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "lo_threads")]
struct LoThread {
    #[serde(rename = "_id")]
    id: i32,
    #[embed(max = 3, subset_of = LoReply, sort = "-n", key = n, max_bytes = 200)]
    latest: Vec<LoReplyLine>,
}

#[derive(View, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[view(of = LoReply)]
struct LoReplyLine {
    n: i32,
    text: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "lo_replies")]
struct LoReply {
    #[serde(rename = "_id")]
    id: i32,
    n: i32,
    #[parent_ref(to = LoThread)]
    thread: i32,
    text: String,
}

/// The texts of a thread's subset, as stored.
async fn latest(t: &TestDb, thread: i32) -> Vec<String> {
    let stored = raw(t, "lo_threads", thread).await.expect("stored");
    let lines = stored.get_array("latest").unwrap().iter();
    lines.map(|l| l.as_document().unwrap().get_str("text").unwrap().to_owned()).collect()
}

/// The dead letters as stored, in the order they were written.
async fn dead_letters(t: &TestDb) -> Vec<BsonDoc> {
    use futures::TryStreamExt;
    let found = t.db.collection::<BsonDoc>(docrel::denormalize::DEAD_LETTER_COLLECTION).find(doc! {}).await;
    found.expect("find").try_collect().await.expect("letters")
}

/// With `HistoryLost::RepairAndContinue`, the repair after lost history
/// meets a subset it cannot rebuild (the threads' validator refuses a
/// second summary) and a reply edited outside docrel past its summary's
/// `max_bytes`: each is recorded as a dead letter with its reason, the
/// other subsets are rebuilt, and the worker goes on. Before, the refused
/// rebuild's error stopped the worker, and every start repaired and
/// stopped again; the oversized reply was left out with no letter. Once
/// the causes are fixed, repairing the letters rebuilds the subsets and
/// removes the letters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repair_after_lost_history_that_fails_is_a_dead_letter() -> docrel::Result<()> {
    let _alone = FAIL_POINTS.lock().await;
    let t = TestDb::new("lo_lost").await?;
    for thread in [1, 2, 3] {
        LoThread::repo(&t.db).insert(&LoThread { id: thread, latest: vec![] }).await?;
        LoReply::repo(&t.db).insert(&LoReply { id: thread, n: thread, thread, text: "short".into() }).await?;
    }
    let worker = || SyncWorker::new(&t.db, "lo_heal").on_history_lost(HistoryLost::RepairAndContinue);
    let mut w = start(worker());
    w.ready().await;
    w.stop().await?;

    // Written while the worker was away, and the history of it lost.
    let replies = t.db.collection::<BsonDoc>("lo_replies");
    replies.insert_one(doc! {"_id": 4, "n": 4, "thread": 1, "text": "second"}).await.expect("raw insert");
    replies.update_one(doc! {"_id": 2}, doc! {"$set": {"text": "x".repeat(400)}}).await.expect("raw edit");
    replies.update_one(doc! {"_id": 3}, doc! {"$set": {"text": "edited"}}).await.expect("raw edit");
    let one_summary = doc! {"$jsonSchema": {"properties": {"latest": {"bsonType": "array", "maxItems": 1}}}};
    t.db.run_command(doc! {"collMod": "lo_threads", "validator": one_summary}).await.expect("collMod");
    let lost = doc! {
        "configureFailPoint": "failCommand",
        "mode": {"times": 1},
        "data": {"failCommands": ["aggregate"], "errorCode": 286, "appName": t.db.name()},
    };
    t.client.database("admin").run_command(lost).await.expect("fail point");

    let mut w = start(worker());
    let opened = tokio::time::timeout(Duration::from_secs(30), w.ready.recv()).await;
    fail_point_off(&t).await;
    if opened.is_err() || w.task.is_finished() {
        panic!("the worker stopped after its repair: {:?}", w.task.await);
    }
    assert_eq!(latest(&t, 3).await, ["edited"], "the other subsets are rebuilt");
    assert!(latest(&t, 2).await.is_empty(), "the oversized reply is left out");
    assert_eq!(latest(&t, 1).await, ["short"], "the refused rebuild wrote nothing");
    let letters = dead_letters(&t).await;
    assert_eq!(letters.len(), 2, "{letters:?}");
    let parent = |l: &BsonDoc| l.get_array("parents").unwrap()[0].as_document().unwrap().get_i32("id").unwrap();
    let refused = letters.iter().find(|l| parent(l) == 1).expect("a letter for thread 1");
    assert_eq!(refused.get_str("worker").unwrap(), "lo_heal");
    assert_eq!(refused.get_str("collection").unwrap(), "lo_replies");
    assert!(refused.get_str("reason").unwrap().contains("lo_threads"), "{refused}");
    let oversized = letters.iter().find(|l| parent(l) == 2).expect("a letter for thread 2");
    assert_eq!(oversized.get("document"), Some(&Bson::Int32(2)), "{oversized}");
    assert!(oversized.get_str("reason").unwrap().contains("max_bytes"), "{oversized}");
    w.stop().await?;

    t.db.run_command(doc! {"collMod": "lo_threads", "validator": {}}).await.expect("collMod");
    replies.update_one(doc! {"_id": 2}, doc! {"$set": {"text": "shorter"}}).await.expect("raw edit");
    let report = docrel::check::dead_letters().repair(&t.db).run().await?;
    assert_eq!((report.dead_letters, report.fixed), (2, 2), "{report:?}");
    assert_eq!(latest(&t, 1).await, ["second", "short"]);
    assert_eq!(latest(&t, 2).await, ["shorter"]);
    assert!(dead_letters(&t).await.is_empty());
    Ok(())
}

// ---- linking back more new documents than one page ---------------------------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "lo_owners")]
struct LoOwner {
    #[serde(rename = "_id")]
    id: i32,
    #[reference(many, to = LoTask, inverse = owner, max = 10)]
    tasks: Vec<i32>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "lo_tasks")]
struct LoTask {
    #[serde(rename = "_id")]
    id: i32,
    #[reference(to = LoOwner, inverse = tasks)]
    owner: Option<i32>,
}

/// Owners inserted after the tasks that name them, more than one page of
/// them in one `insert_many`: each is linked back to its tasks (one in the
/// first page, one in the last), and no read sends more ids than a page.
/// Before, the read of the tasks referring to them sent every new id in
/// one `$in`, and each task was matched against every new owner.
#[tokio::test]
async fn more_new_documents_than_a_page_are_linked_back_a_page_at_a_time() -> docrel::Result<()> {
    let t = TestDb::new("lo_link_back").await?;
    let (_client, db, commands) = crate::security::watched(&t, "").await?;
    let page = docrel::relations::on_delete::BATCH as i32;
    let last = page + 100;
    LoTask::repo(&db).insert_many(&[LoTask { id: 1, owner: Some(0) }, LoTask { id: 2, owner: Some(last) }]).await?;
    let owners: Vec<LoOwner> = (0..=last).map(|id| LoOwner { id, tasks: vec![] }).collect();
    let mark = commands.mark();
    // The embedded test server answers a storage conflict at the commit of
    // a transaction this large with InternalError (a MongoDB server says
    // WriteConflict, which the driver retries): nothing was written, so
    // the same all-or-nothing insert is run again.
    let mut attempt = 0;
    loop {
        match LoOwner::repo(&db).insert_many(&owners).await {
            Err(e) if attempt < 3 && e.to_string().contains("InternalError") => attempt += 1,
            other => break other?,
        }
    }
    let long = crate::security::over(&commands.since(mark), page as usize);
    assert!(long.is_empty(), "reads with more than {page} ids: {long:?}");
    for (owner, task) in [(0, 1), (last, 2)] {
        let stored = raw(&t, "lo_owners", owner).await.expect("stored");
        assert_eq!(stored.get_array("tasks").unwrap(), &vec![Bson::Int32(task)], "owner {owner}");
        assert_eq!(raw(&t, "lo_tasks", task).await.unwrap().get_i32("owner").unwrap(), owner);
    }
    assert!(raw(&t, "lo_owners", 1).await.unwrap().get_array("tasks").unwrap().is_empty());
    Ok(())
}
