//! Issue 39, the last kind of move: a bound raised or lowered. The stored
//! schema keeps the bound every process follows; a program declaring
//! another one publishes it only through `schema apply` (an online
//! change), and until then, and in every process, a write keeps to the
//! lower of its type's bound and the stored one.
//!
//! This binary plays the new version (`link_only`): it raises the bound of
//! `bd_posts.tags` from 4 to 8 and lowers that of `bd_notes.lines` from 8
//! to 4. A second OS process, started from it, plays the old version and
//! pushes into both while the change runs.

use docrel::admin::change::change;
use docrel::bson::{doc, oid::ObjectId, Bson, Document as BsonDoc};
use docrel::schema::stored::{self, StoredKind, StoredType};
use docrel::testing::TestDb;
use docrel::Error;
use futures::TryStreamExt;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const V1: &str = concat!(module_path!(), "::v1");
const V2: &str = concat!(module_path!(), "::v2");
const DB_VARIABLE: &str = "DOCREL_MOVES_BOUNDS_DB";
const LEASE: Duration = Duration::from_millis(400);
/// The longest the old version writes; it stops when the test says so.
const OLD_WRITES: Duration = Duration::from_secs(90);
/// The collection where the test tells the old version to stop.
const STOP: &str = "bd_stop";

macro_rules! version {
    ($name:ident, $posts:literal, $notes:literal) => {
        pub mod $name {
            use docrel::bson::oid::ObjectId;
            use docrel::Document;
            use serde::{Deserialize, Serialize};

            #[derive(Serialize, Deserialize, Debug, Clone)]
            pub struct Item {
                #[serde(rename = "_id")]
                pub id: ObjectId,
                pub by: String,
            }

            #[derive(Document, Serialize, Deserialize, Debug, Clone)]
            #[document(collection = "bd_posts")]
            pub struct Post {
                #[serde(rename = "_id")]
                pub id: ObjectId,
                #[embed(max = $posts)]
                pub tags: Vec<Item>,
            }

            #[derive(Document, Serialize, Deserialize, Debug, Clone)]
            #[document(collection = "bd_notes")]
            pub struct Note {
                #[serde(rename = "_id")]
                pub id: ObjectId,
                #[embed(max = $notes)]
                pub lines: Vec<Item>,
            }
        }
    };
}

version!(v1, 4, 8);
version!(v2, 8, 4);

/// This process is the new version, whichever test runs first.
fn new_version() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| docrel::testing::link_only(&[V2]));
}

fn now_ms() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0)
}

/// The new version's program with the old version's bounds: what the old
/// version published.
fn old_program() -> Vec<StoredType> {
    let mut program = stored::program();
    for t in &mut program {
        for r in &mut t.relations {
            if let StoredKind::Embed { max, .. } = &mut r.kind {
                *max = Some(if t.collection == "bd_posts" { 4 } else { 8 });
            }
        }
    }
    program
}

/// One push's answer, as either version records it.
#[derive(Debug, Clone, PartialEq)]
enum Pushed {
    Ok(ObjectId),
    /// Refused as full at this bound.
    Full(u32),
}

/// Pushes one item (written `by`) into the array of `id`.
async fn push(db: &docrel::mongodb::Database, notes: bool, id: ObjectId, by: &str) -> docrel::Result<Pushed> {
    let item = ObjectId::new();
    let answer = if notes { push_note(db, id, item, by).await } else { push_post(db, id, item, by).await };
    match answer {
        Ok(_) => Ok(Pushed::Ok(item)),
        Err(Error::EmbedFull { max, .. }) => Ok(Pushed::Full(max)),
        Err(e) => Err(e),
    }
}

/// The push through whichever version this process links.
async fn push_post(db: &docrel::mongodb::Database, post: ObjectId, item: ObjectId, by: &str) -> docrel::Result<()> {
    if by == "v1" {
        let f = v1::Post::fields().tags.push([v1::Item { id: item, by: by.into() }]);
        v1::Post::repo(db).update_by_id(&post, f).await.map(drop)
    } else {
        let f = v2::Post::fields().tags.push([v2::Item { id: item, by: by.into() }]);
        v2::Post::repo(db).update_by_id(&post, f).await.map(drop)
    }
}

async fn push_note(db: &docrel::mongodb::Database, note: ObjectId, item: ObjectId, by: &str) -> docrel::Result<()> {
    if by == "v1" {
        let f = v1::Note::fields().lines.push([v1::Item { id: item, by: by.into() }]);
        v1::Note::repo(db).update_by_id(&note, f).await.map(drop)
    } else {
        let f = v2::Note::fields().lines.push([v2::Item { id: item, by: by.into() }]);
        v2::Note::repo(db).update_by_id(&note, f).await.map(drop)
    }
}

