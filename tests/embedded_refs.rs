//! References inside the elements of an embedded array (issue 30, item 8;
//! Mongoose's `comments[].author`): one `$in` loads the referred documents
//! of every element of every parent; copies inside the elements are filled
//! on insert, kept true by every change of their source, verified and
//! repaired; delete rules and the index reach the elements. Every outcome is
//! read back with the raw driver.

use docrel::bson::{doc, oid::ObjectId, Bson, Document as BsonDoc};
use docrel::check;
use docrel::testing::TestDb;
use docrel::{Document, Embedded, Error, View};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "er_users")]
struct User {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    karma: i32,
}

/// A comment: its author is a reference, with a copy of the author's name.
#[derive(Embedded, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Comment {
    text: String,
    #[reference(to = User)]
    author: ObjectId,
    #[denormalize(from = User::name, via = author)]
    author_name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "er_posts")]
struct Post {
    #[serde(rename = "_id")]
    id: ObjectId,
    title: String,
    #[embed(max = 50)]
    comments: Vec<Comment>,
}

/// Reviews whose optional `editor` is removed with its element when the
/// editor is deleted, and whose `by` forbids deleting the reviewer.
#[derive(Embedded, Serialize, Deserialize, Debug, Clone)]
struct Note {
    #[serde(rename = "t")]
    text: String,
    #[reference(to = User, on_delete = restrict)]
    by: ObjectId,
}

#[derive(Embedded, Serialize, Deserialize, Debug, Clone)]
struct Edit {
    #[reference(to = User, on_delete = pull)]
    editor: Option<ObjectId>,
}

/// A ticket goes with the user any of its watchers is.
#[derive(Embedded, Serialize, Deserialize, Debug, Clone)]
struct Watcher {
    #[reference(to = User, on_delete = cascade)]
    user: ObjectId,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "er_tickets")]
struct Ticket {
    #[serde(rename = "_id")]
    id: i32,
    #[embed(max = 5)]
    watchers: Vec<Watcher>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "er_pages")]
struct Page {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[embed(max = 10)]
    notes: Vec<Note>,
    #[embed(max = 10)]
    edits: Option<Vec<Edit>>,
}

#[derive(View, Deserialize, Debug)]
#[view(of = User)]
struct UserName {
    name: String,
}

fn comment(text: &str, author: ObjectId) -> Comment {
    Comment { text: text.into(), author, author_name: String::new() }
}

async fn users(db: &docrel::mongodb::Database, names: &[&str]) -> docrel::Result<Vec<ObjectId>> {
    let docs: Vec<User> = names.iter().map(|n| User { id: ObjectId::new(), name: (*n).into(), karma: 0 }).collect();
    User::repo(db).insert_many(&docs).await?;
    Ok(docs.iter().map(|u| u.id).collect())
}

/// The stored post, by the raw driver.
async fn raw_post(db: &docrel::mongodb::Database, id: ObjectId) -> docrel::Result<BsonDoc> {
    let found = db.collection::<BsonDoc>("er_posts").find_one(doc! {"_id": id}).await?;
    Ok(found.expect("the post is stored"))
}

/// `(author, author_name)` of each stored comment of a post.
fn stored_comments(post: &BsonDoc) -> Vec<(ObjectId, String)> {
    let comments = post.get_array("comments").expect("comments are stored");
    comments
        .iter()
        .filter_map(Bson::as_document)
        .map(|c| (c.get_object_id("author").unwrap(), c.get_str("author_name").unwrap().to_owned()))
        .collect()
}

#[tokio::test]
async fn the_authors_of_every_comment_of_every_post_load_in_one_round_trip() -> docrel::Result<()> {
    let t = TestDb::new("er_load").await?;
    let ids = users(&t.db, &["ann", "bob", "cy"]).await?;
    let gone = ObjectId::new();
    let mut posts = Vec::new();
    for p in 0..12 {
        let comments = (0..p % 4).map(|c| comment(&format!("c{c}"), ids[(p + c) % 3])).collect();
        posts.push(Post { id: ObjectId::new(), title: format!("p{p}"), comments });
    }
    posts[5].comments.push(comment("from nobody", gone));

    let mark = t.trips.mark();
    let authors = Post::rels().comments.each(Comment::refs().author).load::<UserName>(&t.db, &posts).await?;
    assert_eq!(t.trips.commands_since(mark), ["find er_users"], "one $in for every element of every parent");
    let names = ["ann", "bob", "cy"];
    for (p, post) in posts.iter().enumerate() {
        let expected: Vec<&str> = post
            .comments
            .iter()
            .filter(|c| c.author != gone)
            .map(|c| names[ids.iter().position(|i| *i == c.author).unwrap()])
            .collect();
        let loaded: Vec<&str> = authors.of(p).map(|u| u.name.as_str()).collect();
        assert_eq!(loaded, expected, "post {p}: each comment's author, in the comments' order");
    }
    assert_eq!(authors.missing(5), [gone], "a dangling author is reported, not dropped silently");
    assert_eq!(Comment::refs().author.id_of(&posts[1].comments[0]), Some(posts[1].comments[0].author));
    Ok(())
}

