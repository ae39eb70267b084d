//! Issue 40: no N+1 inside docrel. A rename whose copies subset summaries
//! carry in many parents costs the same number of round trips whatever
//! the number of parents: the parents' subsets are rebuilt a page at a
//! time, not one by one. Summaries read back with the raw driver.

use crate::raw;
use docrel::bson::{oid::ObjectId, Bson};
use docrel::testing::TestDb;
use docrel::{Document, View};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "rt_users")]
struct User {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "rt_comments")]
struct Comment {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Recipe)]
    recipe: i32,
    #[reference(to = User)]
    author: ObjectId,
    #[denormalize(from = User::name, via = author)]
    author_name: String,
    at: i64,
}

#[derive(View, Serialize, Deserialize, Debug, Clone)]
#[view(of = Comment)]
struct CommentLine {
    #[serde(rename = "_id")]
    id: ObjectId,
    author_name: String,
    at: i64,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "rt_recipes")]
struct Recipe {
    #[serde(rename = "_id")]
    id: i32,
    #[embed(max = 5, subset_of = Comment, sort = "-at")]
    newest: Vec<CommentLine>,
}

/// The commands of a rename of a user whose comments are in the newest-5
/// lists of `parents` recipes (and another user's too), after checking
/// every list carries the new name.
async fn rename_reaching(parents: i32) -> docrel::Result<Vec<String>> {
    let t = TestDb::new(&format!("rt_rename_{parents}")).await?;
    let (eve, bob) =
        (User { id: ObjectId::new(), name: "Eve".into() }, User { id: ObjectId::new(), name: "Bob".into() });
    User::repo(&t.db).insert_many(&[eve.clone(), bob.clone()]).await?;
    let recipes: Vec<Recipe> = (1..=parents).map(|id| Recipe { id, newest: Vec::new() }).collect();
    Recipe::repo(&t.db).insert_many(&recipes).await?;
    let comment = |recipe, author: &User, at| Comment {
        id: ObjectId::new(),
        recipe,
        author: author.id,
        author_name: String::new(),
        at,
    };
    let comments: Vec<Comment> = (1..=parents)
        .flat_map(|r| [comment(r, &eve, i64::from(r) * 10), comment(r, &bob, i64::from(r) * 10 + 1)])
        .collect();
    Comment::repo(&t.db).insert_many(&comments).await?;

    let mark = t.trips.mark();
    User::repo(&t.db).update_by_id(&eve.id, User::fields().name.set("Eve Adams".to_owned())).await?;
    let commands = t.trips.commands_since(mark);
    for r in 1..=parents {
        let stored = raw(&t, "rt_recipes", r).await.expect("the recipe");
        let names: Vec<&str> = stored
            .get_array("newest")
            .unwrap()
            .iter()
            .filter_map(Bson::as_document)
            .map(|c| c.get_str("author_name").unwrap())
            .collect();
        assert_eq!(names, ["Bob", "Eve Adams"], "recipe {r}");
    }
    Ok(commands)
}

#[tokio::test]
async fn a_rename_reaching_subset_summaries_costs_the_same_for_10_30_and_100_parents() -> docrel::Result<()> {
    let ten = rename_reaching(10).await?;
    assert_eq!(rename_reaching(30).await?, ten, "30 parents against 10");
    assert_eq!(rename_reaching(100).await?, ten, "100 parents against 10");
    println!("a rename reaching 10, 30 or 100 parents: {ten:?}");
    assert!(ten.len() <= 8, "a constant handful of commands: {ten:?}");
    Ok(())
}
