//! Issue 39: a move of `posts.comments` into a collection of its own, run
//! online while the old version (embedding the comments) and the new one
//! (writing comment documents) write in two other OS processes, the run cut
//! off mid-way (its future dropped, as a crash drops it) and resumed. Then,
//! read with the raw driver: both shapes hold the same elements, each once
//! (M1); every element a process wrote and did not delete, with its last
//! text, is there, and none it deleted (M2); the new version's subset holds
//! each post's newest comments.

use docrel::bson::{doc, oid::ObjectId, Bson, Document as BsonDoc};
use docrel::schema::stored::{self, MoveState};
use docrel::testing::TestDb;
use docrel::{Filter, Update};
use futures::TryStreamExt;
use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;
use std::time::Duration;

mod moves;

const DB_VARIABLE: &str = "DOCREL_MOVES_ONLINE_DB";
const ROLE_VARIABLE: &str = "DOCREL_MOVES_ONLINE_ROLE";
const STOP_VARIABLE: &str = "DOCREL_MOVES_ONLINE_STOP";
const LEASE: Duration = Duration::from_millis(300);
const SEEDS: usize = 24;

/// A deterministic stream of choices, one per process.
struct Dice(u64);

impl Dice {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

/// One version's writes, in its own process, until the stop file exists;
/// then its model of what it wrote, as JSON on a line of its own.
#[tokio::test]
#[ignore = "run by `a_move_runs_online_while_both_versions_write`"]
async fn writer() -> docrel::Result<()> {
    let (Ok(name), Ok(role), Ok(stop)) =
        (std::env::var(DB_VARIABLE), std::env::var(ROLE_VARIABLE), std::env::var(STOP_VARIABLE))
    else {
        return Ok(());
    };
    docrel::testing::link_only(&[if role == "old" { moves::V1 } else { moves::V2 }]);
    docrel::schema::set_lease(LEASE);
    let db = docrel::connect_from_env().await?.database(&name);
    let stopped = || std::path::Path::new(&stop).exists();
    let model = if role == "old" { old_writes(&db, stopped).await? } else { new_writes(&db, stopped).await? };
    println!("@model {model}");
    Ok(())
}

/// The old version: posts of its own, their comments pushed, pulled, edited,
/// and posts deleted. Its model: each live post's `[id, text]` comments.
async fn old_writes(db: &docrel::mongodb::Database, stopped: impl Fn() -> bool) -> docrel::Result<serde_json::Value> {
    use moves::v1::{Comment, Post};
    docrel::schema::publish(db).await?;
    println!("@ready");
    let (repo, f) = (Post::repo(db), Post::fields());
    let mut dice = Dice(0x9e37_79b9_7f4a_7c15);
    let mut model: BTreeMap<ObjectId, Vec<(ObjectId, String)>> = BTreeMap::new();
    let comment = |text: String| Comment { id: ObjectId::new(), author: "old".into(), text };
    let (mut n, mut wrote) = (0, 0);
    while !stopped() {
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
                let c = comment(format!("o{n}"));
                model.get_mut(&p).unwrap().push((c.id, c.text.clone()));
                (p, repo.update_by_id(&p, f.comments.push([c])).await.map(drop))
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
        if written.is_ok() {
            wrote += 1;
        }
        if let Err(e) = written {
            // What an error left is read back: the array is what old readers see.
            println!("@error {e}");
            let raw = db.collection::<BsonDoc>("mv_posts").find_one(doc! {"_id": post}).await.expect("read back");
            match raw {
                Some(d) => drop(model.insert(post, elements(&d).into_iter().map(|e| (e.0, e.1)).collect())),
                None => drop(model.remove(&post)),
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

/// The new version: comments of its own on the seeded posts, edited, moved
/// to another post and deleted; refused before the move is maintained. Its
/// model: each live comment's `[post, text]`.
async fn new_writes(db: &docrel::mongodb::Database, stopped: impl Fn() -> bool) -> docrel::Result<serde_json::Value> {
    use moves::v2::Comment;
    let seeds: Vec<ObjectId> = db
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
    let repo = Comment::repo(db);
    let f = Comment::fields();
    let mut dice = Dice(0x2545_f491_4f6c_dd1d);
    let mut model: BTreeMap<ObjectId, (ObjectId, String)> = BTreeMap::new();
    let (mut n, mut refused, mut wrote) = (0, 0, 0);
    while !stopped() {
        n += 1;
        let mine: Vec<ObjectId> = model.keys().copied().collect();
        let pick = (!mine.is_empty()).then(|| mine[dice.below(mine.len())]);
        let seed = seeds[dice.below(seeds.len())];
        let before = model.clone();
        let written = match (dice.below(5), pick) {
            (0 | 1, _) | (_, None) => {
                let c = Comment { id: ObjectId::new(), post: seed, author: "new".into(), text: format!("n{n}") };
                model.insert(c.id, (seed, c.text.clone()));
                repo.insert(&c).await.map(drop)
            }
            (2, Some(c)) => {
                model.get_mut(&c).unwrap().1 = format!("edited {n}");
                repo.update_by_id(&c, f.text.set(format!("edited {n}"))).await.map(drop)
            }
            (3, Some(c)) => {
                model.get_mut(&c).unwrap().0 = seed;
                repo.update_by_id(&c, f.post.set(seed)).await.map(drop)
            }
            (_, Some(c)) => {
                model.remove(&c);
                repo.delete_by_id(&c).await.map(drop)
            }
        };
        match written {
            Ok(()) => wrote += 1,
            // Refused until the move is maintained: nothing was written.
            Err(docrel::Error::Invalid { what: docrel::Misuse::Schema, .. }) => {
                refused += 1;
                model = before;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => {
                println!("@error {e}");
                model = before;
                for id in model.keys().copied().collect::<Vec<_>>() {
                    let raw = db.collection::<BsonDoc>("mv_comments").find_one(doc! {"_id": id}).await.expect("read");
                    match raw {
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
    let json: serde_json::Map<String, serde_json::Value> =
        model.iter().map(|(c, (p, t))| (c.to_hex(), serde_json::json!([p.to_hex(), t]))).collect();
    Ok(json.into())
}

/// `(id, text)` of each element of a stored post's array.
fn elements(post: &BsonDoc) -> Vec<(ObjectId, String, BsonDoc)> {
    post.get_array("comments")
        .map(|a| {
            a.iter()
                .filter_map(Bson::as_document)
                .map(|e| (e.get_object_id("_id").unwrap(), e.get_str("text").unwrap_or("").to_owned(), e.clone()))
                .collect()
        })
        .unwrap_or_default()
}

fn spawn(db: &str, role: &str, stop: &std::path::Path) -> std::process::Child {
    std::process::Command::new(std::env::current_exe().expect("this test binary"))
        .args(["writer", "--exact", "--ignored", "--nocapture"])
        .env(DB_VARIABLE, db)
        .env(ROLE_VARIABLE, role)
        .env(STOP_VARIABLE, stop)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("a writer starts")
}

/// The `@model` line of a writer that ended, its errors, and how many of
/// its writes landed.
fn finish(child: std::process::Child) -> (serde_json::Value, Vec<String>, u64) {
    let out = child.wait_with_output().expect("the writer ends");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "a writer failed:\n{text}");
    let model = text.lines().find_map(|l| l.strip_prefix("@model ")).expect("its model");
    let errors = text.lines().filter_map(|l| l.strip_prefix("@error ")).map(str::to_owned).collect();
    let wrote = text.lines().find_map(|l| l.strip_prefix("@wrote ")).and_then(|n| n.parse().ok()).unwrap_or(0);
    (serde_json::from_str(model).expect("JSON"), errors, wrote)
}

/// Writes the stop file when dropped.
struct StopFile(std::path::PathBuf);

impl Drop for StopFile {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.0, "");
    }
}

async fn all(t: &TestDb, collection: &str) -> Vec<BsonDoc> {
    let coll = t.db.collection::<BsonDoc>(collection);
    coll.find(doc! {}).sort(doc! {"_id": 1}).await.expect("find").try_collect().await.expect("read")
}

#[tokio::test]
async fn a_move_runs_online_while_both_versions_write() -> docrel::Result<()> {
    docrel::testing::link_only(&[moves::V2]);
    let t = TestDb::new("mv_online").await?;
    let seeds: Vec<BsonDoc> = (0..SEEDS)
        .map(|i| {
            let comments: Vec<BsonDoc> =
                (0..3).map(|k| doc! {"_id": ObjectId::new(), "author": "seed", "text": format!("s{i}.{k}")}).collect();
            doc! {"_id": ObjectId::new(), "title": "seed", "comments": comments}
        })
        .collect();
    t.db.collection::<BsonDoc>("mv_posts").insert_many(seeds).await.expect("seed");
    let stop = std::env::temp_dir().join(format!("docrel_mv_online_{}", std::process::id()));
    let _ = std::fs::remove_file(&stop);
    // Whatever happens to this test, the writers stop.
    let _stops = StopFile(stop.clone());
    let mut old = spawn(t.db.name(), "old", &stop);
    let ready = std::io::BufReader::new(old.stdout.as_mut().expect("its output"))
        .lines()
        .map_while(Result::ok)
        .any(|l| l == "@ready");
    assert!(ready, "the old version published its schema");
    let new = spawn(t.db.name(), "new", &stop);
    tokio::time::sleep(Duration::from_millis(500)).await;

    let e = stored::read_export(&docrel::schema::export()).expect("our export");
    // Cut off mid-way, its future dropped wherever it was; then resumed.
    let cut = tokio::time::timeout(
        Duration::from_millis(900),
        docrel::admin::moves::run(&t.db, &e.types, &e.moves, LEASE, || false, |_| {}),
    )
    .await;
    assert!(cut.is_err(), "the first run was cut off before it finished");
    let reports = docrel::admin::moves::run(&t.db, &e.types, &e.moves, LEASE, || false, |_| {}).await;
    let reports = reports.expect("the resumed run ends");
    assert!(reports[0].switched() && reports[0].resumed, "{reports:?}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    std::fs::write(&stop, "").expect("stop file");
    let (old_model, old_errors, old_wrote) = finish(old);
    let (new_model, new_errors, new_wrote) = finish(new);
    let _ = std::fs::remove_file(&stop);
    assert!(old_errors.is_empty() && new_errors.is_empty(), "{old_errors:?} {new_errors:?}");
    // Both wrote while the move ran: the checks below are about their writes.
    assert!(old_wrote > 0 && new_wrote > 0, "writes: old {old_wrote}, new {new_wrote}");
    assert_eq!(stored::load_moves(&t.db).await?[0].state, MoveState::Switched);
    let marks = t.db.collection::<BsonDoc>("_docrel_move_marks").count_documents(doc! {}).await.expect("count");
    assert_eq!(marks, 0, "the copy's marks are gone once it is switched");
    check(&t, &old_model, &new_model).await;

    // Retired once no old version runs (the old writer's lease lapses
    // first), the old arrays dropped: the documents are all there is.
    let documents = all(&t, "mv_comments").await;
    tokio::time::sleep(LEASE * 2).await;
    let file = std::env::temp_dir().join(format!("docrel_mv_online_{}.json", std::process::id()));
    std::fs::write(&file, docrel::schema::export()).expect("the export");
    let mut console = docrel::admin::Console::captured();
    let args = [
        "docrel",
        "--db",
        t.db.name(),
        "schema",
        "retire",
        "--file",
        file.to_str().unwrap(),
        "--drop-old",
        "--lease",
        "0.3",
    ];
    let exit = docrel::admin::run(args, &mut console, std::future::pending()).await;
    let _ = std::fs::remove_file(&file);
    assert_eq!(exit, docrel::admin::Exit::Ok, "{}", console.errors());
    assert!(console.errors().contains("mv_posts.comments → mv_comments: complete"), "{}", console.errors());
    retired_shape(&t, &documents).await?;
    let again = docrel::admin::moves::retire(&t.db, &e.moves, true, LEASE, || false, |_| {}).await?;
    assert!(again[0].complete && again[0].already, "retiring again changes nothing: {again:?}");
    Ok(())
}

/// After retirement: no post holds the old array, the stored schema no
/// longer lists it, the move and its lease rows are gone, the documents
/// are unchanged, and a write of the new version touches them only.
async fn retired_shape(t: &TestDb, documents: &[BsonDoc]) -> docrel::Result<()> {
    let posts = all(t, "mv_posts").await;
    assert!(posts.iter().all(|p| !p.contains_key("comments")), "the old arrays are dropped");
    let stored_posts = stored::load(&t.db).await?.into_iter().find(|s| s.collection == "mv_posts").expect("stored");
    assert!(stored_posts.relations.iter().all(|r| r.field != "comments"), "{:?}", stored_posts.relations);
    assert!(stored::load_moves(&t.db).await?.is_empty());
    let leases = t.db.collection::<BsonDoc>(stored::LEASES_COLLECTION).count_documents(doc! {}).await.unwrap();
    assert_eq!(leases, 0, "no lease rows once no move runs");
    assert_eq!(all(t, "mv_comments").await, documents, "the documents are what the move made");
    docrel::schema::obey(&t.db).await?;
    let post = posts[0].get_object_id("_id").unwrap();
    let comment = moves::v2::Comment { id: ObjectId::new(), post, author: "eve".into(), text: "after".into() };
    moves::v2::Comment::repo(&t.db).insert(&comment).await?;
    let after = t.db.collection::<BsonDoc>("mv_posts").find_one(doc! {"_id": post}).await.unwrap().unwrap();
    assert!(!after.contains_key("comments"), "nothing mirrors into the retired array");
    Ok(())
}

/// M1, M2 and the subset, on what is stored.
async fn check(t: &TestDb, old_model: &serde_json::Value, new_model: &serde_json::Value) {
    let posts = all(t, "mv_posts").await;
    let docs = all(t, "mv_comments").await;
    let mut by_post: HashMap<ObjectId, Vec<&BsonDoc>> = HashMap::new();
    for d in &docs {
        by_post.entry(d.get_object_id("post").unwrap()).or_default().push(d);
    }
    let mut seen: HashMap<ObjectId, ObjectId> = HashMap::new();
    for p in &posts {
        let id = p.get_object_id("_id").unwrap();
        let mut array: Vec<(ObjectId, String)> = elements(p).into_iter().map(|e| (e.0, e.1)).collect();
        for (c, _) in &array {
            assert!(seen.insert(*c, id).is_none(), "M1: comment {c} is in two arrays");
        }
        let mut collection: Vec<(ObjectId, String)> = by_post
            .remove(&id)
            .unwrap_or_default()
            .iter()
            .map(|d| (d.get_object_id("_id").unwrap(), d.get_str("text").unwrap().to_owned()))
            .collect();
        array.sort();
        collection.sort();
        assert_eq!(array, collection, "M1: post {id}'s shapes differ");
        // The subset: the newest three by `_id`.
        let newest: Vec<Bson> = collection.iter().rev().take(3).map(|(c, _)| Bson::ObjectId(*c)).collect();
        let recent: Vec<Bson> = p
            .get_array("recent")
            .map(|r| r.iter().map(|s| s.as_document().unwrap().get("_id").unwrap().clone()).collect())
            .unwrap_or_default();
        if !newest.is_empty() {
            assert_eq!(recent, newest, "the subset of post {id}");
        }
    }
    assert!(by_post.is_empty(), "M1: documents of posts that are gone: {:?}", by_post.keys());
    for (post, comments) in old_model.as_object().unwrap() {
        let p = posts
            .iter()
            .find(|d| d.get_object_id("_id").unwrap().to_hex() == *post)
            .expect("M2: the old version's post");
        let mut want: Vec<(String, String)> = comments
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c[0].as_str().unwrap().to_owned(), c[1].as_str().unwrap().to_owned()))
            .collect();
        let mut have: Vec<(String, String)> = elements(p).into_iter().map(|e| (e.0.to_hex(), e.1)).collect();
        want.sort();
        have.sort();
        assert_eq!(have, want, "M2: the old version's post {post}");
    }
    for (comment, v) in new_model.as_object().unwrap() {
        let d = docs
            .iter()
            .find(|d| d.get_object_id("_id").unwrap().to_hex() == *comment)
            .expect("M2: the new version's comment");
        assert_eq!(d.get_object_id("post").unwrap().to_hex(), v[0].as_str().unwrap(), "M2: its post");
        assert_eq!(d.get_str("text").unwrap(), v[1].as_str().unwrap(), "M2: its text");
    }
}