#[tokio::test]
async fn copies_inside_elements_are_filled_on_insert_and_follow_every_rename() -> docrel::Result<()> {
    let t = TestDb::new("er_copies").await?;
    Post::repo(&t.db).ensure_indexes().await?;
    let ids = users(&t.db, &["ann", "bob"]).await?;
    let (ann, bob) = (ids[0], ids[1]);
    let first = Post {
        id: ObjectId::new(),
        title: "first".into(),
        comments: vec![comment("hi", ann), comment("yo", bob), comment("again", ann)],
    };
    let second = Post { id: ObjectId::new(), title: "second".into(), comments: vec![comment("me", ann)] };
    Post::repo(&t.db).insert_many(&[first.clone(), second.clone()]).await?;
    let stored = stored_comments(&raw_post(&t.db, first.id).await?);
    assert_eq!(stored, [(ann, "ann".into()), (bob, "bob".into()), (ann, "ann".into())], "filled on insert");

    let mark = t.trips.mark();
    User::repo(&t.db).update_by_id(&ann, User::fields().name.set("Ann Smith".into())).await?;
    // The user and every comment copy in one bulkWrite (MongoDB 8.0+).
    assert_eq!(t.trips.commands_since(mark), ["bulkWrite"]);
    let stored = stored_comments(&raw_post(&t.db, first.id).await?);
    assert_eq!(stored, [(ann, "Ann Smith".into()), (bob, "bob".into()), (ann, "Ann Smith".into())]);
    assert_eq!(stored_comments(&raw_post(&t.db, second.id).await?), [(ann, "Ann Smith".into())]);

    // A field nothing copies moves no copy.
    let mark = t.trips.mark();
    User::repo(&t.db).update_by_id(&bob, User::fields().karma.set(3)).await?;
    assert_eq!(t.trips.commands_since(mark), ["update er_users"]);

    // Verify sees a copy written behind docrel's back; repair rewrites it.
    assert_eq!(check::copies::<User>().verify(&t.db).run().await?.stale, 0);
    let posts = t.db.collection::<BsonDoc>("er_posts");
    posts.update_one(doc! {"_id": first.id}, doc! {"$set": {"comments.1.author_name": "B0B"}}).await?;
    assert_eq!(check::copies::<User>().verify(&t.db).run().await?.stale, 1);
    check::copies::<User>().repair(&t.db).run().await?;
    assert_eq!(stored_comments(&raw_post(&t.db, first.id).await?)[1], (bob, "bob".into()));
    assert_eq!(check::copies::<User>().verify(&t.db).run().await?.stale, 0);

    // The fan-out finds the posts through the index on the elements' ids.
    let indexes = posts.list_index_names().await?;
    assert!(indexes.iter().any(|n| n == "comments.author_1"), "{indexes:?}");
    Ok(())
}

#[tokio::test]
async fn a_comment_pushed_later_gets_its_copy_and_referrers_are_found_by_element() -> docrel::Result<()> {
    let t = TestDb::new("er_push").await?;
    let ids = users(&t.db, &["ann", "bob"]).await?;
    let post = Post { id: ObjectId::new(), title: "t".into(), comments: vec![comment("a", ids[0])] };
    Post::repo(&t.db).insert(&post).await?;
    let other = Post { id: ObjectId::new(), title: "u".into(), comments: vec![comment("b", ids[1])] };
    Post::repo(&t.db).insert(&other).await?;

    // A pushed comment, and a saved post whose comment changed author, get
    // the copies of their authors (the caller's values are docrel's to keep).
    let mut pushed = comment("later", ids[1]);
    pushed.author_name = "made up".into();
    Post::repo(&t.db).update_by_id(&post.id, Post::fields().comments.push([pushed])).await?;
    let stored = stored_comments(&raw_post(&t.db, post.id).await?);
    assert_eq!(stored, [(ids[0], "ann".into()), (ids[1], "bob".into())], "filled on push");
    let mut changed = other.clone();
    changed.comments[0].author = ids[0];
    Post::repo(&t.db).save(&changed).await?;
    assert_eq!(stored_comments(&raw_post(&t.db, other.id).await?), [(ids[0], "ann".into())], "filled on save");
    User::repo(&t.db).update_by_id(&ids[1], User::fields().name.set("Bob".into())).await?;
    assert_eq!(stored_comments(&raw_post(&t.db, post.id).await?)[1], (ids[1], "Bob".into()));
    assert_eq!(check::copies::<User>().verify(&t.db).run().await?.stale, 0);
    // One element's reference moved by its position: its copy follows.
    let moved = docrel::Update::<Post>::raw(doc! {"$set": {"comments.0.author": ids[1]}});
    Post::repo(&t.db).update_by_id(&post.id, moved).await?;
    assert_eq!(stored_comments(&raw_post(&t.db, post.id).await?)[0], (ids[1], "Bob".into()), "filled on a moved id");
    let back = docrel::Update::<Post>::raw(doc! {"$set": {"comments.0.author": ids[0]}});
    Post::repo(&t.db).update_by_id(&post.id, back).await?;
    // A copy written by hand through docrel is refused or rewritten, never kept.
    let forged = docrel::Update::<Post>::raw(doc! {"$set": {"comments.0.author_name": "forged"}});
    let _ = Post::repo(&t.db).update_by_id(&post.id, forged).await;
    assert_eq!(stored_comments(&raw_post(&t.db, post.id).await?)[0], (ids[0], "ann".into()), "a forged copy");
    Post::repo(&t.db).update_by_id(&other.id, Post::fields().comments.set(vec![comment("back", ids[1])])).await?;

    let found = Post::rels().comments.each(Comment::refs().author).referrers_of_many(&t.db, &[ids[1], ids[0]]).await?;
    let sorted = |mut v: Vec<ObjectId>| {
        v.sort();
        v
    };
    // Bob commented on both posts (the pushed comment and the one set back); Ann on the first.
    assert_eq!(sorted(found.of(0).map(|p| p.id).collect()), sorted(vec![post.id, other.id]));
    assert_eq!(found.of(1).map(|p| p.id).collect::<Vec<_>>(), [post.id]);
    Ok(())
}

