//! Issue 39, an array of child references becomes a parent reference on the
//! children (one-to-many → one-to-squillions): `posts.comment_ids` of the
//! old version, `comments.post` of the new one. The array and the parent
//! references are one relation kept in two places while the move runs.
//!
//! This binary plays the new version (`link_only`); a second OS process,
//! started from it, plays the old one: it publishes its schema and the
//! data, then writes the array (and the comments) while the move runs, is
//! cut, and resumes.

use docrel::admin::moves;
use docrel::bson::{doc, oid::ObjectId, Bson, Document as BsonDoc};
use docrel::schema::stored::{self, MoveState};
use docrel::testing::TestDb;
use docrel::{Error, Filter};
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

const V1: &str = concat!(module_path!(), "::v1");
const V2: &str = concat!(module_path!(), "::v2");
const DB_VARIABLE: &str = "DOCREL_MOVES_REFS_DB";
const MODE_VARIABLE: &str = "DOCREL_MOVES_REFS_MODE";
const SEED_VARIABLE: &str = "DOCREL_MOVES_REFS_SEED";
/// The seeds the fleet test runs (`1..9` or `3`): each draws both versions'
/// writes and the moment the first run of the move is cut.
const SEEDS_VARIABLE: &str = "DOCREL_MOVES_REFS_SEEDS";
/// The seeds run with fail points (`DOCREL_MOVES_REFS_FAULT_SEEDS`, as the
/// above; 2): on every client of the test's database, both versions' and
/// the move's.
const FAULT_SEEDS_VARIABLE: &str = "DOCREL_MOVES_REFS_FAULT_SEEDS";
const FAULTS_VARIABLE: &str = "DOCREL_MOVES_REFS_FAULTS";
const LEASE: Duration = Duration::from_millis(400);
/// The collection where the test tells the old version to stop.
const STOP: &str = "mr_stop";

mod faults;
use faults::fleet::{run_move, History};
use faults::{client, raw, Seeded};

/// The old version: a post holds the ids of its comments.
pub mod v1 {
    use docrel::bson::oid::ObjectId;
    use docrel::Document;
    use serde::{Deserialize, Serialize};

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mr_comments")]
    pub struct Comment {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub text: String,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mr_posts")]
    pub struct Post {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub title: String,
        // No `on_delete`: its pull is a plain multi-document write, which
        // meeting a post an open transaction wrote (a mirror) deadlocks the
        // embedded test server (`tests/history/gate.rs`), not MongoDB.
        #[reference(many, to = Comment, max = 40)]
        pub comment_ids: Vec<ObjectId>,
    }
}

/// The new version: a comment refers to its post, which keeps its newest
/// three.
pub mod v2 {
    use docrel::bson::oid::ObjectId;
    use docrel::Document;
    use serde::{Deserialize, Serialize};

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mr_comments", moved_from = Post::comment_ids)]
    pub struct Comment {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        #[parent_ref(to = Post, sort = "-_id", on_delete = pull)]
        pub post: Option<ObjectId>,
        pub text: String,
    }

    #[derive(docrel::View, Serialize, Deserialize, Debug, Clone)]
    #[view(of = Comment)]
    pub struct Line {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub text: String,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mr_posts")]
    pub struct Post {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub title: String,
        #[embed(max = 3, subset_of = Comment, sort = "-_id")]
        pub recent: Vec<Line>,
    }
}

/// This process is the new version, whichever test runs first.
fn new_version() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| docrel::testing::link_only(&[V2]));
}

fn err(e: docrel::mongodb::error::Error) -> Error {
    Error::driver("test", "mr", e)
}

/// The old version's data: six posts of three comments, a comment no post
/// names, and an id naming no comment.
async fn seed(db: &docrel::mongodb::Database) -> docrel::Result<()> {
    docrel::schema::publish(db).await?;
    for p in 0..6 {
        let comments: Vec<v1::Comment> =
            (0..3).map(|c| v1::Comment { id: ObjectId::new(), text: format!("p{p} c{c}") }).collect();
        v1::Comment::repo(db).insert_many(&comments).await?;
        let mut ids: Vec<ObjectId> = comments.iter().map(|c| c.id).collect();
        if p == 0 {
            ids.push(ObjectId::new());
        }
        v1::Post::repo(db).insert(&v1::Post { id: ObjectId::new(), title: format!("p{p}"), comment_ids: ids }).await?;
    }
    v1::Comment::repo(db).insert(&v1::Comment { id: ObjectId::new(), text: "named by none".into() }).await?;
    Ok(())
}

