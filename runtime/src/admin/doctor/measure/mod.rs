//! The doctor's reads against the database, each bounded: a collection of
//! more than [`Options::sample`] documents is read through `$sample` of
//! that many, and only lengths, sizes and ids travel (computed by the
//! server with `$size` and `$bsonSize`). What they return are figures;
//! the rules judge them.

mod indexes;
mod references;
mod usage;

pub(super) use indexes::indexes;
pub(super) use references::references;
pub(super) use usage::copies;

use super::declared::ArrayField;
use super::report::{log2_counts, trend, ArrayStat, Coverage, Distribution, Options, SizeStat};
use crate::bson_compat;
use crate::error::{show_id, Error, Result};
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::Database;

pub(super) fn as_u64(v: Option<&Bson>) -> Option<u64> {
    match v? {
        Bson::Int32(i) => u64::try_from(*i).ok(),
        Bson::Int64(i) => u64::try_from(*i).ok(),
        Bson::Double(d) if *d >= 0.0 => Some(*d as u64),
        _ => None,
    }
}

pub(super) async fn aggregate(db: &Database, collection: &str, pipeline: Vec<BsonDoc>) -> Result<Vec<BsonDoc>> {
    let mut cursor = db
        .collection::<BsonDoc>(collection)
        .aggregate(pipeline)
        .await
        .map_err(|e| Error::driver("aggregate", collection, e))?;
    let mut out = Vec::new();
    while cursor.advance().await.map_err(|e| Error::driver("aggregate", collection, e))? {
        out.push(cursor.deserialize_current().map_err(|e| Error::driver("aggregate", collection, e))?);
    }
    Ok(out)
}

/// The first stage of every read of `collection`: a `$sample` when it is
/// larger than the limit.
pub(super) async fn coverage(db: &Database, collection: &str, limit: u64) -> Result<(Coverage, Vec<BsonDoc>)> {
    let documents = db
        .collection::<BsonDoc>(collection)
        .estimated_document_count()
        .await
        .map_err(|e| Error::driver("count", collection, e))?;
    if documents > limit {
        Ok((Coverage { documents, read: limit, sampled: true }, vec![doc! {"$sample": {"size": limit as i64}}]))
    } else {
        Ok((Coverage { documents, read: documents, sampled: false }, Vec::new()))
    }
}

/// The sizes of one collection's documents and the lengths of its arrays,
/// in one aggregate (plus a read of the largest document); `None` when the
/// collection is empty. Each measured array comes with its declaration.
pub(super) async fn shape<'f>(
    db: &Database,
    options: &Options,
    collection: &str,
    fields: &'f [ArrayField],
) -> Result<Option<(SizeStat, Vec<(&'f ArrayField, ArrayStat)>)>> {
    let (coverage, mut pipeline) = coverage(db, collection, options.sample).await?;
    if coverage.documents == 0 {
        return Ok(None);
    }
    let mut project = doc! {"_id": 1, "s": {"$bsonSize": "$$ROOT"}};
    for (i, f) in fields.iter().enumerate() {
        let path = format!("${}", f.field);
        project.insert(format!("a{i}"), doc! {"$cond": [{"$isArray": &path}, {"$size": &path}, Bson::Null]});
    }
    pipeline.push(doc! {"$project": project});
    let rows = aggregate(db, collection, pipeline).await?;
    let coverage = Coverage { read: rows.len() as u64, ..coverage };
    let sizes = sizes(db, collection, &coverage, &rows).await?;
    let arrays = fields
        .iter()
        .enumerate()
        .filter_map(|(i, f)| array(collection, &coverage, &rows, &format!("a{i}"), f).map(|a| (f, a)))
        .collect();
    Ok(Some((sizes, arrays)))
}

/// Document sizes, and the largest top-level field of the largest document.
async fn sizes(db: &Database, collection: &str, coverage: &Coverage, rows: &[BsonDoc]) -> Result<SizeStat> {
    let sizes: Vec<u64> = rows.iter().filter_map(|r| as_u64(r.get("s"))).collect();
    let largest = rows.iter().max_by_key(|r| as_u64(r.get("s")).unwrap_or(0)).and_then(|r| r.get("_id")).cloned();
    let mut largest_field = None;
    if let Some(id) = &largest {
        let found = db
            .collection::<BsonDoc>(collection)
            .find_one(doc! {"_id": id.clone()})
            .await
            .map_err(|e| Error::driver("find", collection, e))?;
        largest_field = found.and_then(|d| {
            d.iter()
                .map(|(k, v)| {
                    let bytes =
                        bson_compat::to_vec(&doc! { k.clone(): v.clone() }).map_or(0, |b| b.len().saturating_sub(5));
                    (k.clone(), bytes as u64)
                })
                .max_by_key(|(_, b)| *b)
        });
    }
    Ok(SizeStat {
        collection: collection.to_owned(),
        coverage: coverage.clone(),
        log2_counts: log2_counts(&sizes),
        bytes: Distribution::of(sizes, 0),
        largest_id: largest.as_ref().map(show_id),
        largest_field,
    })
}

/// The lengths of one array (column `key` of the rows); `None` when no
/// document holds it.
fn array(collection: &str, coverage: &Coverage, rows: &[BsonDoc], key: &str, f: &ArrayField) -> Option<ArrayStat> {
    let mut aged: Vec<(i64, u64)> = Vec::new();
    let mut lengths = Vec::new();
    for r in rows {
        let Some(len) = as_u64(r.get(key)) else { continue };
        lengths.push(len);
        if let Some(Bson::ObjectId(oid)) = r.get("_id") {
            aged.push((oid.timestamp().timestamp_millis(), len));
        }
    }
    if lengths.is_empty() {
        return None;
    }
    // By age only when every holder's `_id` tells its creation time.
    let trend = if aged.len() == lengths.len() { trend(aged) } else { None };
    let top = f.max.unwrap_or(0).max(f.threshold.unwrap_or(0).min(f.max.unwrap_or(u64::MAX)));
    Some(ArrayStat {
        collection: collection.to_owned(),
        field: f.field.to_owned(),
        kind: f.kind.to_owned(),
        declared_max: f.max,
        threshold: f.threshold,
        coverage: coverage.clone(),
        lengths: Distribution::of(lengths, top),
        trend,
    })
}
