//! Issue 39, stage 3: while a move keeps both shapes, every write the old
//! version makes to its embedded array reaches the new collection in the
//! same transaction. This binary plays the old version (`link_only`); each
//! kind of write is checked on both shapes as stored, read with the raw
//! driver, and a write the server refuses leaves neither shape changed.

use docrel::bson::{doc, oid::ObjectId, Bson, Document as BsonDoc};
use docrel::schema::stored::{self, MoveState};
use docrel::testing::TestDb;
use docrel::{Filter, Update};
use futures::TryStreamExt;
use moves::v1::{Comment, Post};
use std::collections::BTreeMap;

/// The server has one `failCommand` fail point: the tests that set it take turns.
static FAIL_POINT: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

mod moves;

fn old_version() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| docrel::testing::link_only(&[moves::V1]));
}

/// A test database where the move is in `state`, obeyed by this process.
async fn moving(label: &str, state: MoveState) -> docrel::Result<TestDb> {
    old_version();
    let t = TestDb::new(label).await?;
    stored::publish_moves(&t.db, &[moves::active(state)]).await?;
    docrel::schema::obey(&t.db).await?;
    Ok(t)
}

fn comment(text: &str) -> Comment {
    Comment { id: ObjectId::new(), author: "ann".into(), text: text.into() }
}

fn post(n: usize) -> Post {
    Post { id: ObjectId::new(), title: "p".into(), comments: (0..n).map(|i| comment(&format!("c{i}"))).collect() }
}

async fn raw(t: &TestDb, collection: &str) -> Vec<BsonDoc> {
    let coll = t.db.collection::<BsonDoc>(collection);
    coll.find(doc! {}).sort(doc! {"_id": 1}).await.expect("find").try_collect().await.expect("read")
}

/// Each post's elements and its documents in the new collection (their
/// parent reference taken off), by post, each set ordered by `_id`.
async fn shapes(t: &TestDb) -> (BTreeMap<String, Vec<BsonDoc>>, BTreeMap<String, Vec<BsonDoc>>) {
    let mut arrays = BTreeMap::new();
    for p in raw(t, "mv_posts").await {
        let mut elements: Vec<BsonDoc> =
            p.get_array("comments").unwrap().iter().map(|e| e.as_document().unwrap().clone()).collect();
        elements.sort_by_key(|e| e.get_object_id("_id").unwrap());
        arrays.insert(p.get_object_id("_id").unwrap().to_hex(), elements);
    }
    let mut docs: BTreeMap<String, Vec<BsonDoc>> = BTreeMap::new();
    for mut d in raw(t, "mv_comments").await {
        let parent = d.remove("post").and_then(|p| p.as_object_id()).expect("a parent reference").to_hex();
        docs.entry(parent).or_default().push(d);
    }
    (arrays, docs)
}

/// Both shapes hold the same elements, each once.
async fn assert_same(t: &TestDb) {
    let (arrays, docs) = shapes(t).await;
    for (post, elements) in &arrays {
        let have = docs.get(post).cloned().unwrap_or_default();
        assert_eq!(&have, elements, "post {post}: the collection differs from the array");
    }
    for post in docs.keys() {
        assert!(arrays.contains_key(post), "documents of post {post}, which is gone");
    }
}

#[tokio::test]
async fn every_write_of_the_array_reaches_the_collection_in_its_transaction() -> docrel::Result<()> {
    let t = moving("mvo_writes", MoveState::Maintained).await?;
    let repo = Post::repo(&t.db);
    let f = Post::fields();
    let (a, b, c) = (post(3), post(2), post(0));
    repo.insert(&a).await?;
    repo.insert_many(&[b.clone(), c.clone()]).await?;
    assert_same(&t).await;
    assert_eq!(raw(&t, "mv_comments").await.len(), 5);

    let pushed = comment("pushed");
    repo.update_by_id(&c.id, f.comments.push([pushed.clone(), comment("second")])).await?;
    assert_same(&t).await;
    repo.update_by_id(&a.id, f.comments.pull(&a.comments[1])).await?;
    assert_same(&t).await;
    let edit = Update::raw(doc! {"$set": {"comments.$.text": "edited"}});
    repo.update_one(Filter::new(doc! {"_id": b.id, "comments._id": b.comments[0].id}), edit).await?;
    assert_same(&t).await;
    let edited = raw(&t, "mv_comments").await.into_iter().find(|d| d.get_object_id("_id").unwrap() == b.comments[0].id);
    assert_eq!(edited.unwrap().get_str("text").unwrap(), "edited");

    // A whole document written over the stored one, and created by a save.
    let mut replaced = a.clone();
    replaced.comments = vec![a.comments[0].clone(), comment("new in replace")];
    repo.replace(&replaced).await?;
    assert_same(&t).await;
    let saved = post(2);
    repo.save(&saved).await?;
    assert_same(&t).await;

    // Many posts at once (the last element of each goes), then deletes of posts.
    repo.update_many(Filter::all(), Update::raw(doc! {"$pop": {"comments": 1}})).await?;
    assert_same(&t).await;
    repo.delete_by_id(&b.id).await?;
    assert_same(&t).await;
    repo.delete_many(Filter::new(doc! {"_id": {"$in": [c.id, saved.id]}})).await?;
    assert_same(&t).await;
    let left: Vec<Bson> = raw(&t, "mv_comments").await.iter().map(|d| d.get("post").unwrap().clone()).collect();
    assert!(left.iter().all(|p| *p == Bson::ObjectId(a.id)), "only the one post left has documents: {left:?}");
    // A write of another field of the post owes the collection nothing.
    let mark = t.trips.mark();
    repo.update_by_id(&a.id, f.title.set("renamed".into())).await?;
    assert_eq!(t.trips.commands_since(mark), ["update mv_posts"], "no transaction, no reconcile");
    Ok(())
}