/// One write of the old version, drawn by `n`.
async fn old_write(db: &docrel::mongodb::Database, n: &mut Seeded) -> docrel::Result<()> {
    let posts: Vec<ObjectId> = raw(db, "mr_posts").await?.iter().filter_map(|p| p.get_object_id("_id").ok()).collect();
    let comments: Vec<ObjectId> =
        raw(db, "mr_comments").await?.iter().filter_map(|c| c.get_object_id("_id").ok()).collect();
    let (posts_repo, comments_repo) = (v1::Post::repo(db), v1::Comment::repo(db));
    let post = posts[n.below(posts.len())];
    let comment = comments[n.below(comments.len())];
    match n.below(7) {
        0 | 1 => {
            let c = v1::Comment { id: ObjectId::new(), text: "old".into() };
            comments_repo.insert(&c).await?;
            posts_repo.update_by_id(&post, v1::Post::fields().comment_ids.push([c.id])).await?;
        }
        2 => {
            let ids = raw(db, "mr_posts").await?;
            let held = ids.iter().find(|p| p.get_object_id("_id").ok() == Some(post));
            let first = held.and_then(|p| p.get_array("comment_ids").ok()?.first()?.as_object_id());
            if let Some(id) = first {
                posts_repo.update_by_id(&post, v1::Post::fields().comment_ids.pull(&id)).await?;
            }
        }
        3 => {
            comments_repo.update_by_id(&comment, v1::Comment::fields().text.set("edited by old".into())).await?;
        }
        4 => {
            comments_repo.replace(&v1::Comment { id: comment, text: "replaced by old".into() }).await?;
        }
        5 => {
            comments_repo.delete_by_id(&comment).await?;
        }
        _ => {
            let c = v1::Comment { id: ObjectId::new(), text: "first".into() };
            comments_repo.insert(&c).await?;
            posts_repo.insert(&v1::Post { id: ObjectId::new(), title: "new".into(), comment_ids: vec![c.id] }).await?;
        }
    }
    Ok(())
}

/// The old version, in its own process: `seed` publishes its schema and
/// data; `write` writes until the test inserts into [`STOP`], then prints
/// how many writes it made.
#[tokio::test]
#[ignore = "run by `the_ids_become_parent_references_while_both_versions_write`"]
async fn old_version() -> docrel::Result<()> {
    let Ok(name) = std::env::var(DB_VARIABLE) else { return Ok(()) };
    docrel::testing::link_only(&[V1]);
    docrel::schema::set_lease(LEASE);
    let faulted = std::env::var(FAULTS_VARIABLE).is_ok();
    // The fail points target the clients named after the database.
    let db = client(&name, if faulted { &name } else { "mr-old" }).await?.database(&name);
    let clean = client(&name, "mr-janitor").await?.database(&name);
    match std::env::var(MODE_VARIABLE).as_deref() {
        Ok("seed") => return seed(&db).await,
        Ok("replace") => {
            // A whole comment written by a version whose type has no parent
            // reference keeps the one the move gave it.
            let posts = raw(&db, "mr_posts").await?;
            let comments = raw(&db, "mr_comments").await?;
            let exists = |id: &ObjectId| comments.iter().any(|c| c.get_object_id("_id").ok() == Some(*id));
            let mut held = posts.iter().flat_map(|p| p.get_array("comment_ids").into_iter().flatten());
            let id = held.find_map(|i| i.as_object_id().filter(exists)).expect("a post names a comment");
            v1::Comment::repo(&db).replace(&v1::Comment { id, text: "replaced at the end".into() }).await?;
            println!("@replaced {id}");
            return Ok(());
        }
        _ => {}
    }
    let seed: u64 = std::env::var(SEED_VARIABLE).ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    let (mut n, mut writes, until) = (Seeded(7 + seed * 101), 0u64, Instant::now() + Duration::from_secs(90));
    let marker = clean.collection::<BsonDoc>(STOP);
    while Instant::now() < until && marker.find_one(doc! {}).await.map_err(err)?.is_none() {
        match old_write(&db, &mut n).await {
            Ok(()) | Err(Error::NotFound { .. }) => writes += 1,
            // A fault: the write may or may not have landed.
            Err(_) if faulted => {}
            Err(e) => return Err(e),
        }
    }
    println!("@writes {writes}");
    Ok(())
}

fn old_version_process(db: &str, mode: &str) -> std::process::Command {
    let mut command = std::process::Command::new(std::env::current_exe().expect("this test binary"));
    command.args(["old_version", "--exact", "--ignored", "--nocapture"]).env(DB_VARIABLE, db).env(MODE_VARIABLE, mode);
    command
}

