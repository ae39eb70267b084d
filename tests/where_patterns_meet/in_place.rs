//! Issue 40: the summaries a rename rewrites in place (one `$merge` into
//! every parent, guarded by the version each child records of its source)
//! stay true whatever runs beside them. Seeded histories of workers that
//! rename the two users (each rename racing the others), insert comments,
//! move them between recipes, change their date (a rebuild), their author
//! (a refresh) or delete them; afterwards, read with the raw driver, every
//! copy equals its user's name and every recipe keeps exactly its 3 newest
//! comments with their current fields.

use docrel::bson::{doc, oid::ObjectId, Bson, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::{Document, View};
use futures::TryStreamExt;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "ip_users")]
struct User {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "ip_comments")]
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
#[document(collection = "ip_recipes")]
struct Recipe {
    #[serde(rename = "_id")]
    id: i32,
    #[embed(max = 3, subset_of = Comment, sort = "-at")]
    newest: Vec<CommentLine>,
}

const RECIPES: i32 = 4;
const WORKERS: u64 = 6;
const OPS: usize = 30;

/// One worker's history: `OPS` operations chosen by `seed`.
async fn worker(db: docrel::mongodb::Database, seed: u64, users: [ObjectId; 2]) -> docrel::Result<()> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let comments = Comment::repo(&db);
    let mut mine: Vec<ObjectId> = Vec::new();
    for k in 0..OPS {
        let user = users[rng.random_range(0..2)];
        let pick = |rng: &mut ChaCha8Rng, mine: &[ObjectId]| mine[rng.random_range(0..mine.len())];
        match rng.random_range(0..10) {
            0..=2 => {
                let name = format!("u{seed}.{k}");
                User::repo(&db).update_by_id(&user, User::fields().name.set(name)).await?;
            }
            3..=5 => {
                let c = Comment {
                    id: ObjectId::new(),
                    recipe: rng.random_range(0..RECIPES),
                    author: user,
                    author_name: String::new(),
                    at: rng.random_range(0..50),
                };
                comments.insert(&c).await?;
                mine.push(c.id);
            }
            6 if !mine.is_empty() => {
                let c = pick(&mut rng, &mine);
                comments.update_by_id(&c, Comment::fields().at.set(rng.random_range(0..50))).await?;
            }
            7 if !mine.is_empty() => {
                let c = pick(&mut rng, &mine);
                comments.update_by_id(&c, Comment::fields().recipe.set(rng.random_range(0..RECIPES))).await?;
            }
            8 if !mine.is_empty() => {
                let c = pick(&mut rng, &mine);
                comments.update_by_id(&c, Comment::fields().author.set(user)).await?;
            }
            9 if !mine.is_empty() => {
                let c = mine.swap_remove(rng.random_range(0..mine.len()));
                comments.delete_by_id(&c).await?;
            }
            _ => {}
        }
    }
    Ok(())
}

async fn all(t: &TestDb, collection: &str) -> Vec<BsonDoc> {
    let cursor = t.db.collection::<BsonDoc>(collection).find(doc! {}).await.expect("find");
    cursor.try_collect().await.expect("read")
}

/// What is wrong with the stored state: copies off their user, subsets
/// off the 3 newest comments of their recipe.
async fn violations(t: &TestDb) -> Vec<String> {
    let (users, comments, recipes) =
        (all(t, "ip_users").await, all(t, "ip_comments").await, all(t, "ip_recipes").await);
    let mut out = Vec::new();
    let name_of = |id: &Bson| users.iter().find(|u| u.get("_id") == Some(id)).and_then(|u| u.get("name").cloned());
    for c in &comments {
        if c.get("author_name").cloned() != name_of(c.get("author").unwrap()) {
            out.push(format!("comment copy stale: {c}"));
        }
    }
    for r in &recipes {
        let mut children: Vec<&BsonDoc> = comments.iter().filter(|c| c.get("recipe") == r.get("_id")).collect();
        children.sort_by_key(|c| (std::cmp::Reverse(c.get_i64("at").unwrap()), c.get_object_id("_id").unwrap()));
        let want: Vec<Bson> = children
            .iter()
            .take(3)
            .map(|c| Bson::Document(doc! {"_id": c.get("_id").unwrap(), "author_name": c.get("author_name").unwrap(), "at": c.get("at").unwrap()}))
            .collect();
        let have = r.get_array("newest").cloned().unwrap_or_default();
        if have != want {
            out.push(format!("recipe {} keeps {have:?}, its 3 newest are {want:?}", r.get("_id").unwrap()));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summaries_rewritten_in_place_stay_true_beside_every_other_write() -> docrel::Result<()> {
    for seed in 1..=4_u64 {
        let t = TestDb::new(&format!("ip_history_{seed}")).await?;
        let users = [ObjectId::new(), ObjectId::new()];
        let named: Vec<User> = users.iter().map(|id| User { id: *id, name: "first".into() }).collect();
        User::repo(&t.db).insert_many(&named).await?;
        let recipes: Vec<Recipe> = (0..RECIPES).map(|id| Recipe { id, newest: Vec::new() }).collect();
        Recipe::repo(&t.db).insert_many(&recipes).await?;
        let workers: Vec<_> = (0..WORKERS).map(|w| tokio::spawn(worker(t.db.clone(), seed * 100 + w, users))).collect();
        for w in workers {
            w.await.expect("worker")?;
        }
        let wrong = violations(&t).await;
        assert!(wrong.is_empty(), "seed {seed}: {wrong:#?}");
        // The recipes keep the versions their summaries were written at.
        let stamped =
            t.db.collection::<BsonDoc>("ip_recipes")
                .count_documents(doc! {"_docrel.subsets.newest.s.author": {"$exists": true}})
                .await
                .expect("count");
        assert!(stamped > 0, "seed {seed}: no recipe was stamped");
    }
    Ok(())
}
