//! The server-side copy of an embedded array into documents of their own:
//! one aggregate per page of parents, `$unwind` then `$merge`, so no element
//! crosses to the client. The diff's probe times one page of it.

use crate::error::{Error, Result};
use crate::schema::stored::{OldArray, StoredMove};
use mongodb::bson::{doc, Document as BsonDoc};
use mongodb::Database;
use serde::Serialize;
use std::time::Instant;

/// The pipeline copying the elements of `field` of the parents `matched`
/// finds (at most `limit` of them, in `_id` order) into `into`: each element
/// becomes a document whose `_id` is its key and whose parent reference is
/// its parent's `_id`. An element already there is kept: a mirror wrote it
/// since, and it is newer. For an array of ids, each document an id names
/// gets its parent reference (a document a mirror moved since is set right
/// by the settle after the page); an id naming none makes nothing, except
/// in a scratch collection, which the probe fills to time the copy.
pub(super) fn pipeline(
    mv: &StoredMove,
    holds: OldArray,
    field: &str,
    into: &str,
    matched: BsonDoc,
    limit: Option<i64>,
) -> Vec<BsonDoc> {
    let mut first = holds.holding(field);
    first.extend(matched);
    let mut out = vec![doc! {"$match": first}, doc! {"$sort": {"_id": 1}}];
    if let Some(limit) = limit {
        out.push(doc! {"$limit": limit});
    }
    if holds == OldArray::Ids {
        let scratch = into != mv.to.collection;
        out.extend(linked(field, &mv.parent_field));
        let missing = if scratch { "insert" } else { "discard" };
        out.push(doc! {"$merge": {"into": into, "on": "_id", "whenMatched": "merge", "whenNotMatched": missing}});
        return out;
    }
    if let Some(b) = &mv.buckets {
        out.extend(super::paged::copy_stages(mv, b, field, into));
        return out;
    }
    out.extend(mv.unwound(field, holds));
    out.push(doc! {"$merge": {"into": into, "on": "_id", "whenMatched": "keepExisting", "whenNotMatched": "insert"}});
    out
}

/// The stages making, out of parents holding the ids `field`, one
/// `{_id: <id>, <parent_field>: <the parent's _id>}` per id.
pub(crate) fn linked(field: &str, parent_field: &str) -> [BsonDoc; 3] {
    let ids = format!("${field}");
    [
        doc! {"$project": {field: 1}},
        doc! {"$unwind": &ids},
        doc! {"$replaceRoot": {"newRoot": {"_id": &ids, parent_field: "$_id"}}},
    ]
}

/// The copy's rate, measured on one page of real parents.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Estimate {
    /// Elements the probe copied.
    pub probed_elements: u64,
    /// Elements per second it copied them at.
    pub elements_per_second: f64,
    /// The whole copy's expected duration at that rate, in seconds, with a
    /// tenth more for the writes made meanwhile.
    pub seconds: f64,
}

/// Copies the elements of the first `parents` parents into a scratch
/// collection, times it, and drops it: the rate a move will copy at on
/// this server and data. `None` when no parent holds an element.
pub(super) async fn probe(
    db: &Database,
    mv: &StoredMove,
    holds: OldArray,
    field: &str,
    parents: i64,
    total: u64,
) -> Result<Option<Estimate>> {
    let scratch = format!("_docrel_probe_{}", mv.id);
    let coll = db.collection::<BsonDoc>(&scratch);
    let dropped = |e| Error::driver("drop", scratch.clone(), e);
    coll.drop().await.map_err(dropped)?;
    let started = Instant::now();
    let ran = db
        .collection::<BsonDoc>(&mv.from.collection)
        .aggregate(pipeline(mv, holds, field, &scratch, BsonDoc::new(), Some(parents)))
        .await;
    let elapsed = started.elapsed().as_secs_f64();
    let copied = match ran {
        Ok(_) => coll.count_documents(doc! {}).await.map_err(|e| Error::driver("count", scratch.clone(), e)),
        Err(e) => Err(Error::driver("aggregate", mv.from.collection.clone(), e)),
    };
    // The scratch collection goes whatever happened.
    coll.drop().await.map_err(dropped)?;
    let copied = copied?;
    if copied == 0 {
        return Ok(None);
    }
    let rate = copied as f64 / elapsed.max(1e-6);
    Ok(Some(Estimate { probed_elements: copied, elements_per_second: rate, seconds: total as f64 / rate * 1.1 }))
}