/// One write of the new version, drawn by `n`: a new comment of a post, a
/// comment moved to another post, or deleted. Refused, with nothing
/// written, until the move is maintained.
async fn new_write(db: &docrel::mongodb::Database, n: &mut Seeded) -> docrel::Result<()> {
    let posts: Vec<ObjectId> = raw(db, "mr_posts").await?.iter().filter_map(|p| p.get_object_id("_id").ok()).collect();
    let comments: Vec<ObjectId> =
        raw(db, "mr_comments").await?.iter().filter_map(|c| c.get_object_id("_id").ok()).collect();
    let repo = v2::Comment::repo(db);
    let post = posts[n.below(posts.len())];
    let written = match n.below(4) {
        0 | 1 => {
            repo.insert(&v2::Comment { id: ObjectId::new(), post: Some(post), text: "new".into() }).await.map(drop)
        }
        2 => {
            let moved = v2::Comment::fields().post.set(Some(post));
            repo.update_by_id(&comments[n.below(comments.len())], moved).await.map(drop)
        }
        _ => repo.delete_by_id(&comments[n.below(comments.len())]).await.map(drop),
    };
    match written {
        // Before the move is maintained (announced, or not yet applied).
        Err(Error::Invalid { message, .. })
            if message.contains("is moving") || message.contains("no move under way") =>
        {
            Ok(())
        }
        Err(Error::NotFound { .. }) => Ok(()),
        other => other,
    }
}

/// The relation, kept in two places, says the same in both: each id an
/// array holds names a comment that refers to that post (or no comment);
/// each comment that refers to a post is named by its array; no id is in
/// two arrays; each post's newest three are its newest three comments.
async fn assert_one_relation(db: &docrel::mongodb::Database) -> docrel::Result<bool> {
    let posts = raw(db, "mr_posts").await?;
    let comments = raw(db, "mr_comments").await?;
    let parent: HashMap<ObjectId, Option<ObjectId>> =
        comments.iter().map(|c| (c.get_object_id("_id").unwrap(), c.get_object_id("post").ok())).collect();
    let (mut named, mut broken) = (HashSet::new(), Vec::new());
    for p in &posts {
        let id = p.get_object_id("_id").unwrap();
        for held in p.get_array("comment_ids").unwrap() {
            let held = held.as_object_id().expect("an id");
            if !named.insert(held) {
                broken.push((held, format!("{held} is in two arrays")));
            }
            match parent.get(&held) {
                Some(refers) if *refers != Some(id) => {
                    broken.push((held, format!("comment {held} is in post {id}'s array and refers to {refers:?}")))
                }
                _ => {}
            }
        }
    }
    for (c, refers) in &parent {
        if let Some(p) = refers {
            if !named.contains(c) {
                broken.push((*c, format!("comment {c} refers to {p}, whose array does not name it")));
            }
            assert!(posts.iter().any(|q| q.get_object_id("_id").ok() == Some(*p)), "{c} refers to a gone post");
        }
    }
    if !broken.is_empty() {
        // The reconciles find the arrays holding an id by element, through
        // the multikey index on `comment_ids`: where the embedded server's
        // index lost a key (it does now and then under concurrent
        // transactions), that is the server's, and the history runs again.
        if faults::index_lost(db, ("mr_posts", "comment_ids"), broken.iter().map(|(id, _)| *id)).await? {
            println!("@server the multikey index lost a key: {broken:?}");
            return Ok(false);
        }
        panic!("{} violation(s): {broken:?}", broken.len());
    }
    for p in &posts {
        let id = p.get_object_id("_id").unwrap();
        let mut mine: Vec<ObjectId> = parent.iter().filter(|(_, r)| **r == Some(id)).map(|(c, _)| *c).collect();
        mine.sort();
        mine.reverse();
        mine.truncate(3);
        let recent: Vec<ObjectId> = p
            .get_array("recent")
            .map(|r| r.iter().map(|l| l.as_document().unwrap().get_object_id("_id").unwrap()).collect())
            .unwrap_or_default();
        assert_eq!(recent, mine, "post {id}'s newest three");
    }
    Ok(true)
}