/// The ids of every document of `collection`.
async fn ids(db: &docrel::mongodb::Database, collection: &str) -> docrel::Result<Vec<ObjectId>> {
    let raw = db.collection::<BsonDoc>(collection);
    let found: Vec<BsonDoc> = raw.find(doc! {}).await.map_err(err)?.try_collect().await.map_err(err)?;
    Ok(found.iter().filter_map(|d| d.get_object_id("_id").ok()).collect())
}

fn err(e: docrel::mongodb::error::Error) -> Error {
    Error::driver("test", "bd", e)
}

/// Pushes into random documents of both collections until `until`,
/// recording each answer with its time: (collection, answer, unix ms).
async fn writer(
    db: &docrel::mongodb::Database,
    by: &str,
    stop: Arc<AtomicBool>,
    seed: u64,
) -> docrel::Result<Vec<(String, Pushed, u128)>> {
    let (posts, notes) = (ids(db, "bd_posts").await?, ids(db, "bd_notes").await?);
    let mut out = Vec::new();
    let mut n = seed;
    while !stop.load(Ordering::SeqCst) {
        n = n.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let into_notes = (n >> 33).is_multiple_of(2);
        let pool = if into_notes { &notes } else { &posts };
        let id = pool[((n >> 40) as usize) % pool.len()];
        let answer = push(db, into_notes, id, by).await?;
        let collection = if into_notes { "bd_notes" } else { "bd_posts" };
        out.push((collection.to_owned(), answer, now_ms()));
    }
    Ok(out)
}

/// The old version, in its own process: it pushes until the test inserts
/// into [`STOP`] (or for `OLD_WRITES`), and prints each answer.
#[tokio::test]
#[ignore = "run by `a_bound_is_raised_and_another_lowered_while_both_versions_push`"]
async fn old_version() -> docrel::Result<()> {
    let Ok(name) = std::env::var(DB_VARIABLE) else { return Ok(()) };
    docrel::testing::link_only(&[V1]);
    docrel::schema::set_lease(LEASE);
    let client = docrel::connect_from_env().await?;
    let db = client.database(&name);
    let stop = Arc::new(AtomicBool::new(false));
    let (told, db2) = (stop.clone(), db.clone());
    let watch = tokio::spawn(async move {
        let until = Instant::now() + OLD_WRITES;
        let marker = db2.collection::<BsonDoc>(STOP);
        while Instant::now() < until && !matches!(marker.find_one(doc! {}).await, Ok(Some(_))) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        told.store(true, Ordering::SeqCst);
    });
    let answers = writer(&db, "v1", stop, 7).await;
    watch.abort();
    for (collection, answer, at) in answers? {
        match answer {
            Pushed::Ok(id) => println!("@ok {collection} {id} {at}"),
            Pushed::Full(max) => println!("@full {collection} {max} {at}"),
        }
    }
    Ok(())
}

/// Each document's items, by the id of the document, read back raw.
async fn items(
    db: &docrel::mongodb::Database,
    collection: &str,
    field: &str,
) -> docrel::Result<HashMap<ObjectId, Vec<ObjectId>>> {
    let raw = db.collection::<BsonDoc>(collection);
    let found: Vec<BsonDoc> = raw.find(doc! {}).await.map_err(err)?.try_collect().await.map_err(err)?;
    let mut out = HashMap::new();
    for d in found {
        let list =
            d.get_array(field).map(|a| a.iter().filter_map(|i| i.as_document()?.get_object_id("_id").ok()).collect());
        out.insert(d.get_object_id("_id").expect("an id"), list.unwrap_or_default());
    }
    Ok(out)
}

/// The stored bound of `collection`'s array, read back raw.
async fn stored_bound(db: &docrel::mongodb::Database, collection: &str) -> docrel::Result<Option<Bson>> {
    let found =
        db.collection::<BsonDoc>(stored::SCHEMA_COLLECTION).find_one(doc! {"_id": collection}).await.map_err(err)?;
    let relations = found.as_ref().and_then(|d| d.get_document("type").ok()?.get_array("relations").ok().cloned());
    let first = relations.and_then(|r| r.first()?.as_document().cloned());
    Ok(first.and_then(|r| r.get_document("kind").ok()?.get("max").cloned()))
}

fn item(by: &str) -> v2::Item {
    v2::Item { id: ObjectId::new(), by: by.into() }
}

fn as_u32(b: Option<Bson>) -> Option<u32> {
    match b? {
        Bson::Int32(n) => u32::try_from(n).ok(),
        Bson::Int64(n) => u32::try_from(n).ok(),
        _ => None,
    }
}

