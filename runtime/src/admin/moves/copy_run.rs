//! The copy of a move's existing elements, page by page of parents, each
//! page one server-side `$unwind` + `$merge`, then the parents written
//! meanwhile reconciled (the marks of `denormalize::moved`), then the
//! page checkpointed: a stopped copy resumes after its last page, and a
//! page copied twice writes nothing twice.

use super::progress::{Copied as Progress, Step};
use crate::denormalize::moved::{collection_from_arrays, Reach, MARKS_COLLECTION};
use crate::error::{Error, Result};
use crate::schema::stored::{ActiveMove, OldArray};
use crate::store::session::Cx;
use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::Database;

/// What a copy run did.
pub(super) struct Copied {
    pub(super) pages: u64,
    pub(super) elements: u64,
    pub(super) settled: u64,
    /// Every page is copied and settled.
    pub(super) finished: bool,
}

/// Parents reconciled per transaction when settling.
const SETTLE_CHUNK: usize = 100;

/// Copies the elements of every parent after the checkpoint, `page`
/// parents at a time.
pub(super) async fn copy(
    db: &Database,
    active: &ActiveMove,
    page: i64,
    stop: &mut impl FnMut() -> bool,
    step: &mut impl FnMut(&Step),
) -> Result<Copied> {
    let (spec, field) = (&active.spec, active.field.as_str());
    let checkpoints = db.collection::<BsonDoc>(crate::admin::backfilled::CHANGE_COLLECTION);
    let id = format!("move:{}", spec.id);
    let saved = checkpoints.find_one(doc! {"_id": &id}).await.map_err(|e| Error::driver("find", "checkpoint", e))?;
    let mut after = saved.and_then(|s| s.get("after").cloned());
    let mut out = Copied { pages: 0, elements: 0, settled: 0, finished: false };
    let source = Source::of(active);
    let parents = db.collection::<BsonDoc>(&source.collection);
    let mut progress = totals(db, &source, active, after.as_ref()).await?;
    loop {
        if stop() {
            return Ok(out);
        }
        let ids = page_of(&parents, &source, after.as_ref(), page).await?;
        let Some(bound) = ids.last().and_then(|d| d.get("_id")).cloned() else { break };
        let mut matched = doc! {"_id": {"$lte": bound.clone()}};
        if let Some(a) = &after {
            matched = doc! {"_id": {"$gt": a.clone(), "$lte": bound.clone()}};
        }
        let pipeline = if spec.kind.is_back() {
            super::back::copy_pipeline(spec, field, matched, None)
        } else {
            super::copy::pipeline(spec, active.old, field, &spec.to.collection, matched, None)
        };
        let mut tries = 0;
        loop {
            tries += 1;
            match parents.aggregate(pipeline.clone()).await {
                Ok(_) => break,
                Err(e) => {
                    let e = Error::driver("aggregate", source.collection.clone(), e);
                    if tries >= 20 || !super::paged::copy_again(spec, &e) {
                        return Err(e);
                    }
                }
            }
        }
        out.settled += settle(db, active).await?;
        checkpoints
            .update_one(doc! {"_id": &id}, doc! {"$set": {"after": bound.clone()}, "$inc": {"pages": 1}})
            .upsert(true)
            .await
            .map_err(|e| Error::driver("update", "checkpoint", e))?;
        out.pages += 1;
        progress.parents += ids.len() as u64;
        progress.elements += ids.iter().map(|d| crate::admin::doctor::as_u64(d.get("n")).unwrap_or(0)).sum::<u64>();
        out.elements = progress.elements;
        step(&Step::Copied(progress.clone()));
        after = Some(bound);
    }
    out.settled += settle(db, active).await?;
    out.finished = true;
    Ok(out)
}

/// The parents left to copy after `after`, and their elements: the
/// progress's totals (one pass over the parents, without their arrays
/// leaving the server).
async fn totals(db: &Database, source: &Source, active: &ActiveMove, after: Option<&Bson>) -> Result<Progress> {
    let pipeline = vec![
        doc! {"$match": left(source, after)},
        doc! {"$group": {"_id": Bson::Null, "parents": {"$sum": 1}, "elements": {"$sum": source.size.clone()}}},
    ];
    let row = super::count::first(db, &source.collection, pipeline).await?.unwrap_or_default();
    let number = |name| crate::admin::doctor::as_u64(row.get(name)).unwrap_or(0);
    Ok(Progress {
        label: active.spec.label(),
        total_parents: number("parents"),
        total_elements: number("elements"),
        ..Progress::default()
    })
}

