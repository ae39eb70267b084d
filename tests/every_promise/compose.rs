//! Compositions: a delete rule whose pull clears a copy that a subset
//! summary carries (the recipe service: users, recipes keeping their
//! newest comments, comments with a copy of their author's name).

use crate::raw;
use docrel::bson::{doc, oid::ObjectId, Bson};
use docrel::testing::TestDb;
use docrel::{Document, View};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "cp_users")]
struct User {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "cp_comments")]
struct Comment {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Recipe)]
    recipe: i32,
    #[reference(to = User, on_delete = pull)]
    author: Option<ObjectId>,
    #[denormalize(from = User::name, via = author)]
    author_name: Option<String>,
    at: i64,
}

#[derive(View, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[view(of = Comment)]
struct CommentLine {
    #[serde(rename = "_id")]
    id: ObjectId,
    author_name: Option<String>,
    at: i64,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "cp_recipes")]
struct Recipe {
    #[serde(rename = "_id")]
    id: i32,
    #[embed(max = 5, subset_of = Comment, sort = "-at", key = id)]
    newest: Vec<CommentLine>,
}

/// The author names in recipe `id`'s summaries, newest first, as stored
/// (`-` where a summary holds none).
async fn names(t: &TestDb, id: i32) -> Vec<String> {
    let recipe = raw(t, "cp_recipes", id).await.expect("the recipe");
    let newest = recipe.get_array("newest").expect("newest");
    let name = |c: &docrel::bson::Document| c.get_str("author_name").map_or("-".to_owned(), str::to_owned);
    newest.iter().filter_map(Bson::as_document).map(name).collect()
}

/// Deleting a user pulls the author from their comments (the rule) and,
/// with it, the copy of their name: every recipe's summaries of those
/// comments follow (before: the comments were cleared, the summaries kept
/// the deleted user's name, and `check()` said false).
#[tokio::test]
async fn a_pull_reaches_the_summaries_that_carry_its_copy() -> docrel::Result<()> {
    let t = TestDb::new("cp_pull").await?;
    let ann = User { id: ObjectId::new(), name: "Ann".into() };
    let bob = User { id: ObjectId::new(), name: "Bob".into() };
    User::repo(&t.db).insert_many(&[ann.clone(), bob.clone()]).await?;
    for id in 1..=3 {
        Recipe::repo(&t.db).insert(&Recipe { id, newest: vec![] }).await?;
    }
    let comment = |recipe, author: &User, at| Comment {
        id: ObjectId::new(),
        recipe,
        author: Some(author.id),
        author_name: None,
        at,
    };
    let comments = [comment(1, &ann, 1), comment(1, &bob, 2), comment(2, &ann, 3), comment(3, &bob, 4)];
    Comment::repo(&t.db).insert_many(&comments).await?;
    assert_eq!(names(&t, 1).await, ["Bob", "Ann"]);

    User::repo(&t.db).delete_by_id(&ann.id).await?;

    let stored = t.db.collection::<docrel::bson::Document>("cp_comments");
    assert_eq!(stored.count_documents(doc! {"author_name": "Ann"}).await.unwrap(), 0, "the comments' copies went");
    assert_eq!(names(&t, 1).await, ["Bob", "-"], "recipe 1's summary of Ann's comment lost her name");
    assert_eq!(names(&t, 2).await, ["-"]);
    assert_eq!(names(&t, 3).await, ["Bob"], "a recipe Ann never commented on is as it was");
    for id in 1..=3 {
        assert!(Recipe::rels().newest.check(&t.db, &id).await?, "recipe {id}'s subset checks");
    }
    let report = docrel::check::subsets::<Recipe>().verify(&t.db).run().await?;
    assert!(report.clean(), "{:?}", report.problems);
    Ok(())
}

/// `insert(..).returning()` reads the document back on the primary when
/// what the insert owed changed it after the write (here: the recipe's
/// subset, kept from comments that were there first), whatever the
/// client's read preference (before: a secondary read, and `NotFound`
/// after a successful insert where the secondary lagged).
#[tokio::test]
async fn an_insert_returning_reads_back_on_the_primary() -> docrel::Result<()> {
    let t = TestDb::new("cp_returning").await?;
    let ann = User { id: ObjectId::new(), name: "Ann".into() };
    User::repo(&t.db).insert(&ann).await?;
    let early = Comment { id: ObjectId::new(), recipe: 9, author: Some(ann.id), author_name: None, at: 1 };
    Comment::repo(&t.db).insert(&early).await?;
    let (_client, db, sent) = crate::watched(&t, "readPreference=secondaryPreferred").await?;
    let recipe = Recipe::repo(&db).insert(&Recipe { id: 9, newest: vec![] }).returning().await?;
    assert_eq!(recipe.newest.len(), 1, "the kept subset, as stored: {recipe:?}");
    let sent = sent.lock().unwrap().clone();
    let reads: Vec<&(String, docrel::bson::Document)> =
        sent.iter().filter(|(name, c)| name == "find" && c.get_str("find").ok() == Some("cp_recipes")).collect();
    assert!(!reads.is_empty(), "the insert read its document back: {sent:?}");
    for (_, command) in reads {
        let mode = command.get_document("$readPreference").ok().and_then(|r| r.get_str("mode").ok());
        assert_ne!(mode, Some("secondaryPreferred"), "the read-back goes to the primary: {command}");
    }
    Ok(())
}
