//! Issue 39: before a move's reads are switched, the new version reads the
//! moved documents through the old shape, where every element is (the new
//! collection holds only what was copied or mirrored so far): every read
//! path (find, get, count, children, counts, latest per parent, joins)
//! gives each element exactly once, as the copy would make it. From
//! `switched` on it reads the collection.
//!
//! The posts are stored raw, as the old version stores them; the move's
//! state is published as `schema apply` publishes it. Both versions are
//! linked in this binary, so the database's array is known to the graph
//! without a published old schema.

use docrel::bson::{doc, oid::ObjectId, Document as BsonDoc};
use docrel::schema::stored::{self, MoveState};
use docrel::testing::TestDb;
use docrel::Filter;
use moves::v2::{Comment, Line};
use std::collections::HashMap;

mod moves;

/// Stores posts as the old version does, the i-th with `lens[i]` comments;
/// answers each post's id and elements.
async fn old_posts(t: &TestDb, lens: &[usize]) -> Vec<(ObjectId, Vec<BsonDoc>)> {
    let mut out = Vec::new();
    for (i, n) in lens.iter().enumerate() {
        let id = ObjectId::new();
        let comments: Vec<BsonDoc> =
            (0..*n).map(|k| doc! {"_id": ObjectId::new(), "author": "ann", "text": format!("{i}.{k}")}).collect();
        let post = doc! {"_id": id, "title": format!("post {i}"), "comments": comments.clone()};
        t.db.collection::<BsonDoc>("mv_posts").insert_one(post).await.expect("raw insert");
        out.push((id, comments));
    }
    out
}

/// What the move makes of an element of `post`.
fn moved(post: ObjectId, e: &BsonDoc) -> Comment {
    Comment {
        id: e.get_object_id("_id").unwrap(),
        post,
        author: e.get_str("author").unwrap().into(),
        text: e.get_str("text").unwrap().into(),
    }
}

fn ids(cs: &[Comment]) -> Vec<ObjectId> {
    cs.iter().map(|c| c.id).collect()
}

/// A database whose move stands at `state` (`None`: declared by this
/// program, not under way), with the posts stored and one element
/// already copied, as a page of the copy or a mirror leaves it.
async fn moving(label: &str, state: Option<MoveState>) -> docrel::Result<(TestDb, Vec<(ObjectId, Vec<BsonDoc>)>)> {
    let t = TestDb::new(label).await?;
    if let Some(state) = state {
        stored::publish_moves(&t.db, &[moves::active(state)]).await?;
    }
    // As a process learns of a state: within a lease, by reading the schema.
    docrel::schema::obey(&t.db).await?;
    assert_eq!(stored::active_moves(&t.db).first().map(|m| m.state), state);
    let posts = old_posts(&t, &[3, 0, 5]).await;
    let (p0, e0) = &posts[0];
    let copied = docrel::bson_compat::to_document(&moved(*p0, &e0[0])).expect("encodes");
    t.db.collection::<BsonDoc>("mv_comments").insert_one(copied).await.expect("raw copy");
    Ok((t, posts))
}