/// Before the move is switched the new version reads every comment with
/// the parent its post's array gives it, whatever was copied: by the post,
/// by its own id, or all of them.
async fn assert_reads(db: &docrel::mongodb::Database) -> docrel::Result<()> {
    let posts = raw(db, "mr_posts").await?;
    let repo = v2::Comment::repo(db);
    for p in &posts {
        let id = p.get_object_id("_id").unwrap();
        let mut want: Vec<ObjectId> =
            p.get_array("comment_ids").unwrap().iter().filter_map(|i| i.as_object_id()).collect();
        let existing: HashSet<ObjectId> =
            raw(db, "mr_comments").await?.iter().map(|c| c.get_object_id("_id").unwrap()).collect();
        want.retain(|c| existing.contains(c));
        want.sort();
        let mut read: Vec<ObjectId> =
            repo.find(Filter::new(doc! {"post": id})).to_vec().await?.iter().map(|c| c.id).collect();
        read.sort();
        assert_eq!(read, want, "the comments of post {id}, read by the new version");
        assert_eq!(repo.count(Filter::new(doc! {"post": id})).await?, want.len() as u64);
        if let Some(first) = want.first() {
            assert_eq!(repo.require(first).await?.post, Some(id), "one comment by its id");
        }
    }
    let all = repo.find(Filter::all()).to_vec().await?;
    assert!(all.iter().any(|c| c.post.is_none()), "the comment no array names has no parent");
    Ok(())
}

/// The seeds `variable` names, as `a..b` or one number (`default` when
/// unset; none when empty).
fn seeds(variable: &str, default: u64) -> std::ops::Range<u64> {
    let Ok(given) = std::env::var(variable) else { return default..default + 1 };
    let parse = |s: &str| s.trim().parse::<u64>().ok();
    match given.split_once("..") {
        Some((a, b)) => parse(a).unwrap_or(1)..parse(b).unwrap_or(1),
        None => parse(&given).map_or(0..0, |s| s..s + 1),
    }
}

/// The invariant of the move under a fleet, for each seed: the array and
/// the parent references hold one relation, and the new version's newest
/// three are true, after a run cut at a moment the seed draws and resumed
/// while both versions write.
#[tokio::test]
async fn the_ids_become_parent_references_while_both_versions_write() -> docrel::Result<()> {
    new_version();
    let plain = seeds(SEEDS_VARIABLE, 1).map(|s| (s, false));
    for (seed, faulted) in plain.chain(seeds(FAULT_SEEDS_VARIABLE, 2).map(|s| (s, true))) {
        println!("seed {seed}{}", if faulted { ", with fail points" } else { "" });
        if !fleet(seed, faulted).await? {
            // The server's own index explains it (above): once more.
            assert!(fleet(seed, faulted).await?, "seed {seed}: the server lost an index key twice");
        }
    }
    Ok(())
}

