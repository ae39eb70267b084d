//! The sizes of a collection's documents and the lengths of its arrays,
//! computed by the server (`$bsonSize`, `$size`) in one aggregate.

use super::read::{aggregate, as_u64, coverage};
use crate::admin::doctor::declared::ArrayField;
use crate::admin::doctor::report::{log2_counts, trend, ArrayStat, Coverage, Distribution, Options, SizeStat};
use crate::bson_compat;
use crate::error::{show_id, Error, Result};
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::Database;

/// The sizes of one collection's documents and the lengths of its arrays,
/// in one aggregate (plus a read of the largest document); `None` when the
/// collection is empty. Each measured array comes with its declaration.
pub(crate) async fn shape<'f>(
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
        rust: (f.rust.0.to_owned(), f.rust.1.to_owned()),
        kind: f.kind,
        declared_max: f.max,
        threshold: f.threshold,
        coverage: coverage.clone(),
        lengths: Distribution::of(lengths, top),
        trend,
    })
}
