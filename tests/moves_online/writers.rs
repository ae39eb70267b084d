//! The two versions' writers, each in its own OS process with its own
//! registry (`link_only`) and its own seeded sequence of operations. Each
//! keeps a model of what it wrote: a write that returned `Ok` is in it; a
//! write that failed (a fault) is read back with a client no fault targets,
//! since what an error left is what the database holds.

use super::moves;
use docrel::bson::{doc, oid::ObjectId, Bson, Document as BsonDoc};
use docrel::mongodb::Database;
use docrel::{Filter, Update};
use futures::TryStreamExt;
use std::collections::BTreeMap;
use std::time::Duration;

/// A deterministic stream of choices, one per process and seed.
pub struct Dice(pub u64);

impl Dice {
    /// A stream for `seed` and `salt` (never zero: xorshift stays at zero).
    pub fn new(seed: u64, salt: u64) -> Self {
        Dice((seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ salt) | 1)
    }

    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

/// What a writer is told: its database, its seed, its least number of
/// operations, and when to stop after that.
pub struct Orders<'a> {
    pub db: &'a Database,
    /// A client no fault targets, for read-backs.
    pub clean: &'a Database,
    pub seed: u64,
    pub ops: usize,
    pub stopped: &'a dyn Fn() -> bool,
}

impl Orders<'_> {
    fn more(&self, n: usize) -> bool {
        n < self.ops || !(self.stopped)()
    }
}

