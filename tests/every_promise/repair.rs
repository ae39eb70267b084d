//! A referrer written while its target is deleted dangles (MongoDB has no
//! foreign keys). The README says `verify` reports it and `repair` fixes
//! it: with `on_delete = pull` declared, the repair answered "fixed 0,
//! unfixable" (the recipe service). It now pulls the dangling reference
//! as the delete would have, with the copy made through it.

use crate::raw;
use docrel::bson::{doc, oid::ObjectId};
use docrel::testing::TestDb;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "rp_users")]
struct User {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "rp_comments")]
struct Comment {
    #[serde(rename = "_id")]
    id: ObjectId,
    text: String,
    #[reference(to = User, on_delete = pull)]
    author: Option<ObjectId>,
    #[denormalize(from = User::name, via = author)]
    author_name: Option<String>,
}

#[tokio::test]
async fn repair_pulls_a_dangling_reference_whose_rule_pulls_it() -> docrel::Result<()> {
    let t = TestDb::new("rp_dangling").await?;
    let ann = User { id: ObjectId::new(), name: "Ann".into() };
    User::repo(&t.db).insert(&ann).await?;
    let kept = Comment { id: ObjectId::new(), text: "kept".into(), author: Some(ann.id), author_name: None };
    Comment::repo(&t.db).insert(&kept).await?;
    // Written while its author was deleted: it names a user that is gone.
    let gone = ObjectId::new();
    let dangling = ObjectId::new();
    let comments = t.db.collection::<docrel::bson::Document>("rp_comments");
    comments
        .insert_one(doc! {"_id": dangling, "text": "orphan", "author": gone, "author_name": "Bob"})
        .await
        .expect("insert");

    let found = docrel::check::copies::<User>().verify(&t.db).run().await?;
    assert_eq!((found.dangling, found.unfixable), (1, 0), "{found:?}");
    assert!(found.problems.iter().any(|p| p.contains("on_delete = pull")), "{:?}", found.problems);
    let repaired = docrel::check::copies::<User>().repair(&t.db).run().await?;
    assert_eq!((repaired.dangling, repaired.fixed, repaired.unfixable), (1, 1, 0), "{repaired:?}");
    let stored = raw(&t, "rp_comments", dangling).await.expect("the comment stays");
    assert_eq!(stored.get("author"), None, "{stored}");
    assert_eq!(stored.get("author_name"), None, "{stored}");
    assert_eq!(stored.get_str("text").unwrap(), "orphan");
    let other = raw(&t, "rp_comments", kept.id).await.expect("stored");
    assert_eq!(other.get_str("author_name").unwrap(), "Ann");
    assert!(docrel::check::copies::<User>().verify(&t.db).run().await?.clean());
    Ok(())
}
