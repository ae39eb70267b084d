//! Issue 40: no N+1 inside docrel. A rename whose copies subset summaries
//! carry in many parents costs the same number of round trips whatever
//! the number of parents, as many as written by hand (the user's comment
//! ids, then one `bulkWrite` of the user, the copies and the summaries by
//! `arrayFilters`: 2): the fan-out, then the summaries rewritten in place
//! in every parent by one `$merge`. Summaries read back with the raw driver.

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
    assert_eq!(ten, ["bulkWrite", "find rt_comments", "update rt_recipes"], "the fan-out, the children, the summaries");
    Ok(())
}

// ---- a cascade into subset children of parents the same delete removes ----------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "rt_cooks")]
struct Cook {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "rt_dishes")]
struct Dish {
    #[serde(rename = "_id")]
    id: i32,
    #[reference(to = Cook, on_delete = cascade)]
    cook: ObjectId,
    #[embed(max = 5, subset_of = Note, sort = "-at")]
    newest: Vec<NoteLine>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "rt_notes")]
struct Note {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Dish, on_delete = cascade)]
    dish: i32,
    at: i64,
}

#[derive(View, Serialize, Deserialize, Debug, Clone)]
#[view(of = Note)]
struct NoteLine {
    #[serde(rename = "_id")]
    id: ObjectId,
    at: i64,
}

/// The commands of deleting a cook with `dishes` dishes of 3 notes each
/// (the cascade: dishes, then their notes), after checking that nothing
/// of theirs is left and that another cook's dish keeps its newest notes.
async fn cascade_reaching(dishes: i32) -> docrel::Result<Vec<String>> {
    let t = TestDb::new(&format!("rt_cascade_{dishes}")).await?;
    let (ann, bo) = (Cook { id: ObjectId::new(), name: "Ann".into() }, Cook { id: ObjectId::new(), name: "Bo".into() });
    Cook::repo(&t.db).insert_many(&[ann.clone(), bo.clone()]).await?;
    let mut all: Vec<Dish> = (1..=dishes).map(|id| Dish { id, cook: ann.id, newest: Vec::new() }).collect();
    all.push(Dish { id: 0, cook: bo.id, newest: Vec::new() });
    Dish::repo(&t.db).insert_many(&all).await?;
    let notes: Vec<Note> = (0..=dishes)
        .flat_map(|d| (0..3).map(move |k| Note { id: ObjectId::new(), dish: d, at: i64::from(d * 10 + k) }))
        .collect();
    Note::repo(&t.db).insert_many(&notes).await?;

    let mark = t.trips.mark();
    assert!(Cook::repo(&t.db).delete_by_id(&ann.id).await?);
    let commands = t.trips.commands_since(mark);
    let (dishes_left, notes_left) =
        (t.db.collection::<docrel::bson::Document>("rt_dishes"), t.db.collection::<docrel::bson::Document>("rt_notes"));
    let left = (
        dishes_left.count_documents(docrel::bson::doc! {}).await.expect("count"),
        notes_left.count_documents(docrel::bson::doc! {}).await.expect("count"),
    );
    assert_eq!(left, (1, 3), "only Bo's dish and its notes are left");
    let kept = raw(&t, "rt_dishes", 0).await.expect("Bo's dish");
    assert_eq!(kept.get_array("newest").unwrap().len(), 3, "Bo's dish keeps its newest notes");
    Ok(commands)
}

#[tokio::test]
async fn a_cascade_rebuilds_no_subset_of_a_parent_it_deletes() -> docrel::Result<()> {
    let ten = cascade_reaching(10).await?;
    assert_eq!(cascade_reaching(30).await?, ten, "30 dishes against 10");
    println!("deleting a cook with 10 or 30 dishes: {ten:?}");
    // A rebuild of a dish's newest notes reads its counter with
    // `findAndModify` or `update`s the dish: none is sent.
    assert!(!ten.iter().any(|c| c.starts_with("findAndModify") || c == "update rt_dishes"), "{ten:?}");
    Ok(())
}