/// Every read path of the new version gives each element of the old
/// arrays once, as the copy makes it.
async fn reads_every_element_once(t: &TestDb, posts: &[(ObjectId, Vec<BsonDoc>)]) -> docrel::Result<()> {
    let repo = Comment::repo(&t.db);
    let mut every: Vec<Comment> = posts.iter().flat_map(|(p, es)| es.iter().map(|e| moved(*p, e))).collect();
    every.sort_by_key(|c| c.id);
    let by_id = Comment::fields().id.asc();

    let all = repo.find(Filter::all()).sort(by_id.clone()).await?;
    assert_eq!(ids(&all), ids(&every), "each element once, whatever the collection holds");
    assert_eq!(
        all.iter().map(|c| (c.post, c.text.clone())).collect::<Vec<_>>(),
        every.iter().map(|c| (c.post, c.text.clone())).collect::<Vec<_>>()
    );
    assert_eq!(repo.count(Filter::all()).await?, every.len() as u64);

    let (p2, e2) = &posts[2];
    let of_p2 = repo.find(Comment::fields().post.eq(*p2)).sort(by_id.clone()).skip(1).limit(3).await?;
    let mut want: Vec<Comment> = e2.iter().map(|e| moved(*p2, e)).collect();
    want.sort_by_key(|c| c.id);
    assert_eq!(ids(&of_p2), ids(&want[1..4]), "filter, order, skip and limit apply to the documents");
    assert_eq!(repo.count(Comment::fields().post.eq(*p2)).await?, 5);
    let one = &e2[3];
    let got = repo.get(&one.get_object_id("_id").unwrap()).await?.expect("found by its key");
    assert_eq!((got.post, got.text.as_str()), (*p2, one.get_str("text").unwrap()));
    let lines: Vec<Line> = repo.find(Comment::fields().post.eq(*p2)).view::<Line>().await?;
    assert_eq!(lines.len(), 5, "a view reads through the old shape too");

    let rel = Comment::rels().post;
    assert_eq!(ids(&rel.children_of(&t.db, p2).sort(by_id.clone()).await?), ids(&want));
    let parents: Vec<ObjectId> = posts.iter().map(|(p, _)| *p).collect();
    let counts: HashMap<ObjectId, u64> = rel.children_of_many(&t.db, &parents).count().await?;
    assert_eq!(parents.iter().map(|p| counts[p]).collect::<Vec<_>>(), [3, 0, 5]);
    let latest = rel.latest_per_parent(&t.db, &parents, 2).await?;
    let newest: Vec<Vec<ObjectId>> = latest.iter().map(|cs| cs.iter().map(|c| c.id).collect()).collect();
    let expect: Vec<Vec<ObjectId>> = posts
        .iter()
        .map(|(_, es)| {
            let mut k: Vec<ObjectId> = es.iter().map(|e| e.get_object_id("_id").unwrap()).collect();
            k.sort_by(|a, b| b.cmp(a));
            k.truncate(2);
            k
        })
        .collect();
    assert_eq!(newest, expect, "the newest two of each post, by the declared order");
    Ok(())
}

#[tokio::test]
async fn before_the_switch_the_new_version_reads_every_element_through_the_array() -> docrel::Result<()> {
    for (i, state) in
        [None, Some(MoveState::Announced), Some(MoveState::Maintained), Some(MoveState::Moved)].into_iter().enumerate()
    {
        let (t, posts) = moving(&format!("mvr_{i}"), state).await?;
        reads_every_element_once(&t, &posts).await.map_err(|e| docrel::Error::Invalid {
            what: docrel::Misuse::Schema,
            message: format!("in state {state:?}: {e}"),
        })?;
    }
    Ok(())
}

#[tokio::test]
async fn a_read_of_one_parents_children_reads_that_parent_in_one_round_trip() -> docrel::Result<()> {
    let (t, posts) = moving("mvr_one", Some(MoveState::Maintained)).await?;
    let repo = Comment::repo(&t.db);
    repo.count(Filter::all()).await?; // holds the schema: the reads below are the reads
    let trips = docrel::testing::round_trips(&t.db);
    let mark = trips.mark();
    let (p2, _) = posts[2];
    assert_eq!(repo.find(Comment::fields().post.eq(p2)).await?.len(), 5);
    assert_eq!(trips.since(mark), 1);
    Ok(())
}

#[tokio::test]
async fn from_the_switch_on_the_new_version_reads_its_collection() -> docrel::Result<()> {
    let (t, posts) = moving("mvr_switched", Some(MoveState::Switched)).await?;
    let all = Comment::repo(&t.db).find(Filter::all()).await?;
    let (p0, e0) = &posts[0];
    assert_eq!(ids(&all), [e0[0].get_object_id("_id").unwrap()], "what the collection holds: {all:?}");
    assert_eq!(all[0].post, *p0);
    let stored = t.db.collection::<BsonDoc>("mv_comments").count_documents(doc! {}).await.unwrap();
    assert_eq!((stored, Comment::repo(&t.db).count(Filter::all()).await?), (1, 1));
    Ok(())
}