#[tokio::test]
async fn delete_rules_reach_the_elements() -> docrel::Result<()> {
    let t = TestDb::new("er_delete").await?;
    let ids = users(&t.db, &["ann", "bob", "cy"]).await?;
    let (ann, bob, cy) = (ids[0], ids[1], ids[2]);
    let page = Page {
        id: ObjectId::new(),
        notes: vec![Note { text: "n".into(), by: ann }],
        edits: Some(vec![Edit { editor: Some(bob) }, Edit { editor: Some(cy) }, Edit { editor: None }]),
    };
    Page::repo(&t.db).insert(&page).await?;

    // `restrict` on `notes[].by`: ann still wrote a note, nothing is deleted.
    let refused = User::repo(&t.db).delete_by_id(&ann).await;
    assert!(matches!(refused, Err(Error::StillReferenced { referrer: "er_pages", field: "notes", .. })), "{refused:?}");
    assert_eq!(t.db.collection::<BsonDoc>("er_users").count_documents(doc! {"_id": ann}).await?, 1);

    // `pull` on `edits[].editor`: bob's edit goes, the others stay.
    User::repo(&t.db).delete_by_id(&bob).await?;
    let stored = t.db.collection::<BsonDoc>("er_pages").find_one(doc! {"_id": page.id}).await?.unwrap();
    let editors: Vec<Bson> = stored
        .get_array("edits")
        .unwrap()
        .iter()
        .map(|e| e.as_document().and_then(|d| d.get("editor")).cloned().unwrap_or(Bson::Null))
        .collect();
    assert_eq!(editors, [Bson::ObjectId(cy), Bson::Null]);
    assert_eq!(stored.get_array("notes").unwrap().len(), 1);

    // `cascade` on `watchers[].user`: the tickets cy watches go with cy.
    let watch = |id, users: &[ObjectId]| Ticket { id, watchers: users.iter().map(|&user| Watcher { user }).collect() };
    Ticket::repo(&t.db).insert_many(&[watch(1, &[ann, cy]), watch(2, &[ann]), watch(3, &[cy])]).await?;
    User::repo(&t.db).delete_by_id(&cy).await?;
    let tickets = t.db.collection::<BsonDoc>("er_tickets").distinct("_id", doc! {}).await?;
    assert_eq!(tickets, [Bson::Int32(2)]);
    Ok(())
}

#[test]
fn the_schema_carries_the_element_references_and_publishes_them() {
    let comments = Post::schema().relation("comments").expect("the embed is a relation");
    let author = &comments.elements[0];
    assert_eq!((author.field, author.target, author.optional), ("author", "er_users", false));
    assert_eq!(author.copies.iter().map(|c| (c.field, c.source_field)).collect::<Vec<_>>(), [("author_name", "name")]);
    let pages = Page::schema();
    let edits = &pages.relation("edits").unwrap().elements[0];
    assert_eq!((edits.field, edits.optional, edits.on_delete), ("editor", true, docrel::schema::OnDelete::Pull));
    assert!(Page::schema().relation("notes").unwrap().elements[0].on_delete == docrel::schema::OnDelete::Restrict);

    // The stored form keeps them, so a program that links neither type obeys them.
    let stored = docrel::schema::stored::program().into_iter().find(|t| t.collection == "er_posts").unwrap();
    let json = serde_json::to_value(&stored).unwrap();
    let comments = json["relations"].as_array().unwrap().iter().find(|r| r["field"] == "comments").unwrap();
    assert_eq!(comments["elements"][0]["field"], "author");
    assert_eq!(comments["elements"][0]["copies"][0]["field"], "author_name");
    let back: docrel::schema::stored::StoredType = serde_json::from_value(json).unwrap();
    assert_eq!(back, stored);
}