#[tokio::test]
async fn writes_keep_to_a_lower_stored_bound_until_a_change_publishes_the_program_s() -> docrel::Result<()> {
    new_version();
    let t = TestDb::new("bd_single").await?;
    docrel::schema::set_lease_for(&t.db, LEASE);
    stored::publish_types(&t.db, &old_program()).await?;
    // A plain publish of the new version keeps the stored bounds: it is
    // no conflict, and changes nothing.
    let published = stored::publish_types(&t.db, &stored::program()).await?;
    assert!(published.extended.is_empty(), "{published:?}");
    assert_eq!(as_u32(stored_bound(&t.db, "bd_posts").await?), Some(4));
    let obeyed = docrel::schema::obey(&t.db).await?;
    assert!(
        obeyed
            .differences
            .iter()
            .any(|d| d.contains("`bd_posts.tags`: the stored schema bounds it at 4 and this program at 8")),
        "{obeyed:?}"
    );

    // `bd_posts.tags`: declared 8, stored 4: every write keeps to 4.
    let posts = v2::Post::repo(&t.db);
    let post = v2::Post { id: ObjectId::new(), tags: (0..4).map(|_| item("v2")).collect() };
    posts.insert(&post).await?;
    assert_eq!(push(&t.db, false, post.id, "v2").await?, Pushed::Full(4));
    let big = v2::Post { id: ObjectId::new(), tags: (0..5).map(|_| item("v2")).collect() };
    match posts.insert(&big).await {
        Err(Error::EmbedFull { field: "tags", max: 4, len: 5, .. }) => {}
        other => panic!("a document past the stored bound is refused: {other:?}"),
    }
    let set = v2::Post::fields().tags.set((0..5).map(|_| item("v2")).collect());
    match posts.update_by_id(&post.id, set).await {
        Err(Error::EmbedFull { field: "tags", max: 4, len: 5, .. }) => {}
        other => panic!("a whole array past the stored bound is refused: {other:?}"),
    }
    let raw = t.db.collection::<BsonDoc>("bd_posts");
    assert_eq!(raw.count_documents(doc! {}).await.map_err(err)?, 1, "nothing else was written");
    assert_eq!(items(&t.db, "bd_posts", "tags").await?[&post.id].len(), 4);
    // `bd_notes.lines`: declared 4, stored 8: the type's own 4.
    let note = v2::Note { id: ObjectId::new(), lines: (0..4).map(|_| item("v2")).collect() };
    v2::Note::repo(&t.db).insert(&note).await?;
    assert_eq!(push(&t.db, true, note.id, "v2").await?, Pushed::Full(4));

    // The plan names both changes; neither is a conflict.
    let diff = stored::diff(&stored::load(&t.db).await?, &stored::program());
    assert!(diff.conflicts.is_empty(), "{:?}", diff.conflicts);
    let text = diff.to_text();
    assert!(text.contains("bound: `bd_posts.tags`: bound 4 → 8 (raised"), "{text}");
    assert!(text.contains("bound: `bd_notes.lines`: bound 8 → 4 (lowered"), "{text}");

    // The change, stopped once announced, resumes to the same end.
    let first = change(&t.db, stored::program()).wait(LEASE * 2).run(|| true, |_| {}).await?;
    assert_eq!(first.state, "announced");
    let done = change(&t.db, stored::program()).wait(LEASE * 2).run(|| false, |_| {}).await?;
    assert!(done.resumed && done.complete(), "{done:?}");
    assert_eq!(as_u32(stored_bound(&t.db, "bd_posts").await?), Some(8));
    assert_eq!(as_u32(stored_bound(&t.db, "bd_notes").await?), Some(4));
    assert!(matches!(push(&t.db, false, post.id, "v2").await?, Pushed::Ok(_)), "the raised bound holds");
    let again = change(&t.db, stored::program()).run(|| false, |_| {}).await?;
    assert!(again.resumed && again.complete(), "running it again changes nothing");
    Ok(())
}

/// What the old version's process printed: (collection, answer, unix ms).
fn old_answers(stdout: &str) -> Vec<(String, Pushed, u128)> {
    let mut out = Vec::new();
    for line in stdout.lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        let answer = match parts.as_slice() {
            ["@ok", _, id, _] => Pushed::Ok(id.parse().expect("an ObjectId")),
            ["@full", _, max, _] => Pushed::Full(max.parse().expect("a bound")),
            _ => continue,
        };
        out.push((parts[1].to_owned(), answer, parts[3].parse().expect("a time")));
    }
    out
}

