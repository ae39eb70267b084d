//! Case 6: a delete whose `on_delete` rules reach three collections: an
//! author pulled from the posts it edits and the anthologies listing it,
//! its comments cascaded. docrel on MongoDB 8.0: the delete, the read that
//! the author is still gone, and every rule in one `bulkWrite`. By hand, on
//! 8.0: the delete, then the three statements in one `bulkWrite`.

use super::{err, ratio, Bench, Opts};
use docrel::bson::{doc, oid::ObjectId};
use docrel::mongodb::options::{DeleteManyModel, UpdateManyModel, WriteModel};
use docrel::mongodb::{Database, Namespace};
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "del_authors")]
struct Author {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "del_posts")]
struct Post {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Author, on_delete = pull)]
    editor: Option<ObjectId>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "del_anthologies")]
struct Anthology {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = Author, max = 100, on_delete = pull)]
    authors: Vec<ObjectId>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "del_comments")]
struct Comment {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Author, on_delete = cascade)]
    author: ObjectId,
}

/// Authors for every round of every way, each editing 10 posts, in 2
/// anthologies, with 20 comments; a round deletes the author of its number.
async fn seed(db: &Database, authors: usize) -> docrel::Result<Vec<ObjectId>> {
    let all: Vec<Author> = (0..authors).map(|i| Author { id: ObjectId::new(), name: format!("a{i}") }).collect();
    Author::repo(db).insert_many(&all).await?;
    let ids: Vec<ObjectId> = all.iter().map(|a| a.id).collect();
    let posts: Vec<Post> =
        ids.iter().flat_map(|a| (0..10).map(|_| Post { id: ObjectId::new(), editor: Some(*a) })).collect();
    Post::repo(db).insert_many(&posts).await?;
    let anthologies: Vec<Anthology> =
        ids.chunks(50).flat_map(|c| (0..2).map(|_| Anthology { id: ObjectId::new(), authors: c.to_vec() })).collect();
    Anthology::repo(db).insert_many(&anthologies).await?;
    let comments: Vec<Comment> =
        ids.iter().flat_map(|a| (0..20).map(|_| Comment { id: ObjectId::new(), author: *a })).collect();
    Comment::repo(db).insert_many(&comments).await?;
    Post::repo(db).ensure_indexes().await?;
    Anthology::repo(db).ensure_indexes().await?;
    Comment::repo(db).ensure_indexes().await?;
    Ok(ids)
}

/// By hand on MongoDB 8.0: the delete, then every rule in one bulkWrite.
async fn hand(db: &Database, id: ObjectId) -> docrel::Result<()> {
    let deleted = db.collection::<Author>("del_authors").delete_one(doc! {"_id": id}).await.map_err(err)?;
    assert_eq!(deleted.deleted_count, 1);
    let ns = |c: &str| Namespace::new(db.name(), c);
    let posts = UpdateManyModel::builder()
        .namespace(ns("del_posts"))
        .filter(doc! {"editor": id})
        .update(doc! {"$unset": {"editor": ""}})
        .build();
    let anthologies = UpdateManyModel::builder()
        .namespace(ns("del_anthologies"))
        .filter(doc! {"authors": id})
        .update(doc! {"$pull": {"authors": id}})
        .build();
    let comments = DeleteManyModel::builder().namespace(ns("del_comments")).filter(doc! {"author": id}).build();
    let rules: Vec<WriteModel> = vec![posts.into(), anthologies.into(), comments.into()];
    db.client().bulk_write(rules).await.map_err(err)?;
    Ok(())
}

pub(crate) async fn delete_case(b: &Bench, o: &Opts) -> docrel::Result<()> {
    // Rounds: a warm-up of each way, 2 per timed run, the counted one of each.
    let ids = std::sync::Arc::new(seed(&b.timed, 2 * o.runs + 8).await?);
    let case = "delete_author_rules_in_3_collections";
    let docrel_ids = ids.clone();
    let (d, h) = b
        .pair(
            case,
            1,
            move |db, r| {
                let id = docrel_ids[r];
                async move {
                    assert!(Author::repo(&db).delete_by_id(&id).await?);
                    Ok(())
                }
            },
            move |db, r| {
                let id = ids[r];
                async move { hand(&db, id).await }
            },
        )
        .await;
    ratio(case, d, h, None);
    Ok(())
}
