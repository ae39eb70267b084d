//! What a move would carry, counted on the live data: one aggregate over
//! the parents holding elements (and a second for duplicate keys), exact,
//! on the primary, with `allowDiskUse` so no stage meets a memory cap.

use crate::error::{Error, Result};
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::Database;
use serde::Serialize;

/// The elements of one array across its collection.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MoveCounts {
    /// Documents whose array holds at least one element.
    pub parents: u64,
    /// Elements, each a new document.
    pub elements: u64,
    /// The new documents' bytes (each element with its parent reference).
    pub bytes: u64,
    /// The longest array.
    pub largest_array: u64,
    /// The largest new document, in bytes.
    pub largest_document: u64,
    /// Elements without the key that becomes their `_id`.
    pub without_key: u64,
    /// Keys held by more than one element.
    pub duplicate_keys: u64,
    /// The BSON types of the elements' keys (`objectId`, `long`, ..).
    pub key_types: Vec<String>,
    /// The bytes the arrays take in their parents, freed once retired.
    pub array_bytes: u64,
    /// Ids of an array of references that name no document: nothing gets
    /// a parent reference for them.
    #[serde(default)]
    pub dangling: u64,
    /// Documents of the new collection no array of ids names: they get no
    /// parent reference.
    #[serde(default)]
    pub orphans: u64,
    /// The bucket documents a move into buckets makes (0 for other kinds).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pages: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Counts the elements of `collection.field`; `key` is the element field
/// that becomes the new `_id`, `parent_field` the new parent reference.
pub(super) async fn count(
    db: &Database,
    collection: &str,
    field: &str,
    key: &str,
    parent_field: &str,
) -> Result<MoveCounts> {
    let arr = format!("${field}");
    let key_of = format!("$$e.{key}");
    // `$map` rather than `"$arr.key"`: a path through an array is what
    // some servers answer wrongly inside expressions. A null key is no
    // identity either, and some servers type an absent `$$e.key` as null.
    let pipeline = vec![
        doc! {"$match": {format!("{field}.0"): {"$exists": true}}},
        doc! {"$project": {
            "n": {"$size": &arr},
            "docs": {"$map": {"input": &arr, "as": "e", "in": {"$bsonSize": {"$mergeObjects": ["$$e", {parent_field: "$_id"}]}}}},
            "noKey": {"$size": {"$filter": {"input": &arr, "as": "e", "cond": {"$in": [{"$type": &key_of}, ["missing", "null"]]}}}},
            "types": {"$setUnion": [{"$map": {"input": &arr, "as": "e", "in": {"$type": &key_of}}}]},
            "arrayBytes": {"$bsonSize": {"a": &arr}},
        }},
        doc! {"$group": {
            "_id": Bson::Null,
            "parents": {"$sum": 1},
            "elements": {"$sum": "$n"},
            "bytes": {"$sum": {"$sum": "$docs"}},
            "largestArray": {"$max": "$n"},
            "largestDocument": {"$max": {"$max": "$docs"}},
            "withoutKey": {"$sum": "$noKey"},
            "types": {"$addToSet": "$types"},
            "arrayBytes": {"$sum": "$arrayBytes"},
        }},
    ];
    let Some(row) = first(db, collection, pipeline).await? else { return Ok(MoveCounts::default()) };
    let mut counts = MoveCounts {
        parents: number(&row, "parents"),
        elements: number(&row, "elements"),
        bytes: number(&row, "bytes"),
        largest_array: number(&row, "largestArray"),
        largest_document: number(&row, "largestDocument"),
        without_key: number(&row, "withoutKey"),
        key_types: key_types(&row),
        array_bytes: number(&row, "arrayBytes"),
        duplicate_keys: 0,
        dangling: 0,
        orphans: 0,
        pages: 0,
    };
    // An element without its key has no identity to compare.
    if counts.without_key == 0 {
        counts.duplicate_keys = duplicates(db, collection, field, key).await?;
    }
    Ok(counts)
}

