//! A move of an embedded array into bucket documents by count
//! ([`MoveKind::EmbedToBuckets`](crate::schema::moves::MoveKind)): page
//! `k` of a parent holds the array's elements `[(k-1)·size, k·size)`, so
//! the pages are a function of the array. What this kind plans and copies
//! differently from a move into documents of their own: no element needs
//! an identity, the pages are counted rather than the elements, and the
//! copy slices each array on the server and merges the pages by parent
//! and page number.

use super::count::{first, MoveCounts};
use crate::error::Result;
use crate::schema::stored::{StoredBuckets, StoredMove, StoredRelation, StoredType};
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::Database;

/// Bytes an `_id` of type `ObjectId` adds to a page (its element header
/// and twelve bytes): the pages' `_id`s are made when they are inserted.
const ID_BYTES: i64 = 17;

/// The stages making, out of parents holding the array `field`, one
/// document per page: `{<parent>, <page>, <count>, <array>}`, in that
/// order (the reference text's), without `_id`.
pub(crate) fn pages(b: &StoredBuckets, parent_field: &str, field: &str) -> [BsonDoc; 3] {
    let arr = format!("${field}");
    let size = i64::from(b.size.max(1));
    let slice = doc! {"$slice": [&arr, "$$i", size]};
    [
        doc! {"$project": {"_id": 0, "p": {"$map": {
            "input": {"$range": [0, {"$size": &arr}, size]},
            "as": "i",
            "in": {
                parent_field: "$_id",
                &b.page: {"$toInt": {"$add": [{"$divide": ["$$i", size]}, 1]}},
                &b.count: {"$size": slice.clone()},
                &b.field: slice,
            },
        }}}},
        doc! {"$unwind": "$p"},
        doc! {"$replaceRoot": {"newRoot": "$p"}},
    ]
}

/// The copy's pipeline after its `$match` and page limit: the pages merged
/// into `into` by parent and page number (the bucket type's unique index).
/// A page already there is kept: a mirror wrote it since the page was
/// read, and the settle after the copy's page rewrites any parent written
/// meanwhile. A scratch collection (the probe's) has no such index: its
/// pages are inserted.
pub(super) fn copy_stages(mv: &StoredMove, b: &StoredBuckets, field: &str, into: &str) -> Vec<BsonDoc> {
    let mut out = pages(b, &mv.parent_field, field).to_vec();
    let merge = if into == mv.to.collection {
        let on = vec![Bson::String(mv.parent_field.clone()), Bson::String(b.page.clone())];
        doc! {"$merge": {"into": into, "on": on, "whenMatched": "keepExisting", "whenNotMatched": "insert"}}
    } else {
        doc! {"$merge": {"into": into, "whenMatched": "keepExisting", "whenNotMatched": "insert"}}
    };
    out.push(merge);
    out
}

/// What a move into buckets carries, in one aggregate: the parents and
/// elements, the pages they make with their bytes (the largest page is
/// the "largest document"), the longest array, and the arrays' bytes.
pub(super) async fn count(db: &Database, mv: &StoredMove, b: &StoredBuckets, field: &str) -> Result<MoveCounts> {
    let arr = format!("${field}");
    let size = i64::from(b.size.max(1));
    let page_bytes = doc! {"$add": [{"$bsonSize": {
        &mv.parent_field: "$_id", &b.page: 1_i32, &b.count: 1_i32, &b.field: {"$slice": [&arr, "$$i", size]},
    }}, ID_BYTES]};
    let pipeline = vec![
        doc! {"$match": {format!("{field}.0"): {"$exists": true}}},
        doc! {"$project": {
            "n": {"$size": &arr},
            "pages": {"$map": {"input": {"$range": [0, {"$size": &arr}, size]}, "as": "i", "in": page_bytes}},
            "arrayBytes": {"$bsonSize": {"a": &arr}},
        }},
        doc! {"$group": {
            "_id": Bson::Null,
            "parents": {"$sum": 1},
            "elements": {"$sum": "$n"},
            "pages": {"$sum": {"$size": "$pages"}},
            "bytes": {"$sum": {"$sum": "$pages"}},
            "largestArray": {"$max": "$n"},
            "largestDocument": {"$max": {"$max": "$pages"}},
            "arrayBytes": {"$sum": "$arrayBytes"},
        }},
    ];
    let Some(row) = first(db, &mv.from.collection, pipeline).await? else { return Ok(MoveCounts::default()) };
    let number = |name| crate::admin::doctor::as_u64(row.get(name)).unwrap_or(0);
    Ok(MoveCounts {
        parents: number("parents"),
        elements: number("elements"),
        pages: number("pages"),
        bytes: number("bytes"),
        largest_array: number("largestArray"),
        largest_document: number("largestDocument"),
        array_bytes: number("arrayBytes"),
        ..MoveCounts::default()
    })
}