/// `(id, text)` of each element of a stored post's array.
pub fn elements(post: &BsonDoc) -> Vec<(ObjectId, String)> {
    post.get_array("comments")
        .map(|a| {
            a.iter()
                .filter_map(Bson::as_document)
                .map(|e| (e.get_object_id("_id").unwrap(), e.get_str("text").unwrap_or("").to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

/// The old version: posts of its own, their comments pushed, pulled,
/// edited, and posts deleted. Its model: each live post's `[id, text]`
/// comments.
pub async fn old_writes(o: &Orders<'_>) -> docrel::Result<serde_json::Value> {
    use moves::v1::{Comment, Post};
    docrel::schema::publish(o.db).await?;
    println!("@ready");
    let (repo, f) = (Post::repo(o.db), Post::fields());
    let mut dice = Dice::new(o.seed, 0x01d);
    let mut model: BTreeMap<ObjectId, Vec<(ObjectId, String)>> = BTreeMap::new();
    let comment = |text: String| Comment { id: ObjectId::new(), author: "old".into(), text };
    let (mut n, mut wrote) = (0, 0);
    while o.more(n) {
        n += 1;
        let posts: Vec<ObjectId> = model.keys().copied().collect();
        let pick = (!posts.is_empty()).then(|| posts[dice.below(posts.len())]);
        let (post, written) = match (dice.below(6), pick) {
            (0, _) | (_, None) => {
                let post = Post {
                    id: ObjectId::new(),
                    title: "old".into(),
                    comments: (0..dice.below(3)).map(|i| comment(format!("o{n}.{i}"))).collect(),
                };
                model.insert(post.id, post.comments.iter().map(|c| (c.id, c.text.clone())).collect());
                (post.id, repo.insert(&post).await.map(drop))
            }
            (1 | 2, Some(p)) => {
                let cs: Vec<Comment> = (0..1 + dice.below(2)).map(|i| comment(format!("o{n}.{i}"))).collect();
                model.get_mut(&p).unwrap().extend(cs.iter().map(|c| (c.id, c.text.clone())));
                (p, repo.update_by_id(&p, f.comments.push(cs)).await.map(drop))
            }
            (3, Some(p)) if !model[&p].is_empty() => {
                let gone = model.get_mut(&p).unwrap().remove(0).0;
                (p, repo.update_by_id(&p, Update::raw(doc! {"$pull": {"comments": {"_id": gone}}})).await.map(drop))
            }
            (4, Some(p)) if !model[&p].is_empty() => {
                let text = format!("edited {n}");
                let c = model.get_mut(&p).unwrap().last_mut().unwrap();
                c.1 = text.clone();
                let on = Filter::new(doc! {"_id": p, "comments._id": c.0});
                (p, repo.update_one(on, Update::raw(doc! {"$set": {"comments.$.text": text}})).await.map(drop))
            }
            (5, Some(p)) => {
                model.remove(&p);
                (p, repo.delete_by_id(&p).await.map(drop))
            }
            (_, Some(p)) => (p, Ok(())),
        };
        match written {
            Ok(()) => wrote += 1,
            Err(e) => {
                println!("@error {e}");
                let raw = o.clean.collection::<BsonDoc>("mv_posts").find_one(doc! {"_id": post}).await;
                match raw.expect("read back") {
                    Some(d) => drop(model.insert(post, elements(&d))),
                    None => drop(model.remove(&post)),
                }
            }
        }
    }
    println!("@wrote {wrote}");
    let json: serde_json::Map<String, serde_json::Value> = model
        .iter()
        .map(|(p, cs)| (p.to_hex(), cs.iter().map(|(c, t)| serde_json::json!([c.to_hex(), t])).collect()))
        .collect();
    Ok(json.into())
}

/// The new version: comments of its own on the seeded posts (one, or
/// several of one post in one `insert_many`), edited, moved to another post
/// and deleted; refused before the move is maintained. Its model: each
/// live comment's `[post, text]`.
pub async fn new_writes(o: &Orders<'_>) -> docrel::Result<serde_json::Value> {
    use moves::v2::Comment;
    let seeds: Vec<ObjectId> = o
        .clean
        .collection::<BsonDoc>("mv_posts")
        .find(doc! {"title": "seed"})
        .await
        .expect("find")
        .try_collect::<Vec<BsonDoc>>()
        .await
        .expect("read")
        .iter()
        .map(|d| d.get_object_id("_id").unwrap())
        .collect();
    let (repo, f) = (Comment::repo(o.db), Comment::fields());
    let mut dice = Dice::new(o.seed, 0x2e3);
    let mut model: BTreeMap<ObjectId, (ObjectId, String)> = BTreeMap::new();
    let (mut n, mut refused, mut wrote, mut orphans) = (0, 0, 0, 0);
    let mut posts = Posts::default();
    while o.more(n) {
        n += 1;
        let mine: Vec<ObjectId> = model.keys().copied().collect();
        let pick = (!mine.is_empty()).then(|| mine[dice.below(mine.len())]);
        let seed = seeds[dice.below(seeds.len())];
        let before = model.clone();
        let new =
            |k: usize| Comment { id: ObjectId::new(), post: seed, author: "new".into(), text: format!("n{n}.{k}") };
        let gone = posts.gone(o.clean, n).await;
        let orphan = !gone.is_empty() && dice.below(10) == 0;
        let (touched, written): (Vec<ObjectId>, _) = match (dice.below(6), pick) {
            // A post the old version deleted: the old shape cannot hold a
            // comment of it, so it is refused (a comment written would be
            // in the new shape alone, which M1 names).
            _ if orphan => {
                let c = Comment { post: gone[dice.below(gone.len())], ..new(0) };
                model.insert(c.id, (c.post, c.text.clone()));
                (vec![c.id], repo.insert(&c).await.map(drop))
            }
            (0 | 1, _) | (_, None) => {
                let c = new(0);
                model.insert(c.id, (seed, c.text.clone()));
                (vec![c.id], repo.insert(&c).await.map(drop))
            }
            (2, Some(_)) => {
                let cs: Vec<Comment> = (0..2 + dice.below(2)).map(new).collect();
                model.extend(cs.iter().map(|c| (c.id, (seed, c.text.clone()))));
                (cs.iter().map(|c| c.id).collect(), repo.insert_many(&cs).await.map(drop))
            }
            (3, Some(c)) => {
                model.get_mut(&c).unwrap().1 = format!("edited {n}");
                (vec![c], repo.update_by_id(&c, f.text.set(format!("edited {n}"))).await.map(drop))
            }
            (4, Some(c)) => {
                model.get_mut(&c).unwrap().0 = seed;
                (vec![c], repo.update_by_id(&c, f.post.set(seed)).await.map(drop))
            }
            (_, Some(c)) => {
                model.remove(&c);
                (vec![c], repo.delete_by_id(&c).await.map(drop))
            }
        };
        match written {
            Ok(()) => wrote += 1,
            // Refused until the move is maintained: nothing was written.
            Err(docrel::Error::Invalid { what: docrel::Misuse::MovedWrite, .. }) if orphan => {
                orphans += 1;
                model = before;
            }
            Err(docrel::Error::Invalid { what: docrel::Misuse::Schema, .. }) => {
                refused += 1;
                model = before;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => {
                println!("@error {e}");
                model = before;
                for id in touched {
                    let raw = o.clean.collection::<BsonDoc>("mv_comments").find_one(doc! {"_id": id}).await;
                    match raw.expect("read back") {
                        Some(d) => drop(
                            model.insert(id, (d.get_object_id("post").unwrap(), d.get_str("text").unwrap().to_owned())),
                        ),
                        None => drop(model.remove(&id)),
                    }
                }
            }
        }
    }
    println!("@refused {refused}");
    println!("@wrote {wrote}");
    println!("@orphans {orphans}");
    let json: serde_json::Map<String, serde_json::Value> =
        model.iter().map(|(c, (p, t))| (c.to_hex(), serde_json::json!([p.to_hex(), t]))).collect();
    Ok(json.into())
}

/// The posts the old version wrote that the new one has seen, read every
/// tenth operation: those gone since are where a comment cannot go.
#[derive(Default)]
struct Posts {
    seen: std::collections::BTreeSet<ObjectId>,
    gone: Vec<ObjectId>,
}

impl Posts {
    async fn gone(&mut self, clean: &Database, n: usize) -> Vec<ObjectId> {
        if n % 10 == 1 {
            let live: Vec<BsonDoc> = clean
                .collection::<BsonDoc>("mv_posts")
                .find(doc! {"title": {"$ne": "seed"}})
                .projection(doc! {"_id": 1})
                .await
                .expect("find")
                .try_collect()
                .await
                .expect("read");
            let live: std::collections::BTreeSet<ObjectId> =
                live.iter().filter_map(|d| d.get_object_id("_id").ok()).collect();
            self.gone = self.seen.difference(&live).copied().collect();
            self.seen.extend(live);
        }
        self.gone.clone()
    }
}
