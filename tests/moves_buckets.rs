//! Issue 39, an embedded array becomes bucket documents by count (the
//! bucket pattern): `mb_posts.comments` of the old version, pages of four
//! comments in `mb_pages` in the new one. While both shapes are kept, the
//! pages are the array's slices: page k holds comments 4(k-1)+1 to 4k.
//!
//! This binary plays the new version (`link_only`); a second OS process,
//! started from it, plays the old one: it publishes its schema and the
//! data, then pushes, pops, sets and replaces comments while the move
//! runs, is cut, and resumes.

use docrel::admin::{moves, Exit};
use docrel::bson::{doc, oid::ObjectId, Bson, Document as BsonDoc};
use docrel::schema::stored::{self, MoveState, StoredMove, StoredType};
use docrel::testing::TestDb;
use docrel::{Error, Filter, Misuse, Update};
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

const V1: &str = concat!(module_path!(), "::v1");
const V2: &str = concat!(module_path!(), "::v2");
const DB_VARIABLE: &str = "DOCREL_MOVES_BUCKETS_DB";
const MODE_VARIABLE: &str = "DOCREL_MOVES_BUCKETS_MODE";
const SEED_VARIABLE: &str = "DOCREL_MOVES_BUCKETS_SEED";
/// The seeds the fleet test runs without fail points (`1..9` or `3,5`; 1).
const SEEDS_VARIABLE: &str = "DOCREL_MOVES_BUCKETS_SEEDS";
/// The seeds run with fail points on every client of the test's database
/// (both versions' and the move's), as the above; 2.
const FAULT_SEEDS_VARIABLE: &str = "DOCREL_MOVES_BUCKETS_FAULT_SEEDS";
const FAULTS_VARIABLE: &str = "DOCREL_MOVES_BUCKETS_FAULTS";
const LEASE: Duration = Duration::from_millis(400);
/// Posts no writer touches during the move: only the copy pages theirs.
const COLD: std::ops::Range<i64> = 100..110;
/// Comments per page.
const SIZE: usize = 4;
/// The collection where the test tells the old version to stop.
const STOP: &str = "mb_stop";

mod faults;
#[path = "moves_buckets/windows.rs"]
mod windows;
use faults::fleet::{run_move, History};
use faults::{admin, client, raw, seeds, Seeded};

/// The old version: a post embeds its comments.
pub mod v1 {
    use docrel::Document;
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
    pub struct Comment {
        pub by: String,
        pub text: String,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mb_posts")]
    pub struct Post {
        #[serde(rename = "_id")]
        pub id: i64,
        pub title: String,
        #[embed(max = 30)]
        pub comments: Vec<Comment>,
    }

    #[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
    pub struct Reading {
        pub id: String,
        pub t: docrel::bson::DateTime,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mb_sensors")]
    pub struct Sensor {
        #[serde(rename = "_id")]
        pub id: i64,
        #[embed(max = 60)]
        pub readings: Vec<Reading>,
    }
}

/// The new version: the comments are in pages of four.
pub mod v2 {
    use docrel::bson::oid::ObjectId;
    use docrel::Document;
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
    pub struct Comment {
        pub by: String,
        pub text: String,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mb_pages", moved_from = Post::comments)]
    pub struct CommentPage {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        #[parent_ref(to = Post)]
        pub post: i64,
        pub page: i32,
        pub count: i32,
        #[bucket(size = 4)]
        pub comments: Vec<Comment>,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mb_posts")]
    pub struct Post {
        #[serde(rename = "_id")]
        pub id: i64,
        pub title: String,
    }

    #[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
    pub struct Reading {
        pub id: String,
        pub t: docrel::bson::DateTime,
    }