/// What a run checks before it announces a move: elements without their
/// key, keys held twice, and the keys' types (the refusals), in one
/// aggregate. The sizes the diff shows are not counted again: a run over
/// large data pays one pass over the arrays before it copies them.
/// An empty `key` takes each element itself (an array of ids).
pub(super) async fn keys(db: &Database, collection: &str, field: &str, key: &str) -> Result<MoveCounts> {
    // The elements unwound and grouped by key: no expression runs per
    // element (an absent key groups as null), and one per key only in the
    // last group, which is by the key's type.
    let of = if key.is_empty() { "$e".to_owned() } else { format!("$e.{key}") };
    let pipeline = vec![
        doc! {"$match": {format!("{field}.0"): {"$exists": true}}},
        doc! {"$project": {"_id": 0, "e": format!("${field}")}},
        doc! {"$unwind": "$e"},
        doc! {"$group": {"_id": of, "n": {"$sum": 1}}},
        doc! {"$group": {
            "_id": {"$type": "$_id"},
            "elements": {"$sum": "$n"},
            "dups": {"$sum": {"$cond": [{"$gt": ["$n", 1]}, 1, 0]}},
        }},
    ];
    let failed = |e| Error::driver("aggregate", collection, e);
    let mut cursor = aggregate(db, collection, pipeline).await?;
    let mut out = MoveCounts::default();
    while cursor.advance().await.map_err(failed)? {
        let row = cursor.deserialize_current().map_err(failed)?;
        let elements = number(&row, "elements");
        out.elements += elements;
        match row.get_str("_id").unwrap_or("null") {
            "null" | "missing" => out.without_key += elements,
            other => {
                out.duplicate_keys += number(&row, "dups");
                out.key_types.push(other.to_owned());
            }
        }
    }
    out.key_types.sort();
    Ok(out)
}

/// What a move of an array of ids carries: the parents and their ids
/// (null ids, ids held twice, their types, from [`keys`]), and the ids
/// naming no document of the new collection, in two more aggregates.
pub(super) async fn count_ids(
    db: &Database,
    mv: &crate::schema::stored::StoredMove,
    field: &str,
) -> Result<MoveCounts> {
    let collection = &mv.from.collection;
    let mut counts = keys(db, collection, field, "").await?;
    let arr = format!("${field}");
    let sizes = vec![
        doc! {"$match": {format!("{field}.0"): {"$exists": true}}},
        doc! {"$project": {"n": {"$size": &arr}, "arrayBytes": {"$bsonSize": {"a": &arr}}}},
        doc! {"$group": {"_id": Bson::Null, "parents": {"$sum": 1}, "largest": {"$max": "$n"}, "bytes": {"$sum": "$arrayBytes"}}},
    ];
    if let Some(row) = first(db, collection, sizes).await? {
        counts.parents = number(&row, "parents");
        counts.largest_array = number(&row, "largest");
        counts.array_bytes = number(&row, "bytes");
    }
    let found = vec![
        doc! {"$match": {format!("{field}.0"): {"$exists": true}}},
        doc! {"$project": {field: 1}},
        doc! {"$lookup": {"from": &mv.to.collection, "localField": field, "foreignField": "_id", "as": "found"}},
        doc! {"$group": {"_id": Bson::Null, "found": {"$sum": {"$size": "$found"}}}},
    ];
    let found = first(db, collection, found).await?.map_or(0, |row| number(&row, "found"));
    counts.dangling = counts.elements.saturating_sub(counts.without_key).saturating_sub(found);
    counts.orphans = orphans(db, mv, field).await?;
    Ok(counts)
}