async fn fleet(seed: u64, faulted: bool) -> docrel::Result<bool> {
    let t = TestDb::new("mr_fleet").await?;
    docrel::schema::set_lease_for(&t.db, LEASE);
    let seeded = old_version_process(t.db.name(), "seed").output().expect("the old version seeds");
    assert!(seeded.status.success(), "{}", String::from_utf8_lossy(&seeded.stderr));
    docrel::schema::obey(&t.db).await?;
    let (program, declared) = (stored::program(), stored::program_moves());
    assert_eq!(declared.len(), 1, "v2 declares one move");

    // The plan, from the attributes and the data.
    let plan = moves::plan(&t.db, &program, &declared, false).await?.remove(0);
    let text = plan.to_text();
    assert!(plan.refusals.is_empty(), "{text}");
    assert!(text.contains("old shape: one-to-many"), "{text}");
    assert!(text.contains(": array of child references → a parent reference on the children"), "{text}");
    assert!(text.contains("to move: 19 id(s) of 6 parent(s)"), "{text}");
    assert!(text.contains("dangling: 1 id(s)") && text.contains("unnamed: 1 `mr_comments` document(s)"), "{text}");
    let counts = plan.counts.clone().expect("counted");
    assert_eq!((counts.parents, counts.elements, counts.dangling, counts.orphans), (6, 19, 1, 1), "{text}");
    assert!(text.contains("index build: mr_posts {comment_ids: 1}"), "{text}");

    // The new version reads through the arrays before anything moved, and
    // its writes of the children wait for the move.
    assert_reads(&t.db).await?;
    let early = v2::Comment { id: ObjectId::new(), post: None, text: "early".into() };
    let refused = v2::Comment::repo(&t.db).insert(&early).await.expect_err("no move under way");
    assert!(refused.to_string().contains("no move under way"), "{refused}");

    let mut old = old_version_process(t.db.name(), "write");
    if faulted {
        old.env(FAULTS_VARIABLE, "1");
    }
    let old = old
        .env(SEED_VARIABLE, seed.to_string())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the old version writes");
    let history = History {
        db: &t.db,
        program: &program,
        declared: &declared,
        lease: LEASE,
        seed,
        faulted,
        janitor: "mr-janitor",
        stop: STOP,
    };
    let stdout = run_move(&history, old, |db, n| Box::pin(new_write(db, n))).await?;
    let writes: u64 = stdout.lines().find_map(|l| l.strip_prefix("@writes ")?.parse().ok()).expect("it counted");
    assert!(faulted || writes > 10, "the old version wrote during the move: {writes}");
    assert_eq!(stored::active_moves(&t.db).first().map(|m| m.state), Some(MoveState::Switched));
    if !assert_one_relation(&t.db).await? {
        return Ok(false);
    }
    let linked = raw(&t.db, "mr_comments").await?.iter().filter(|c| c.contains_key("post")).count();
    assert!(linked > 15, "the comments got their parents: {linked}");

    let replaced = old_version_process(t.db.name(), "replace").output().expect("the old version replaces");
    let said = String::from_utf8_lossy(&replaced.stdout);
    assert!(replaced.status.success(), "{said}\n{}", String::from_utf8_lossy(&replaced.stderr));
    let id: ObjectId = said.lines().find_map(|l| l.strip_prefix("@replaced ")?.parse().ok()).expect("it said which");
    let comment = raw(&t.db, "mr_comments").await?.into_iter().find(|c| c.get_object_id("_id").ok() == Some(id));
    let comment = comment.expect("still there");
    assert_eq!(comment.get_str("text").unwrap(), "replaced at the end");
    assert!(comment.get_object_id("post").is_ok(), "the replace kept its parent: {comment}");
    if !assert_one_relation(&t.db).await? {
        return Ok(false);
    }

    // Switched: the new version reads the parent references as stored.
    for p in raw(&t.db, "mr_posts").await? {
        let id = p.get_object_id("_id").unwrap();
        let read = v2::Comment::repo(&t.db).count(Filter::new(doc! {"post": id})).await?;
        let held = p.get_array("comment_ids").unwrap().iter().filter(|i| matches!(i, Bson::ObjectId(_))).count();
        assert!(read as usize <= held, "post {id}: {read} read, {held} held");
    }

    // Retired, with the array dropped, once the old version's lease ran out.
    tokio::time::sleep(LEASE * 2).await;
    let retired = moves::retire(&t.db, &declared, true, LEASE, || false, |_| {}).await?;
    assert!(retired.iter().all(|r| r.complete), "{retired:?}");
    assert!(raw(&t.db, "mr_posts").await?.iter().all(|p| !p.contains_key("comment_ids")));
    Ok(true)
}

/// Mid-move, whatever was copied (one comment with its parent already, one
/// with a parent its post's array no longer gives it), the new version
/// reads the parents the arrays give, in every state before the switch.
#[tokio::test]
async fn reads_before_the_switch_follow_the_arrays() -> docrel::Result<()> {
    new_version();
    let t = TestDb::new("mr_reads").await?;
    let seeded = old_version_process(t.db.name(), "seed").output().expect("the old version seeds");
    assert!(seeded.status.success(), "{}", String::from_utf8_lossy(&seeded.stderr));
    let posts = raw(&t.db, "mr_posts").await?;
    let ids = |p: &BsonDoc| -> Vec<ObjectId> {
        p.get_array("comment_ids").unwrap().iter().filter_map(|i| i.as_object_id()).collect()
    };
    let (first, second) = (&posts[0], &posts[1]);
    let comments = t.db.collection::<BsonDoc>("mr_comments");
    let copied = doc! {"$set": {"post": first.get_object_id("_id").unwrap()}};
    comments.update_one(doc! {"_id": ids(first)[0]}, copied).await.map_err(err)?;
    let stale = doc! {"$set": {"post": first.get_object_id("_id").unwrap()}};
    comments.update_one(doc! {"_id": ids(second)[0]}, stale).await.map_err(err)?;
    let spec = stored::program_moves().remove(0);
    for state in [MoveState::Announced, MoveState::Maintained, MoveState::Moved] {
        let active = stored::ActiveMove {
            spec: spec.clone(),
            field: "comment_ids".into(),
            bound: Some(40),
            old: stored::OldArray::Ids,
            required: false,
            state,
            since: docrel::bson::DateTime::now(),
            change: "test".into(),
        };
        stored::publish_moves(&t.db, &[active]).await?;
        docrel::schema::obey(&t.db).await?;
        assert_reads(&t.db).await?;
        let by_parent = docrel::Filter::new(doc! {"post": {"$in": [first.get_object_id("_id").unwrap()]}});
        let read = v2::Comment::repo(&t.db).find(by_parent).to_vec().await?;
        assert_eq!(read.len(), 3, "{state}: the first post's three comments, by `$in`");
    }
    Ok(())
}
