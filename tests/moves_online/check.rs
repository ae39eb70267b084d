//! What holds after a history, read with the raw driver: M1, both shapes
//! hold the same elements, each once; M2, every element a writer's model
//! holds (what returned `Ok`, and what a failed write was read back to
//! have left) is there with its last text, and none it deleted; the new
//! version's subset holds each post's newest three. After retirement: the
//! old shape is gone (or left as it was), the documents unchanged.

use super::writers::elements;
use docrel::bson::{doc, oid::ObjectId, Bson, Document as BsonDoc};
use docrel::schema::stored;
use docrel::testing::TestDb;
use futures::TryStreamExt;
use std::collections::HashMap;

/// Every document of `collection`, by `_id`.
pub async fn all(t: &TestDb, collection: &str) -> Vec<BsonDoc> {
    let coll = t.db.collection::<BsonDoc>(collection);
    coll.find(doc! {}).sort(doc! {"_id": 1}).await.expect("find").try_collect().await.expect("read")
}

/// M1, M2 and the subset, on what is stored; a violation is a panic that
/// names it.
pub async fn shapes(t: &TestDb, old_model: &serde_json::Value, new_model: &serde_json::Value) {
    let posts = all(t, "mv_posts").await;
    let docs = all(t, "mv_comments").await;
    let mut by_post: HashMap<ObjectId, Vec<&BsonDoc>> = HashMap::new();
    for d in &docs {
        by_post.entry(d.get_object_id("post").unwrap()).or_default().push(d);
    }
    let mut seen: HashMap<ObjectId, ObjectId> = HashMap::new();
    for p in &posts {
        let id = p.get_object_id("_id").unwrap();
        let mut array = elements(p);
        for (c, _) in &array {
            assert!(seen.insert(*c, id).is_none(), "M1: comment {c} is in two arrays, or twice in one");
        }
        let mut collection: Vec<(ObjectId, String)> = by_post
            .remove(&id)
            .unwrap_or_default()
            .iter()
            .map(|d| (d.get_object_id("_id").unwrap(), d.get_str("text").unwrap().to_owned()))
            .collect();
        array.sort();
        collection.sort();
        assert_eq!(array, collection, "M1: post {id}'s shapes differ");
        let newest: Vec<Bson> = collection.iter().rev().take(3).map(|(c, _)| Bson::ObjectId(*c)).collect();
        let recent: Vec<Bson> = p
            .get_array("recent")
            .map(|r| r.iter().map(|s| s.as_document().unwrap().get("_id").unwrap().clone()).collect())
            .unwrap_or_default();
        if !newest.is_empty() {
            assert_eq!(recent, newest, "the subset of post {id}");
        }
    }
    assert!(by_post.is_empty(), "M1: documents of posts that are gone: {:?}", by_post.keys());
    for (post, comments) in old_model.as_object().unwrap() {
        let p = posts
            .iter()
            .find(|d| d.get_object_id("_id").unwrap().to_hex() == *post)
            .expect("M2: the old version's post");
        let mut want: Vec<(String, String)> = comments
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c[0].as_str().unwrap().to_owned(), c[1].as_str().unwrap().to_owned()))
            .collect();
        let mut have: Vec<(String, String)> = elements(p).into_iter().map(|e| (e.0.to_hex(), e.1)).collect();
        want.sort();
        have.sort();
        assert_eq!(have, want, "M2: the old version's post {post}");
    }
    for (comment, v) in new_model.as_object().unwrap() {
        let d = docs
            .iter()
            .find(|d| d.get_object_id("_id").unwrap().to_hex() == *comment)
            .expect("M2: the new version's comment");
        assert_eq!(d.get_object_id("post").unwrap().to_hex(), v[0].as_str().unwrap(), "M2: its post");
        assert_eq!(d.get_str("text").unwrap(), v[1].as_str().unwrap(), "M2: its text");
    }
}

/// After retirement: the stored schema no longer lists the array, the move
/// and its lease rows are gone, the documents are unchanged, the posts
/// without the array (`dropped`) or with it as it was, and a write of the
/// new version touches the documents only.
pub async fn retired(t: &TestDb, documents: &[BsonDoc], posts_before: &[BsonDoc], dropped: bool) -> docrel::Result<()> {
    let posts = all(t, "mv_posts").await;
    if dropped {
        assert!(posts.iter().all(|p| !p.contains_key("comments")), "the old arrays are dropped");
    } else {
        let arrays = |ps: &[BsonDoc]| ps.iter().map(elements).collect::<Vec<_>>();
        assert_eq!(arrays(&posts), arrays(posts_before), "without --drop-old the arrays stay as they were");
    }
    let stored_posts = stored::load(&t.db).await?.into_iter().find(|s| s.collection == "mv_posts").expect("stored");
    assert!(stored_posts.relations.iter().all(|r| r.field != "comments"), "{:?}", stored_posts.relations);
    assert!(stored::load_moves(&t.db).await?.is_empty());
    let leases = t.db.collection::<BsonDoc>(stored::LEASES_COLLECTION).count_documents(doc! {}).await.unwrap();
    assert_eq!(leases, 0, "no lease rows once no move runs");
    let marks = t.db.collection::<BsonDoc>("_docrel_move_marks").count_documents(doc! {}).await.unwrap();
    assert_eq!(marks, 0, "no mark once the move is complete");
    assert_eq!(all(t, "mv_comments").await, documents, "the documents are what the move made");
    docrel::schema::obey(&t.db).await?;
    let post = posts[0].get_object_id("_id").unwrap();
    let before = elements(&posts[0]);
    let comment = super::moves::v2::Comment { id: ObjectId::new(), post, author: "eve".into(), text: "after".into() };
    super::moves::v2::Comment::repo(&t.db).insert(&comment).await?;
    let after = t.db.collection::<BsonDoc>("mv_posts").find_one(doc! {"_id": post}).await.unwrap().unwrap();
    assert_eq!(elements(&after), before, "nothing mirrors into the retired array");
    Ok(())
}