/// Where a move's copy reads: the parents holding elements (or, for a
/// move back, the old documents naming a parent), and what each holds.
struct Source {
    collection: String,
    holding: BsonDoc,
    size: Bson,
}

impl Source {
    fn of(active: &ActiveMove) -> Source {
        let spec = &active.spec;
        if spec.kind.is_back() {
            let holding = doc! {&spec.parent_field: {"$exists": true, "$ne": Bson::Null}};
            return Source { collection: spec.to.collection.clone(), holding, size: OldArray::One.size("") };
        }
        let (field, old) = (active.field.as_str(), active.old);
        Source { collection: spec.from.collection.clone(), holding: old.holding(field), size: old.size(field) }
    }
}

/// What is left to copy after `after`.
fn left(source: &Source, after: Option<&Bson>) -> BsonDoc {
    let mut range = source.holding.clone();
    if let Some(a) = after {
        range.insert("_id", doc! {"$gt": a.clone()});
    }
    range
}

/// The next `page` parents after `after`, each with its number of
/// elements (`n`).
async fn page_of(
    parents: &mongodb::Collection<BsonDoc>,
    source: &Source,
    after: Option<&Bson>,
    page: i64,
) -> Result<Vec<BsonDoc>> {
    let failed = |e| Error::driver("find", parents.name().to_owned(), e);
    parents
        .find(left(source, after))
        .sort(doc! {"_id": 1})
        .limit(page)
        .projection(doc! {"_id": 1, "n": source.size.clone()})
        .await
        .map_err(failed)?
        .try_collect()
        .await
        .map_err(failed)
}

/// Reconciles every parent marked as written since the last settle, each
/// chunk in a transaction that also forgets the chunk's marks as seen (a
/// mark renewed meanwhile stays for the next settle). The marks are written
/// in the writers' transactions, so they are deleted in one too: a plain
/// multi-document delete meeting a mark an open transaction wrote is what
/// stalls the embedded test server for good (`tests/history/gate.rs`).
/// Returns how many parents.
pub(super) async fn settle(db: &Database, active: &ActiveMove) -> Result<u64> {
    let marks = db.collection::<BsonDoc>(MARKS_COLLECTION);
    let seen: Vec<BsonDoc> = marks
        .find(doc! {"_id.m": &active.spec.id})
        .await
        .map_err(|e| Error::driver("find", MARKS_COLLECTION, e))?
        .try_collect()
        .await
        .map_err(|e| Error::driver("find", MARKS_COLLECTION, e))?;
    for chunk in seen.chunks(SETTLE_CHUNK) {
        let parents: Vec<Bson> = chunk.iter().filter_map(|m| m.get_document("_id").ok()?.get("p").cloned()).collect();
        let exact: Vec<BsonDoc> =
            chunk.iter().map(|m| doc! {"_id": m.get("_id").cloned(), "at": m.get("at").cloned()}).collect();
        let (db2, active) = (db.clone(), active.clone());
        crate::store::transaction::run(db, "settle of a move's copy", &mut |s| {
            let (db, active, parents, exact) = (db2.clone(), active.clone(), parents.clone(), exact.clone());
            Box::pin(async move {
                let cx = &mut Cx::new(&db, Some(s));
                if active.spec.kind.is_back() {
                    // The old shape is the collection: the field follows it.
                    let Some(kept) = cx.graph.moves.iter().find(|m| m.spec.id == active.spec.id) else {
                        return Ok(());
                    };
                    crate::denormalize::moved::arrays_from_collection(cx, kept, &parents).await?;
                } else {
                    collection_from_arrays(cx, &active, &parents, Reach::Full).await?;
                }
                let seen = doc! {"$or": exact};
                crate::store::session::in_session!(
                    db.collection::<BsonDoc>(MARKS_COLLECTION).delete_many(seen),
                    cx.session()
                )
                .map_err(|e| Error::driver("delete", MARKS_COLLECTION, e))?;
                Ok(())
            })
        })
        .await?;
    }
    Ok(seen.len() as u64)
}