/// The invariant of a bound change under a fleet: every push that
/// answered `Ok`, from either version, is stored exactly once and nothing
/// else is; no array passes the higher of the bounds; the old version
/// keeps to its own bound on the raised array throughout and to the
/// lowered stored bound once a lease has passed after the change; the new
/// version keeps to the stored bound until the change publishes its own;
/// and an array over the lowered bound never grows after that.
#[tokio::test]
async fn a_bound_is_raised_and_another_lowered_while_both_versions_push() -> docrel::Result<()> {
    new_version();
    let t = TestDb::new("bd_fleet").await?;
    docrel::schema::set_lease_for(&t.db, LEASE);
    stored::publish_types(&t.db, &old_program()).await?;
    // This process starts after the old version published.
    docrel::schema::obey(&t.db).await?;
    for _ in 0..4 {
        v2::Post::repo(&t.db).insert(&v2::Post { id: ObjectId::new(), tags: Vec::new() }).await?;
        v2::Note::repo(&t.db).insert(&v2::Note { id: ObjectId::new(), lines: Vec::new() }).await?;
    }
    let exe = std::env::current_exe().expect("this test binary");
    let old = std::process::Command::new(exe)
        .args(["old_version", "--exact", "--ignored", "--nocapture"])
        .env(DB_VARIABLE, t.db.name())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the old version runs");
    // The old process is waited for whatever happens here.
    let during = async {
        let stop = Arc::new(AtomicBool::new(false));
        let (db, db2, told) = (t.db.clone(), t.db.clone(), stop.clone());
        let new = tokio::spawn(async move { writer(&db2, "v2", told, 11).await });
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let announced = now_ms();
        let done = change(&db, stored::program()).wait(LEASE * 2).run(|| false, |_| {}).await?;
        assert!(done.complete(), "{done:?}");
        let complete = now_ms();
        // Once every process has seen the change, the notes over the
        // lowered bound are what they will stay.
        tokio::time::sleep(LEASE + Duration::from_millis(300)).await;
        let seen = now_ms();
        let settled = items(&t.db, "bd_notes", "lines").await?;
        // Both versions write on past that point for a while.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        stop.store(true, Ordering::SeqCst);
        let new = new.await.expect("the new version's writer")?;
        Ok::<_, Error>((announced, complete, seen, settled, new))
    };
    let during = during.await;
    // Told to stop whatever happened above.
    let _ = t.db.collection::<BsonDoc>(STOP).insert_one(doc! {"stop": true}).await;
    let old = old.wait_with_output().expect("the old version ends");
    let (announced, complete, seen, settled, new) = during?;
    let stdout = String::from_utf8_lossy(&old.stdout);
    assert!(old.status.success(), "the old version failed:\n{stdout}\n{}", String::from_utf8_lossy(&old.stderr));
    let old = old_answers(&stdout);
    assert!(old.len() > 20, "the old version pushed: {}", old.len());

    // Every Ok push is stored once, and nothing else is.
    let (posts, notes) = (items(&t.db, "bd_posts", "tags").await?, items(&t.db, "bd_notes", "lines").await?);
    let mut stored: Vec<ObjectId> = posts.values().chain(notes.values()).flatten().copied().collect();
    let mut ok: Vec<ObjectId> = old
        .iter()
        .chain(&new)
        .filter_map(|(_, a, _)| match a {
            Pushed::Ok(id) => Some(*id),
            Pushed::Full(_) => None,
        })
        .collect();
    stored.sort();
    ok.sort();
    assert_eq!(stored, ok, "every Ok push exactly once, nothing else");
    assert!(posts.values().all(|l| l.len() <= 8) && notes.values().all(|l| l.len() <= 8));
    assert!(posts.values().any(|l| l.len() > 4), "the new version used the raised bound: {posts:?}");

    for (collection, answer, at) in &old {
        let Pushed::Full(max) = answer else { continue };
        match collection.as_str() {
            "bd_posts" => assert_eq!(*max, 4, "the old version keeps its own bound on the raised array"),
            _ if *at > seen => assert_eq!(*max, 4, "the old version keeps the lowered stored bound at {at}"),
            _ => assert!(*max == 8 || *at > announced, "before the change, its own 8 ({max} at {at})"),
        }
    }
    for (collection, answer, at) in &new {
        let Pushed::Full(max) = answer else { continue };
        match collection.as_str() {
            "bd_posts" if *at < announced => assert_eq!(*max, 4, "the stored bound before the change"),
            "bd_posts" if *at > complete => assert_eq!(*max, 8, "its own bound once published"),
            "bd_notes" => assert_eq!(*max, 4, "its own lower bound throughout"),
            _ => {}
        }
    }
    assert!(
        old.iter().any(|(c, a, at)| c == "bd_notes" && *a == Pushed::Full(4) && *at > seen),
        "the old version met the lowered bound"
    );
    for (id, lines) in &settled {
        let now = notes[id].len();
        assert!(
            now <= settled[id].len().max(4),
            "`bd_notes` {id} grew past the lowered bound: {} then {now}",
            lines.len()
        );
    }
    Ok(())
}
