//! Case 9 (issue 40): a rename of a user whose comments (with a copy of
//! the name) sit in the newest-5 lists of 10, 30 and 100 recipes. docrel:
//! `update_by_id` of the name, which rewrites the comments' copies and the
//! summaries carrying them. By hand on MongoDB 8.0: the user's comment ids
//! (one `find`), then one `bulkWrite` of the user, the comments' copies
//! and the summaries (`arrayFilters` on the summaries' `_id`).

use super::{err, ratio, Bench};
use docrel::bson::{doc, oid::ObjectId, Document as BsonDoc};
use docrel::mongodb::options::{UpdateManyModel, UpdateOneModel, WriteModel};
use docrel::mongodb::{Database, Namespace};
use docrel::{Document, View};
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "rn_users")]
struct User {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "rn_comments")]
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
#[document(collection = "rn_recipes")]
struct Recipe {
    #[serde(rename = "_id")]
    id: i32,
    #[embed(max = 5, subset_of = Comment, sort = "-at")]
    newest: Vec<CommentLine>,
}

/// A user with a comment in each of `parents` recipes (numbered from
/// `first`), beside another user's: the user renamed.
async fn seed(db: &Database, first: i32, parents: i32) -> docrel::Result<ObjectId> {
    let (eve, bob) =
        (User { id: ObjectId::new(), name: "Eve".into() }, User { id: ObjectId::new(), name: "Bob".into() });
    User::repo(db).insert_many(&[eve.clone(), bob.clone()]).await?;
    let recipes: Vec<Recipe> = (first..first + parents).map(|id| Recipe { id, newest: Vec::new() }).collect();
    Recipe::repo(db).insert_many(&recipes).await?;
    let comment = |recipe, author: &User, at| Comment {
        id: ObjectId::new(),
        recipe,
        author: author.id,
        author_name: String::new(),
        at,
    };
    let comments: Vec<Comment> = (first..first + parents)
        .flat_map(|r| [comment(r, &eve, i64::from(r) * 10), comment(r, &bob, i64::from(r) * 10 + 1)])
        .collect();
    Comment::repo(db).insert_many(&comments).await?;
    Ok(eve.id)
}

/// By hand on MongoDB 8.0: the user's comments, then one bulkWrite.
async fn hand(db: &Database, user: ObjectId, name: &str) -> docrel::Result<()> {
    let comments = db.collection::<BsonDoc>("rn_comments");
    let mine: Vec<BsonDoc> = comments
        .find(doc! {"author": user})
        .projection(doc! {"_id": 1})
        .await
        .map_err(err)?
        .try_collect()
        .await
        .map_err(err)?;
    let ids: Vec<ObjectId> = mine.iter().filter_map(|c| c.get_object_id("_id").ok()).collect();
    let ns = |c: &str| Namespace::new(db.name(), c);
    let renamed = UpdateOneModel::builder()
        .namespace(ns("rn_users"))
        .filter(doc! {"_id": user})
        .update(doc! {"$set": {"name": name}})
        .build();
    let copies = UpdateManyModel::builder()
        .namespace(ns("rn_comments"))
        .filter(doc! {"author": user})
        .update(doc! {"$set": {"author_name": name}})
        .build();
    let summaries = UpdateManyModel::builder()
        .namespace(ns("rn_recipes"))
        .filter(doc! {"newest._id": {"$in": &ids}})
        .update(doc! {"$set": {"newest.$[s].author_name": name}})
        .array_filters(vec![docrel::bson::Bson::Document(doc! {"s._id": {"$in": &ids}})])
        .build();
    let all: Vec<WriteModel> = vec![renamed.into(), copies.into(), summaries.into()];
    db.client().bulk_write(all).await.map_err(err)?;
    Ok(())
}

pub(crate) async fn rename_case(b: &Bench) -> docrel::Result<()> {
    for parents in [10, 30, 100] {
        let user = seed(&b.timed, parents * 1000, parents).await?;
        let case = format!("rename_reaching_subsets_in_{parents}_parents");
        let (d, h) = b
            .pair(
                &case,
                parents as usize,
                move |db, r| async move {
                    let name = User::fields().name.set(format!("Eve {r}"));
                    User::repo(&db).update_by_id(&user, name).await?;
                    Ok(())
                },
                move |db, r| async move { hand(&db, user, &format!("Eve {r}")).await },
            )
            .await;
        ratio(&case, d, h, None);
    }
    Ok(())
}