/// In `announced` a process may not know of the move yet: the collection
/// takes deletes and updates of what it has, never a new element, so no
/// element can be left there that an array lost without a mirror.
#[tokio::test]
async fn an_announced_move_mirrors_deletes_and_updates_only() -> docrel::Result<()> {
    let t = moving("mvo_announced", MoveState::Announced).await?;
    let repo = Post::repo(&t.db);
    let a = post(2);
    repo.insert(&a).await?;
    assert!(raw(&t, "mv_comments").await.is_empty(), "no element enters the collection");
    // One that is there (copied, say) follows the array's edits and deletes.
    let mut there = doc! {"_id": a.comments[0].id, "author": "ann", "text": "c0", "post": a.id};
    t.db.collection::<BsonDoc>("mv_comments").insert_one(there.clone()).await.expect("raw insert");
    let edit = Update::raw(doc! {"$set": {"comments.$.text": "edited"}});
    repo.update_one(Filter::new(doc! {"_id": a.id, "comments._id": a.comments[0].id}), edit).await?;
    there.insert("text", "edited");
    assert_eq!(raw(&t, "mv_comments").await, vec![there]);
    // Pulled by its key: its stored fields are no longer the ones written.
    repo.update_by_id(&a.id, Update::raw(doc! {"$pull": {"comments": {"_id": a.comments[0].id}}})).await?;
    assert!(raw(&t, "mv_comments").await.is_empty());
    Ok(())
}

/// A write the server refuses in the mirror's transaction leaves neither
/// shape changed, and says nothing was written.
#[tokio::test]
async fn a_refused_mirror_leaves_both_shapes_as_they_were() -> docrel::Result<()> {
    let _one = FAIL_POINT.lock().await;
    let t = moving("mvo_refused", MoveState::Maintained).await?;
    let repo = Post::repo(&t.db);
    let a = post(1);
    repo.insert(&a).await?;
    let before = (raw(&t, "mv_posts").await, raw(&t, "mv_comments").await);
    let admin = t.client.database("admin");
    admin
        .run_command(doc! {
            "configureFailPoint": "failCommand",
            "mode": {"times": 1},
            "data": {"failCommands": ["delete"], "errorCode": 2, "appName": t.db.name()},
        })
        .await
        .expect("configureFailPoint");
    // The pull is an `update`; its mirror deletes the element's document.
    let refused = repo.update_by_id(&a.id, Post::fields().comments.pull(&a.comments[0])).await;
    let _ = admin.run_command(doc! {"configureFailPoint": "failCommand", "mode": "off"}).await;
    assert!(refused.is_err(), "the mirror's statement was refused: {refused:?}");
    assert_eq!((raw(&t, "mv_posts").await, raw(&t, "mv_comments").await), before);
    Ok(())
}

/// A commit whose outcome is unknown is committed again, never run again:
/// the push lands once in both shapes.
#[tokio::test]
async fn an_unknown_commit_is_retried_alone_and_the_write_lands_once() -> docrel::Result<()> {
    let _one = FAIL_POINT.lock().await;
    let t = moving("mvo_commit", MoveState::Maintained).await?;
    let repo = Post::repo(&t.db);
    let a = post(1);
    repo.insert(&a).await?;
    let admin = t.client.database("admin");
    admin
        .run_command(doc! {
            "configureFailPoint": "failCommand",
            "mode": {"times": 1},
            // The commit lands, and its answer says it may not have.
            "data": {
                "failCommands": ["commitTransaction"],
                "writeConcernError": {"code": 64, "codeName": "WriteConcernFailed", "errmsg": "injected"},
                "appName": t.db.name(),
            },
        })
        .await
        .expect("configureFailPoint");
    let pushed = comment("once");
    let done = repo.update_by_id(&a.id, Post::fields().comments.push([pushed.clone()])).await;
    let _ = admin.run_command(doc! {"configureFailPoint": "failCommand", "mode": "off"}).await;
    done?;
    let stored = raw(&t, "mv_posts").await;
    let ids: Vec<ObjectId> = stored[0]
        .get_array("comments")
        .unwrap()
        .iter()
        .map(|e| e.as_document().unwrap().get_object_id("_id").unwrap())
        .collect();
    assert_eq!(ids, [a.comments[0].id, pushed.id], "pushed once");
    assert_same(&t).await;
    Ok(())
}