/// What a move of one embedded document (`collection.field`) carries, in
/// one aggregate: each parent holding one gives one new document whose
/// `_id` is the parent's, so no key is missing or held twice; the key
/// types are the parents' `_id` types.
pub(super) async fn count_one(db: &Database, collection: &str, field: &str, parent_field: &str) -> Result<MoveCounts> {
    let one = format!("${field}");
    let pipeline = vec![
        doc! {"$match": {field: {"$type": "object"}}},
        doc! {"$project": {
            "doc": {"$bsonSize": {"$mergeObjects": [&one, {"_id": "$_id", parent_field: "$_id"}]}},
            "type": {"$type": "$_id"},
            "fieldBytes": {"$bsonSize": {"a": &one}},
        }},
        doc! {"$group": {
            "_id": Bson::Null,
            "parents": {"$sum": 1},
            "bytes": {"$sum": "$doc"},
            "largestDocument": {"$max": "$doc"},
            "types": {"$addToSet": "$type"},
            "fieldBytes": {"$sum": "$fieldBytes"},
        }},
    ];
    let Some(row) = first(db, collection, pipeline).await? else { return Ok(MoveCounts::default()) };
    let types = row.get_array("types").cloned().unwrap_or_default();
    let parents = number(&row, "parents");
    Ok(MoveCounts {
        parents,
        elements: parents,
        bytes: number(&row, "bytes"),
        largest_array: 1,
        largest_document: number(&row, "largestDocument"),
        key_types: key_types(&doc! {"types": [types]}),
        array_bytes: number(&row, "fieldBytes"),
        ..MoveCounts::default()
    })
}

/// The documents of `mv`'s collection that no parent's array of ids
/// (`field`) names.
pub(super) async fn orphans(db: &Database, mv: &crate::schema::stored::StoredMove, field: &str) -> Result<u64> {
    let pipeline = vec![
        doc! {"$project": {"_id": 1}},
        doc! {"$lookup": {"from": &mv.from.collection, "localField": "_id", "foreignField": field, "as": "p"}},
        doc! {"$match": {"p": {"$size": 0}}},
        doc! {"$count": "n"},
    ];
    Ok(first(db, &mv.to.collection, pipeline).await?.map_or(0, |row| number(&row, "n")))
}

/// Keys that more than one element holds, across every parent.
async fn duplicates(db: &Database, collection: &str, field: &str, key: &str) -> Result<u64> {
    let pipeline = vec![
        doc! {"$match": {format!("{field}.0"): {"$exists": true}}},
        doc! {"$project": {"k": {"$map": {"input": format!("${field}"), "as": "e", "in": format!("$$e.{key}")}}}},
        doc! {"$unwind": "$k"},
        doc! {"$group": {"_id": "$k", "n": {"$sum": 1}}},
        doc! {"$match": {"n": {"$gt": 1}}},
        doc! {"$count": "dups"},
    ];
    Ok(first(db, collection, pipeline).await?.map_or(0, |row| number(&row, "dups")))
}

/// An aggregate of the counts: on the primary, with `allowDiskUse` so no
/// stage meets a memory cap.
async fn aggregate(db: &Database, collection: &str, pipeline: Vec<BsonDoc>) -> Result<mongodb::Cursor<BsonDoc>> {
    let primary = mongodb::options::SelectionCriteria::ReadPreference(mongodb::options::ReadPreference::Primary);
    db.collection::<BsonDoc>(collection)
        .aggregate(pipeline)
        .allow_disk_use(true)
        .selection_criteria(primary)
        .await
        .map_err(|e| Error::driver("aggregate", collection, e))
}

/// The one row an aggregate answers, if any.
pub(crate) async fn first(db: &Database, collection: &str, pipeline: Vec<BsonDoc>) -> Result<Option<BsonDoc>> {
    let mut cursor = aggregate(db, collection, pipeline).await?;
    if cursor.advance().await.map_err(|e| Error::driver("aggregate", collection, e))? {
        let row = cursor.deserialize_current().map_err(|e| Error::driver("aggregate", collection, e))?;
        return Ok(Some(row));
    }
    Ok(None)
}

/// A count, whatever numeric type the server answered with.
fn number(row: &BsonDoc, name: &str) -> u64 {
    crate::admin::doctor::as_u64(row.get(name)).unwrap_or(0)
}

/// The distinct key types, sorted, from the per-parent sets.
fn key_types(row: &BsonDoc) -> Vec<String> {
    let mut out: Vec<String> = row
        .get_array("types")
        .map(|sets| {
            sets.iter()
                .filter_map(Bson::as_array)
                .flatten()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .filter(|t| t != "missing" && t != "null")
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out.dedup();
    out
}
