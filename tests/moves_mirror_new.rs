//! Issue 39, stage 3: while a move keeps both shapes, every write the new
//! version makes to the moved documents reaches the old array in the same
//! transaction, where old readers see it. This binary plays the new
//! version (`link_only`); both shapes are read back with the raw driver.

use docrel::bson::{doc, oid::ObjectId, Bson, Document as BsonDoc};
use docrel::schema::stored::{self, MoveState};
use docrel::testing::TestDb;
use docrel::{Error, Filter};
use futures::TryStreamExt;
use moves::v2::{Comment, Post};

mod moves;

fn new_version() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| docrel::testing::link_only(&[moves::V2]));
}

async fn moving(label: &str, state: MoveState) -> docrel::Result<TestDb> {
    new_version();
    let t = TestDb::new(label).await?;
    stored::publish_moves(&t.db, &[moves::active(state)]).await?;
    docrel::schema::obey(&t.db).await?;
    Ok(t)
}

async fn raw(t: &TestDb, collection: &str) -> Vec<BsonDoc> {
    let coll = t.db.collection::<BsonDoc>(collection);
    coll.find(doc! {}).sort(doc! {"_id": 1}).await.expect("find").try_collect().await.expect("read")
}

/// A post as the old version stored it, with `n` comments.
async fn old_post(t: &TestDb, n: usize) -> (ObjectId, Vec<BsonDoc>) {
    let id = ObjectId::new();
    let comments: Vec<BsonDoc> =
        (0..n).map(|i| doc! {"_id": ObjectId::new(), "author": "ann", "text": format!("old {i}")}).collect();
    let post = doc! {"_id": id, "title": "p", "comments": comments.clone(), "recent": []};
    t.db.collection::<BsonDoc>("mv_posts").insert_one(post).await.expect("raw insert");
    (id, comments)
}

async fn array(t: &TestDb, post: ObjectId) -> Vec<BsonDoc> {
    let p = t.db.collection::<BsonDoc>("mv_posts").find_one(doc! {"_id": post}).await.expect("read").expect("post");
    p.get_array("comments").map(|a| a.iter().map(|e| e.as_document().unwrap().clone()).collect()).unwrap_or_default()
}

fn comment(post: ObjectId, text: &str) -> Comment {
    Comment { id: ObjectId::new(), post, author: "bo".into(), text: text.into() }
}

fn element(c: &Comment) -> BsonDoc {
    doc! {"_id": c.id, "author": &c.author, "text": &c.text}
}

#[tokio::test]
async fn every_write_of_the_documents_reaches_the_array_in_its_transaction() -> docrel::Result<()> {
    let t = moving("mvn_writes", MoveState::Maintained).await?;
    let repo = Comment::repo(&t.db);
    let (p, old) = old_post(&t, 2).await;
    let (q, _) = old_post(&t, 0).await;

    // The first write of a post not copied yet copies it first: the old
    // elements are documents too, and the new one follows them in the array.
    let new = comment(p, "new");
    repo.insert(&new).await?;
    assert_eq!(array(&t, p).await, vec![old[0].clone(), old[1].clone(), element(&new)]);
    assert_eq!(raw(&t, "mv_comments").await.len(), 3);

    let mut edited = new.clone();
    edited.text = "edited".into();
    repo.replace(&edited).await?;
    assert_eq!(array(&t, p).await[2], element(&edited));
    repo.update_many(Filter::new(doc! {"post": p}), Comment::fields().author.set("cy".into())).await?;
    assert!(array(&t, p).await.iter().all(|e| e.get_str("author").unwrap() == "cy"));

    // Moved to another post: out of one array, into the other.
    repo.update_by_id(&new.id, Comment::fields().post.set(q)).await?;
    assert_eq!(array(&t, p).await.len(), 2);
    assert_eq!(array(&t, q).await.iter().map(|e| e.get_object_id("_id").unwrap()).collect::<Vec<_>>(), [new.id]);
    repo.delete_by_id(&old[0].get_object_id("_id").unwrap()).await?;
    assert_eq!(
        array(&t, p).await.iter().map(|e| e.get("_id").unwrap().clone()).collect::<Vec<_>>(),
        [old[1].get("_id").unwrap().clone()]
    );

    // The subset the new version keeps follows its own rule.
    let recent = t.db.collection::<BsonDoc>("mv_posts").find_one(doc! {"_id": q}).await.expect("read").expect("q");
    assert_eq!(recent.get_array("recent").unwrap().len(), 1);
    Ok(())
}

/// The old array keeps its bound until it is retired: a parent's element
/// past it is refused in the new version too, and nothing is written.
#[tokio::test]
async fn the_old_bound_holds_for_new_documents() -> docrel::Result<()> {
    let t = moving("mvn_bound", MoveState::Maintained).await?;
    let (p, _) = old_post(&t, 50).await;
    let refused = Comment::repo(&t.db).insert(&comment(p, "51st")).await.unwrap_err();
    assert!(matches!(refused, Error::EmbedFull { max: 50, len: 51, .. }), "{refused}");
    assert!(raw(&t, "mv_comments").await.is_empty(), "nothing was written, not even the copy");
    assert_eq!(array(&t, p).await.len(), 50);
    Ok(())
}

/// Before the move is maintained, some old process may not mirror yet: the
/// new documents are refused with what to do, and nothing is written.
#[tokio::test]
async fn the_new_shape_takes_no_write_before_the_move_is_maintained() -> docrel::Result<()> {
    let t = moving("mvn_announced", MoveState::Announced).await?;
    let (p, _) = old_post(&t, 1).await;
    let refused = Comment::repo(&t.db).insert(&comment(p, "early")).await.unwrap_err();
    let text = refused.to_string();
    assert!(text.contains("the new shape takes writes once the move is maintained; nothing was written"), "{text}");
    assert!(raw(&t, "mv_comments").await.is_empty());
    Ok(())
}

/// The new version's `Post` does not declare the old array: its replace
/// keeps the array as stored while the move keeps it.
#[tokio::test]
async fn a_replace_by_the_new_version_keeps_the_old_array() -> docrel::Result<()> {
    let t = moving("mvn_replace", MoveState::Maintained).await?;
    let (p, old) = old_post(&t, 2).await;
    Post::repo(&t.db).replace(&Post { id: p, title: "renamed".into(), recent: Vec::new() }).await?;
    let stored = t.db.collection::<BsonDoc>("mv_posts").find_one(doc! {"_id": p}).await.expect("read").expect("post");
    assert_eq!(stored.get_str("title").unwrap(), "renamed");
    let kept: Vec<Bson> = old.into_iter().map(Bson::Document).collect();
    assert_eq!(stored.get_array("comments").unwrap(), &kept);
    Ok(())
}

/// Two new documents of one post in one call name the post twice: its
/// array is rebuilt once, keeping the old elements, not once per document
/// (the second rebuild, against documents the first had taken, emptied it).
#[tokio::test]
async fn many_documents_of_one_parent_in_one_call_keep_its_array() -> docrel::Result<()> {
    let t = moving("mvn_many", MoveState::Maintained).await?;
    let (p, old) = old_post(&t, 2).await;
    let (a, b) = (comment(p, "a"), comment(p, "b"));
    Comment::repo(&t.db).insert_many(&[a.clone(), b.clone()]).await?;
    let mut want = old.clone();
    want.extend([element(&a), element(&b)]);
    want[2..].sort_by_key(|e| e.get_object_id("_id").unwrap());
    assert_eq!(array(&t, p).await, want);
    assert_eq!(raw(&t, "mv_comments").await.len(), 4);
    Ok(())
}
