//! Case 7 (issue 39): moving an embedded array into a collection of its
//! own. docrel: `docrel::admin::moves::run`, what `docrel schema apply`
//! runs (the plan's checks, the indexes, the states, the paged copy with
//! its settles, the backfill), with no writer running and a lease of 0. By
//! hand: one `$unwind` + `$replaceRoot` + `$merge` of every element, and the
//! index on the parent reference after it (and, a second line, before it,
//! as an online move needs it). Each round starts from the embedded data
//! alone; only the move is timed. A last line reports the client's memory.

use super::{cpu_ms, err, ratio, Bench, Opts, Timing};
use docrel::bson::{doc, oid::ObjectId, Document as BsonDoc};
use docrel::mongodb::{Database, IndexModel};
use docrel::schema::stored::{self, StoredMove, StoredType};
use docrel::Document;
use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Serialize, Deserialize, Debug, Clone)]
struct Line {
    #[serde(rename = "_id")]
    id: ObjectId,
    author: String,
    text: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "mig_posts")]
struct Post {
    #[serde(rename = "_id")]
    id: ObjectId,
    title: String,
    #[embed(max = 150)]
    comments: Vec<Line>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "mig_comments", moved_from = Post::comments)]
struct Comment {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Post)]
    post: ObjectId,
    author: String,
    text: String,
}

/// `parents` posts of `per` comments each, written raw in batches.
async fn seed(db: &Database, parents: usize, per: usize) -> docrel::Result<()> {
    let coll = db.collection::<BsonDoc>("mig_posts");
    for chunk in (0..parents).collect::<Vec<_>>().chunks(100) {
        let posts: Vec<BsonDoc> = chunk
            .iter()
            .map(|i| {
                let comments: Vec<BsonDoc> = (0..per)
                    .map(|k| doc! {"_id": ObjectId::new(), "author": format!("a{k}"), "text": format!("comment {k} of post {i}")})
                    .collect();
                doc! {"_id": ObjectId::new(), "title": format!("post {i}"), "comments": comments}
            })
            .collect();
        coll.insert_many(posts).await.map_err(err)?;
    }
    Ok(())
}

/// Back to the embedded data alone: no new collection, no move, no checkpoint.
async fn reset(db: &Database) -> docrel::Result<()> {
    db.collection::<BsonDoc>("mig_comments").drop().await.map_err(err)?;
    stored::publish_moves(db, &[]).await?;
    db.collection::<BsonDoc>("_docrel_schema_changes").delete_many(doc! {}).await.map_err(err)?;
    db.collection::<BsonDoc>(stored::LEASES_COLLECTION).delete_many(doc! {}).await.map_err(err)?;
    docrel::schema::obey(db).await?;
    Ok(())
}

/// The hand-written move: one pipeline, then the parent reference's index
/// (`index_first`: the index first, as a move made online needs it while
/// writers run, so that each mirrored write finds a parent's documents by
/// index; maintaining it during the copy is most of what docrel's move
/// costs beyond the offline pipeline on the embedded server).
async fn hand(db: &Database, index_first: bool) -> docrel::Result<()> {
    let index = || async {
        let index = IndexModel::builder().keys(doc! {"post": 1}).build();
        db.collection::<BsonDoc>("mig_comments").create_index(index).await.map_err(err)
    };
    if index_first {
        index().await?;
    }
    let pipeline = vec![
        doc! {"$match": {"comments.0": {"$exists": true}}},
        doc! {"$project": {"comments": 1}},
        doc! {"$unwind": "$comments"},
        doc! {"$replaceRoot": {"newRoot": {"$mergeObjects": ["$comments", {"post": "$_id"}]}}},
        doc! {"$merge": {"into": "mig_comments", "on": "_id", "whenMatched": "keepExisting", "whenNotMatched": "insert"}},
    ];
    db.collection::<BsonDoc>("mig_posts").aggregate(pipeline).await.map_err(err)?;
    if !index_first {
        index().await?;
    }
    Ok(())
}

/// The client's resident memory now and at its peak, in KiB (Linux).
fn memory_kb() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.split_whitespace().next()?.parse().ok())
    };
    (field("VmRSS:").unwrap_or(0), field("VmHWM:").unwrap_or(0))
}

pub(crate) async fn migrate_case(b: &Bench, o: &Opts) -> docrel::Result<()> {
    let (parents, per) = (o.move_parents, 100);
    let elements = parents * per;
    // The counted client's database is the timed one's, seen through a
    // monitored client: one seed serves both.
    seed(&b.timed, parents, per).await?;
    // What the old version published; the new version is the moved type.
    let old: Vec<StoredType> = stored::program().into_iter().filter(|t| t.collection == "mig_posts").collect();
    stored::publish_types(&b.timed, &old).await?;
    let program: Vec<StoredType> = stored::program().into_iter().filter(|t| t.collection == "mig_comments").collect();
    let moves: Vec<StoredMove> =
        stored::program_moves().into_iter().filter(|m| m.to.collection == "mig_comments").collect();
    let case = format!("move_{parents}_parents_x{per}_embedded_into_a_collection");
    let before = memory_kb();
    let docrel_way = |db: Database| {
        let (program, moves) = (program.clone(), moves.clone());
        async move {
            let done = docrel::admin::moves::run(&db, &program, &moves, Duration::ZERO, || false, |_| {}).await?;
            assert!(done[0].switched(), "{done:?}");
            let moved = db.collection::<BsonDoc>("mig_comments").count_documents(doc! {}).await.map_err(err)?;
            assert_eq!(moved as usize, elements, "every element moved once");
            Ok::<(), docrel::Error>(())
        }
    };
    // Interleaved as `Bench::pair` does, each round from the embedded data
    // alone; the reset before a round is not timed.
    let (mut d, mut h, mut o) = (Timing::default(), Timing::default(), Timing::default());
    for run in 0..=b.runs {
        for way in 0..3 {
            reset(&b.timed).await?;
            let (c0, t0) = (cpu_ms(), std::time::Instant::now());
            let timing = match (way + run) % 3 {
                0 => {
                    docrel_way(b.timed.clone()).await?;
                    &mut d
                }
                1 => {
                    hand(&b.timed, false).await?;
                    &mut h
                }
                _ => {
                    hand(&b.timed, true).await?;
                    &mut o
                }
            };
            // The first round of each way warms up.
            if run > 0 {
                timing.push(t0, c0);
            }
        }
    }
    reset(&b.counted).await?;
    let mark = b.trips.mark();
    docrel_way(b.counted.clone()).await?;
    let d = d.report(&case, "docrel", elements, &b.trips, mark);
    reset(&b.counted).await?;
    let mark = b.trips.mark();
    hand(&b.counted, false).await?;
    let h = h.report(&case, "hand", elements, &b.trips, mark);
    ratio(&case, d, h, None);
    let online = format!("{case}_index_first");
    reset(&b.counted).await?;
    let mark = b.trips.mark();
    hand(&b.counted, true).await?;
    let o = o.report(&online, "hand", elements, &b.trips, mark);
    ratio(&online, d, o, None);
    let after = memory_kb();
    println!(
        "{{\"case\":\"{case}\",\"client_rss_kb_before\":{},\"client_rss_kb_after\":{},\"client_peak_rss_kb\":{}}}",
        before.0, after.0, after.1
    );
    Ok(())
}