/// What stops a move into buckets: an old field that is no array, a
/// bucket type requiring a field the pages are not made with, a page over
/// the server's document limit, or a bucket collection that already holds
/// pages (the copy fills an empty one; `listed` says the move is under way
/// already, whose pages those are).
pub(super) async fn refusals(
    db: &Database,
    (program, mv): (&[StoredType], &StoredMove),
    old: &StoredRelation,
    counts: Option<&MoveCounts>,
    listed: bool,
) -> Result<Vec<String>> {
    let at = format!("`{}.{}`", mv.from.collection, old.field);
    let mut out = unmade_fields(program, mv);
    if !matches!(old.kind, crate::schema::stored::StoredKind::Embed { many: true, .. }) {
        out.push(format!(
            "{at} is {}: a move into buckets takes an embedded array (`#[embed] {}: Vec<..>`)",
            old.pattern().name(),
            old.field
        ));
        return Ok(out);
    }
    let limit = crate::error::MAX_DOCUMENT_BYTES as u64;
    if let Some(c) = counts.filter(|c| c.largest_document > limit) {
        out.push(format!(
            "a page of {at} would be {} bytes, above the {limit} a document may hold: declare a smaller \
             `#[bucket(size = ..)]`",
            c.largest_document
        ));
    }
    if !listed {
        let held = db
            .collection::<BsonDoc>(&mv.to.collection)
            .estimated_document_count()
            .await
            .map_err(|e| crate::error::Error::driver("count", mv.to.collection.clone(), e))?;
        if held > 0 {
            out.push(format!(
                "`{}` already holds {held} document(s): a move into buckets fills an empty collection (its pages \
                 are made from {at}); move them away first",
                mv.to.collection
            ));
        }
    }
    Ok(out)
}

/// The fields of the bucket type that the pages a move makes do not hold
/// and that it requires (no `Option`): reading such a page would fail.
fn unmade_fields(program: &[StoredType], mv: &StoredMove) -> Vec<String> {
    let Some(b) = &mv.buckets else { return Vec::new() };
    let made = ["_id", mv.parent_field.as_str(), b.page.as_str(), b.count.as_str(), b.field.as_str()];
    let bucket = program.iter().find(|t| t.collection == mv.to.collection && t.rust_name == mv.to.rust_type);
    let fields = bucket.into_iter().flat_map(|t| &t.fields);
    fields
        .filter(|f| !made.contains(&f.bson.as_str()) && !crate::schema::indexes::is_option(&f.rust_type))
        .map(|f| {
            format!(
                "`{}::{}` is required, and the pages a move makes hold only `{}`: make it an `Option`",
                mv.to.rust_type,
                f.bson,
                made.join("`, `")
            )
        })
        .collect()
}

/// The new shape's words for a move into buckets.
pub(super) fn new_shape(mv: &StoredMove, b: &StoredBuckets) -> String {
    format!(
        "`{}` ({}): bucket, {} element(s) of one `{}` per page, by `{}` and `{}` (page k holds elements \
         (k-1)·{}+1 to k·{} of the array, in order)",
        mv.to.collection, mv.to.rust_type, b.size, mv.from.rust_type, mv.parent_field, b.page, b.size, b.size
    )
}

/// The derived data that goes with the elements: they move whole, so a
/// copy inside them moves as a plain field of the page's element.
pub(super) fn derived(mv: &StoredMove, b: &StoredBuckets, old: &StoredRelation) -> Vec<String> {
    let mut out = Vec::new();
    for r in &old.elements {
        for c in &r.copies {
            out.push(format!(
                "copy `{}[].{}` ← `{}.{}` moves into `{}.{}[]` as a plain field and is no longer kept",
                old.field, c.field, c.source, c.source_field, mv.to.collection, b.field
            ));
        }
        out.push(format!(
            "reference `{}[].{}` → `{}` moves into `{}.{}[]` and is no longer kept (on_delete {})",
            old.field, r.field, r.target, mv.to.collection, b.field, r.on_delete
        ));
    }
    out.push(format!(
        "the version records of copies inside `{}` (each parent's `_docrel.copies`) go when the array is retired",
        old.field
    ));
    out
}

/// What a reader of the new version sees before the pages are all made.
pub(super) fn new_readers(mv: &StoredMove) -> String {
    format!(
        "the new version's reads of `{}` are refused until the move is `moved` (every page made, kept by every \
         write); `docrel schema apply` takes it there",
        mv.to.collection
    )
}
