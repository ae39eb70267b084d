//! Case 7 (issue 39): moving an embedded array into a collection of its
//! own, with no writer running and a lease of 0. `move_offline`:
//! `docrel::admin::moves::run_offline`, what `docrel schema apply
//! --offline` runs (the plan's checks, the unique indexes, the states, the
//! paged copy with its settles, the other indexes, the backfill), against
//! one hand-written `$unwind` + `$replaceRoot` + `$merge` of every element,
//! then the index on the parent reference. `move_online`: the online move
//! (`docrel::admin::moves::run`, every index built before the copy, for the
//! writes mirrored meanwhile) against the same pipeline with its index
//! built first. Each round starts from the embedded data alone; only the
//! move is timed. A last line reports the client's memory.

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

pub(crate) async fn migrate_case(b: &Bench, o: &Opts, online: bool) -> docrel::Result<()> {
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
    let way = if online { "online" } else { "offline" };
    let case = format!("move_{way}_{parents}_parents_x{per}_embedded_into_a_collection");
    let before = memory_kb();
    let docrel_way = |db: Database, offline: bool| {
        let (program, moves) = (program.clone(), moves.clone());
        async move {
            let (program, moves, lease) = (&program, &moves, Duration::ZERO);
            // `DOCREL_BENCH_STEPS=1`: each step of the move on standard
            // error, with the time since the move began.
            let t0 = std::time::Instant::now();
            let steps = std::env::var_os("DOCREL_BENCH_STEPS").is_some();
            let said = |s: &docrel::admin::moves::Step| {
                if steps {
                    eprintln!("{:>8.2?} {s}", t0.elapsed());
                }
            };
            let done = match offline {
                true => docrel::admin::moves::run_offline(&db, program, moves, lease, || false, said).await?,
                false => docrel::admin::moves::run(&db, program, moves, lease, || false, said).await?,
            };
            assert!(done[0].switched(), "{done:?}");
            let moved = db.collection::<BsonDoc>("mig_comments").count_documents(doc! {}).await.map_err(err)?;
            assert_eq!(moved as usize, elements, "every element moved once");
            Ok::<(), docrel::Error>(())
        }
    };
    // Interleaved as `Bench::pair` does, each round from the embedded data
    // alone; the reset before a round is not timed. Online, the pipeline
    // builds its index first, as the online move does.
    let (mut d, mut h) = (Timing::default(), Timing::default());
    for run in 0..=b.runs {
        for way in 0..2 {
            reset(&b.timed).await?;
            let (c0, t0) = (cpu_ms(), std::time::Instant::now());
            let timing = match (way + run) % 2 {
                0 => {
                    docrel_way(b.timed.clone(), !online).await?;
                    &mut d
                }
                _ => {
                    hand(&b.timed, online).await?;
                    &mut h
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
    docrel_way(b.counted.clone(), !online).await?;
    let d = d.report(&case, "docrel", elements, &b.trips, mark);
    reset(&b.counted).await?;
    let mark = b.trips.mark();
    hand(&b.counted, online).await?;
    let h = h.report(&case, "hand", elements, &b.trips, mark);
    ratio(&case, d, h, None);
    let after = memory_kb();
    println!(
        "{{\"case\":\"{case}\",\"client_rss_kb_before\":{},\"client_rss_kb_after\":{},\"client_peak_rss_kb\":{}}}",
        before.0, after.0, after.1
    );
    Ok(())
}