    /// An hour of a sensor's readings, three a bucket.
    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mb_hours", moved_from = Sensor::readings)]
    pub struct Hour {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        #[parent_ref(to = Sensor)]
        pub sensor: i64,
        pub start: docrel::bson::DateTime,
        pub count: i32,
        #[bucket(by = t, window = "hour", size = 3)]
        pub readings: Vec<Reading>,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mb_sensors")]
    pub struct Sensor {
        #[serde(rename = "_id")]
        pub id: i64,
    }
}

/// This process is the new version, whichever test runs first.
fn new_version() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| docrel::testing::link_only(&[V2]));
}

fn err(e: docrel::mongodb::error::Error) -> Error {
    Error::driver("test", "mb", e)
}

/// Both moves: the comments into pages, the readings into hours.
fn declared() -> Vec<StoredMove> {
    stored::program_moves()
        .into_iter()
        .filter(|m| ["mb_pages", "mb_hours"].contains(&m.to.collection.as_str()))
        .collect()
}

fn comment(text: String) -> v1::Comment {
    v1::Comment { by: "old".into(), text }
}

/// The old version's data: eight posts with 0 to 10 comments.
async fn seed(db: &docrel::mongodb::Database) -> docrel::Result<()> {
    docrel::schema::publish(db).await?;
    for p in 0..8 {
        let comments = (0..(p * 3 % 11)).map(|i| comment(format!("seed {p}.{i}"))).collect();
        v1::Post::repo(db).insert(&v1::Post { id: p, title: format!("p{p}"), comments }).await?;
    }
    windows::seed(db).await
}

/// The ids of the posts writers may touch.
async fn posts(db: &docrel::mongodb::Database) -> docrel::Result<Vec<i64>> {
    let all = raw(db, "mb_posts").await?;
    Ok(all.iter().filter_map(|p| p.get_i64("_id").ok()).filter(|p| !COLD.contains(p)).collect())
}

/// One write of the old version, drawn by `n`: comments pushed, the first
/// popped (every page after it shifts), the array set or the post
/// replaced, a post inserted (`next` numbers them and the comments),
/// deleted or renamed.
async fn old_write(db: &docrel::mongodb::Database, n: &mut Seeded, next: &mut i64) -> docrel::Result<()> {
    *next += 1;
    if n.below(3) == 0 {
        return windows::old_write(db, n, *next).await;
    }
    let posts = posts(db).await?;
    let repo = v1::Post::repo(db);
    let f = v1::Post::fields();
    let (op, p) = (n.below(9), posts.get(n.below(posts.len())).copied());
    let fresh = |k: usize, next: i64| (0..k).map(|i| comment(format!("old {next}.{i}"))).collect::<Vec<_>>();
    let Some(p) = p.filter(|_| op != 6) else {
        let post = v1::Post { id: *next, title: "new".into(), comments: fresh(n.below(6), *next) };
        return repo.insert(&post).await.map(drop);
    };
    match op {
        0..=2 => repo.update_by_id(&p, f.comments.push(fresh(1 + n.below(2), *next))).await.map(drop),
        3 => repo.update_by_id(&p, Update::raw(doc! {"$pop": {"comments": -1}})).await.map(drop),
        4 => repo.update_by_id(&p, f.comments.set(fresh(n.below(7), *next))).await.map(drop),
        5 => repo.delete_by_id(&p).await.map(drop),
        7 => repo.update_by_id(&p, f.title.set("renamed".into())).await.map(drop),
        _ => repo
            .replace(&v1::Post { id: p, title: "replaced".into(), comments: fresh(n.below(9), *next) })
            .await
            .map(drop),
    }
}

/// The old version, in its own process: `seed` publishes its schema and
/// data; `write` writes until the test inserts into [`STOP`], then prints
/// how many writes it made.
#[tokio::test]
#[ignore = "run by `the_comments_become_pages_while_both_versions_write`"]
async fn old_version() -> docrel::Result<()> {
    let Ok(name) = std::env::var(DB_VARIABLE) else { return Ok(()) };
    docrel::testing::link_only(&[V1]);
    docrel::schema::set_lease(LEASE);
    let faulted = std::env::var(FAULTS_VARIABLE).is_ok();
    // The fail points target the clients named after the database.
    let db = client(&name, if faulted { &name } else { "mb-old" }).await?.database(&name);
    let clean = client(&name, "mb-janitor").await?.database(&name);
    if std::env::var(MODE_VARIABLE).as_deref() == Ok("seed") {
        return seed(&db).await;
    }
    let seed: u64 = std::env::var(SEED_VARIABLE).ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    let (mut n, mut writes, until) = (Seeded(5 + seed * 97), 0u64, Instant::now() + Duration::from_secs(90));
    let mut next = 1_000;
    let marker = clean.collection::<BsonDoc>(STOP);
    while Instant::now() < until && marker.find_one(doc! {}).await.map_err(err)?.is_none() {
        match old_write(&db, &mut n, &mut next).await {
            Ok(()) | Err(Error::NotFound { .. }) | Err(Error::EmbedFull { .. }) => writes += 1,
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

/// Seeds a new database with the old version in its own process.
async fn seeded(name: &str) -> docrel::Result<TestDb> {
    let t = TestDb::new(name).await?;
    docrel::schema::set_lease_for(&t.db, LEASE);
    let seeded = old_version_process(t.db.name(), "seed").output().expect("the old version seeds");
    assert!(seeded.status.success(), "{}", String::from_utf8_lossy(&seeded.stderr));
    docrel::schema::obey(&t.db).await?;
    Ok(t)
}

/// One write of the new version, drawn by `n`: a comment appended (or two
/// at once), a page deleted, or its pages read. Refused, with nothing
/// written, until the move is maintained (a read: until it is moved).
async fn new_write(db: &docrel::mongodb::Database, n: &mut Seeded) -> docrel::Result<()> {
    if n.below(3) == 0 {
        return taken(windows::new_write(db, n).await);
    }
    let posts = posts(db).await?;
    let Some(&p) = posts.get(n.below(posts.len())) else { return Ok(()) };
    let pages = v2::CommentPage::rels().comments;
    let mine = |i: usize| v2::Comment { by: "new".into(), text: format!("new {}.{i}", ObjectId::new()) };
    let repo = v2::CommentPage::repo(db);
    let on_page = |page: i32| Filter::new(doc! {"post": p, "page": page});
    let written = match n.below(6) {
        0..=2 => pages.append(db, &p, &mine(0)).await.map(drop),
        3 => pages.append_many(db, &[(p, mine(0)), (p, mine(1))]).await.map(drop),
        4 => repo.delete_many(on_page(1 + n.below(3) as i32)).await.map(drop),
        // A read: refused until every page is made.
        _ => pages.all(db, &p).await.map(drop),
    };
    taken(written)
}

/// A write of the new version as the history takes it: a refusal that
/// wrote nothing is no failure.
fn taken(written: docrel::Result<()>) -> docrel::Result<()> {
    match written {
        // Before the move is maintained (announced, or not yet applied).
        Err(Error::Invalid { message, .. })
            if message.contains("is moving") || message.contains("no move under way") =>
        {
            Ok(())
        }
        // The post was deleted meanwhile: the old array cannot hold it.
        Err(Error::Invalid { what: Misuse::MovedWrite, message }) if message.contains("is not stored") => Ok(()),
        Err(Error::NotFound { .. }) | Err(Error::EmbedFull { .. }) => Ok(()),
        other => other,
    }
}

/// The two shapes say the same: each post's pages, in page order, are
/// its array's slices of four, numbered from 1, with their counts; a post
/// without comments has no page, and no page belongs to a post that is
/// gone. Every comment is held once (each text is written once). Returns
/// the number of pages.
async fn assert_pages(db: &docrel::mongodb::Database) -> docrel::Result<usize> {
    let posts = raw(db, "mb_posts").await?;
    let mut pages: HashMap<i64, Vec<BsonDoc>> = HashMap::new();
    let all = raw(db, "mb_pages").await?;
    for page in &all {
        pages.entry(page.get_i64("post").expect("an i64 post")).or_default().push(page.clone());
    }
    let mut broken = Vec::new();
    let mut texts = HashSet::new();
    for post in &posts {
        let id = post.get_i64("_id").unwrap();
        let array = post.get_array("comments").cloned().unwrap_or_default();
        let mut have = pages.remove(&id).unwrap_or_default();
        have.sort_by_key(|p| p.get_i32("page").unwrap_or(0));
        let want: Vec<(i32, i32, Vec<Bson>)> =
            array.chunks(SIZE).enumerate().map(|(i, c)| (i as i32 + 1, c.len() as i32, c.to_vec())).collect();
        let got: Vec<(i32, i32, Vec<Bson>)> = have
            .iter()
            .map(|p| {
                let c = p.get_array("comments").cloned().unwrap_or_default();
                (p.get_i32("page").unwrap_or(-1), p.get_i32("count").unwrap_or(-1), c)
            })
            .collect();
        if want != got {
            broken.push(format!("post {id} holds {array:?}, its pages are {got:?}"));
        }
        for c in &array {
            let text = c.as_document().and_then(|d| d.get_str("text").ok()).unwrap_or_default().to_owned();
            if !texts.insert(text.clone()) {
                broken.push(format!("comment {text:?} is held twice"));
            }
        }
    }
    broken.extend(pages.values().flatten().map(|p| format!("{p} belongs to no post")));
    assert!(broken.is_empty(), "{} violation(s): {broken:#?}", broken.len());
    Ok(all.len())
}

/// The invariant of the move under a fleet, for each seed: the posts'
/// arrays and the pages hold the same comments in the same order, after a
/// run cut at a moment the seed draws and resumed while both versions write.
#[tokio::test]
async fn the_comments_become_pages_while_both_versions_write() -> docrel::Result<()> {
    new_version();
    let plain = seeds(SEEDS_VARIABLE, "1").into_iter().map(|s| (s, false));
    for (seed, faulted) in plain.chain(seeds(FAULT_SEEDS_VARIABLE, "2").into_iter().map(|s| (s, true))) {
        println!("seed {seed}{}", if faulted { ", with fail points" } else { "" });
        fleet(seed, faulted).await?;
    }
    Ok(())
}

/// What both moves' plans say, from the attributes and the data.
async fn assert_plans(
    db: &docrel::mongodb::Database,
    program: &[StoredType],
    declared: &[StoredMove],
) -> docrel::Result<()> {
    let plans = moves::plan(db, program, declared, false).await?;
    let text: String = plans.iter().map(moves::MovePlan::to_text).collect();
    assert!(plans.iter().all(|p| p.refusals.is_empty()), "{text}");
    assert!(text.contains(": embedded array → bucket documents, by count or by time window"), "{text}");
    // 7 posts hold 3, 6, 9, 1, 4, 7 and 10 comments: 40, in 1+2+3+1+1+2+3 = 13 pages.
    assert!(text.contains("to move: 40 element(s) of 7 parent(s) into 13 page(s)"), "{text}");
    assert!(text.contains("bucket, 4 element(s) of one `Post` per page"), "{text}");
    assert!(text.contains("bound: `mb_posts.comments` keeps its bound of 30"), "{text}");
    // 3 sensors hold 5, 2 and 7 readings in four hours.
    assert!(text.contains("to move: 14 element(s) of 3 parent(s) into "), "{text}");
    assert!(text.contains("bucket by time, the elements of one `Sensor` whose `t` falls in a window of 3600000 ms"));
    Ok(())
}

/// Posts and sensors no writer touches: only the copy pages theirs.
async fn insert_cold(db: &docrel::mongodb::Database) -> docrel::Result<()> {
    let post = |p: i64| {
        let comments: Vec<BsonDoc> = (0..6).map(|i| doc! {"by": "cold", "text": format!("cold {p}.{i}")}).collect();
        doc! {"_id": p, "title": "cold", "comments": comments}
    };
    db.collection::<BsonDoc>("mb_posts").insert_many(COLD.map(post)).await.map_err(err)?;
    let sensor = |s: i64| {
        let t = |i: i64| docrel::bson::DateTime::from_millis(1_700_000_000_000 + i * 60_000);
        let readings: Vec<BsonDoc> = (0..5).map(|i| doc! {"id": format!("cold {s}.{i}"), "t": t(i)}).collect();
        doc! {"_id": s, "readings": readings}
    };
    db.collection::<BsonDoc>("mb_sensors").insert_many(COLD.map(sensor)).await.map_err(err)?;
    Ok(())
}

async fn fleet(seed: u64, faulted: bool) -> docrel::Result<()> {
    let t = seeded("mb_fleet").await?;
    let (program, declared) = (stored::program(), declared());
    assert_eq!(declared.len(), 2, "v2 declares the moves of the comments and the readings");
    assert_plans(&t.db, &program, &declared).await?;
    insert_cold(&t.db).await?;

    // Before the move: the pages are neither read nor written.
    let pages = v2::CommentPage::rels().comments;
    let early = pages.all(&t.db, &1).await.expect_err("no move under way");
    assert!(early.to_string().contains("no move under way"), "{early}");
    let early = v2::Comment { by: "new".into(), text: "early".into() };
    let refused = pages.append(&t.db, &1, &early).await.expect_err("no move under way");
    assert!(refused.to_string().contains("no move under way") && refused.to_string().contains("nothing was written"));

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
        janitor: "mb-janitor",
        stop: STOP,
    };
    let stdout = run_move(&history, old, |db, n| Box::pin(new_write(db, n))).await?;
    let writes: u64 = stdout.lines().find_map(|l| l.strip_prefix("@writes ")?.parse().ok()).expect("it counted");
    assert!(faulted || writes > 10, "the old version wrote during the move: {writes}");
    let states: Vec<MoveState> = stored::active_moves(&t.db).iter().map(|m| m.state).collect();
    assert_eq!(states, [MoveState::Switched, MoveState::Switched]);
    let held = (assert_pages(&t.db).await?, windows::assert_windows(&t.db).await?);
    for p in COLD {
        assert_eq!(pages.all(&t.db, &p).await?.len(), 6, "cold post {p} was paged by the copy");
        let hours = v2::Hour::rels().readings.all(&t.db, &p).await?;
        assert_eq!(hours.len(), 5, "cold sensor {p} was bucketed by the copy");
    }
    retire_both(&t.db, &declared, held).await
}

/// Retires both moves, with the old arrays dropped, once the old version's
/// lease ran out: every page and bucket stays, and they are the new
/// version's own (an append fills a cold post's last page).
async fn retire_both(
    db: &docrel::mongodb::Database,
    declared: &[StoredMove],
    held: (usize, usize),
) -> docrel::Result<()> {
    tokio::time::sleep(LEASE * 2).await;
    let before = (raw(db, "mb_pages").await?, raw(db, "mb_hours").await?);
    assert_eq!((before.0.len(), before.1.len()), held);
    let retired = moves::retire(db, declared, true, LEASE, || false, |_| {}).await?;
    assert!(retired.iter().all(|r| r.complete), "{retired:?}");
    assert!(raw(db, "mb_posts").await?.iter().all(|p| !p.contains_key("comments")));
    assert!(raw(db, "mb_sensors").await?.iter().all(|s| !s.contains_key("readings")));
    assert_eq!((raw(db, "mb_pages").await?, raw(db, "mb_hours").await?), before, "every page stays as it was");
    let pages = v2::CommentPage::rels().comments;
    let last = pages.latest(db, &COLD.start).await?.expect("a cold post's last page");
    assert_eq!((last.page, last.count), (2, 2));
    let appended = pages.append(db, &COLD.start, &v2::Comment { by: "new".into(), text: "late".into() }).await?;
    assert_eq!(appended.page, Some(2));
    Ok(())
}

/// While both shapes are kept, an append goes to the post's array and
/// the post's pages follow; the old bound holds; pages of a post that is
/// not stored are refused; a page deleted in the middle closes up; reads
/// of the pages wait for every page to be made.
#[tokio::test]
async fn the_pages_follow_the_array_while_both_are_kept() -> docrel::Result<()> {
    new_version();
    let t = seeded("mb_kept").await?;
    let program = stored::program();
    let reports = moves::run(&t.db, &program, &declared(), LEASE, || false, |_| {}).await?;
    assert!(reports.iter().all(moves::MoveReport::switched), "{reports:?}");
    assert_eq!(assert_pages(&t.db).await?, 13, "the thirteen pages were made");
    windows::assert_windows(&t.db).await?;
    let pages = v2::CommentPage::rels().comments;
    let mine = |text: &str| v2::Comment { by: "new".into(), text: text.into() };

    // Post 2 holds 6 comments: the 7th goes to its array and page 2.
    let appended = pages.append(&t.db, &2, &mine("seventh")).await?;
    assert_eq!(appended.page, Some(2));
    let post = raw(&t.db, "mb_posts").await?.into_iter().find(|p| p.get_i64("_id").ok() == Some(2)).unwrap();
    assert_eq!(post.get_array("comments").unwrap().len(), 7);
    assert_eq!(pages.all(&t.db, &2).await?.last(), Some(&mine("seventh")));
    assert_pages(&t.db).await?;

    // The old bound: post 7 holds 10; 20 more fit, the 21st is refused.
    let batch: Vec<(i64, v2::Comment)> = (0..20).map(|i| (7, mine(&format!("fill {i}")))).collect();
    pages.append_many(&t.db, &batch).await?;
    let before = (raw(&t.db, "mb_posts").await?, raw(&t.db, "mb_pages").await?);
    let full = pages.append(&t.db, &7, &mine("one too many")).await.expect_err("the old bound");
    assert!(matches!(full, Error::EmbedFull { max: 30, .. }), "{full}");
    assert_eq!((raw(&t.db, "mb_posts").await?, raw(&t.db, "mb_pages").await?), before, "nothing written");

    // A post that is not stored takes no page.
    let stray = v2::CommentPage { id: ObjectId::new(), post: 99, page: 1, count: 1, comments: vec![mine("stray")] };
    let e = v2::CommentPage::repo(&t.db).insert(&stray).await.expect_err("post 99 is not stored");
    assert!(matches!(e, Error::Invalid { what: Misuse::MovedWrite, .. }), "{e}");
    assert!(e.to_string().contains("`mb_posts` 99 is not stored"), "{e}");
    let e = pages.append(&t.db, &99, &mine("stray")).await.expect_err("post 99 is not stored");
    assert!(matches!(e, Error::NotFound { .. }), "{e}");
    assert_eq!((raw(&t.db, "mb_posts").await?, raw(&t.db, "mb_pages").await?), before, "nothing written");

    // Page 1 of post 2 deleted: its array loses those four, the rest close up.
    // Sensor 0 holds no reading: its first, at 10:00, opens its 10:00 bucket.
    let hours = v2::Hour::rels().readings;
    let at = docrel::bson::DateTime::from_millis(1_700_002_800_000);
    let first = hours.append(&t.db, &0, &v2::Reading { id: "first".into(), t: at }).await?;
    assert_eq!((first.page, first.start), (None, Some(at)));
    for i in 0..3 {
        let next = hours.append(&t.db, &0, &v2::Reading { id: format!("r{i}"), t: at }).await?;
        assert_eq!(next.page, (i == 2).then_some(2), "the fourth reading of an hour spills into bucket 2");
    }
    windows::assert_windows(&t.db).await?;

    assert_eq!(v2::CommentPage::repo(&t.db).delete_many(Filter::new(doc! {"post": 2, "page": 1})).await?, 1);
    let left = pages.all(&t.db, &2).await?;
    assert_eq!(left.len(), 3, "{left:?}");
    assert_eq!(pages.page(&t.db, &2, 1).await?.map(|p| p.count), Some(3));
    assert_eq!(pages.page(&t.db, &2, 2).await?.map(|p| p.count), None);
    assert_pages(&t.db).await?;
    Ok(())
}

/// Reads of the pages are refused while the move has not made every page
/// (announced, maintained), and the plan refuses a bucket collection that
/// already holds documents.
#[tokio::test]
async fn pages_are_read_once_every_one_is_made() -> docrel::Result<()> {
    new_version();
    let t = seeded("mb_early").await?;
    let program = stored::program();
    t.db.collection::<BsonDoc>("mb_pages").insert_one(doc! {"post": 0, "page": 1}).await.map_err(err)?;
    let plan = moves::plan(&t.db, &program, &declared(), false).await?.remove(0);
    assert!(plan.to_text().contains("refused: `mb_pages` already holds 1 document(s)"), "{}", plan.to_text());
    let e = moves::run(&t.db, &program, &declared(), LEASE, || false, |_| {}).await.expect_err("refused");
    assert!(e.to_string().contains("is refused, nothing was written"), "{e}");
    assert!(stored::load_moves(&t.db).await?.is_empty());
    t.db.collection::<BsonDoc>("mb_pages").delete_many(doc! {}).await.map_err(err)?;

    // Stopped right after it is announced.
    let mut asked = 0;
    let stop = || {
        asked += 1;
        asked > 1
    };
    moves::run(&t.db, &program, &declared(), Duration::from_secs(30), stop, |_| {}).await?;
    assert_eq!(stored::load_moves(&t.db).await?.first().map(|m| m.state), Some(MoveState::Announced));
    docrel::schema::obey(&t.db).await?;
    let pages = v2::CommentPage::rels().comments;
    let from = docrel::bson::DateTime::from_millis(0);
    let e =
        v2::Hour::rels().readings.range(&t.db, &1, from, docrel::bson::DateTime::now()).await.expect_err("announced");
    assert!(e.to_string().contains("`mb_sensors.readings → mb_hours` is moving into buckets (announced)"), "{e}");
    let e = pages.latest(&t.db, &1).await.expect_err("announced");
    assert!(e.to_string().contains("its pages are read once every one is made"), "{e}");
    let e = v2::CommentPage::repo(&t.db).find(Filter::all()).to_vec().await.expect_err("announced");
    assert!(e.to_string().contains("nothing was read"), "{e}");
    let e = pages.append(&t.db, &1, &v2::Comment { by: "n".into(), text: "t".into() }).await.expect_err("announced");
    assert!(e.to_string().contains("take appends once the move is maintained"), "{e}");
    Ok(())
}

/// From the command line, with the new version's export: `schema diff`
/// plans the move, `schema apply` runs it to switched, and `schema retire
/// --drop-old` removes the arrays; the pages stay.
#[tokio::test]
async fn the_command_line_pages_the_comments() -> docrel::Result<()> {
    new_version();
    let t = seeded("mb_cli").await?;
    let file = std::env::temp_dir().join(format!("docrel_mb_{}.json", std::process::id()));
    std::fs::write(&file, docrel::schema::export()).expect("export written");
    let path = file.to_str().expect("a UTF-8 path");
    let (exit, out, err) = admin(&t.db, &["schema", "diff", "--file", path]).await;
    assert_eq!(exit, Exit::Found, "{err}");
    assert!(out.contains("mb_posts.comments → mb_pages: embedded array → bucket documents"), "{out}");
    assert!(out.contains("into 13 page(s)") && out.contains("pages/s measured on"), "{out}");
    let (exit, _, err) = admin(&t.db, &["schema", "apply", "--file", path, "--wait", "0"]).await;
    assert_eq!(exit, Exit::Ok, "{err}");
    assert!(err.contains("mb_posts.comments → mb_pages: switched"), "{err}");
    assert_eq!(assert_pages(&t.db).await?, 13);
    windows::assert_windows(&t.db).await?;
    let retire = ["schema", "retire", "--file", path, "--drop-old", "--lease", "0.05"];
    let (exit, _, err) = admin(&t.db, &retire).await;
    assert_eq!(exit, Exit::Ok, "{err}");
    assert!(raw(&t.db, "mb_posts").await?.iter().all(|p| !p.contains_key("comments")));
    assert!(raw(&t.db, "mb_sensors").await?.iter().all(|s| !s.contains_key("readings")));
    assert_eq!(raw(&t.db, "mb_pages").await?.len(), 13);
    let _ = std::fs::remove_file(&file);
    Ok(())
}
