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
/// document per page, without `_id`: `{<parent>, <page>, <count>,
/// <array>}` by count, `{<parent>, <start>, [<page>], <count>, <array>}`
/// by time (the reference texts' order; a window's first bucket has no
/// page number, as an append makes it).
pub(crate) fn pages(b: &StoredBuckets, parent_field: &str, field: &str) -> Vec<BsonDoc> {
    let size = i64::from(b.size.max(1));
    let Some(window) = b.window_ms else {
        let arr = format!("${field}");
        let slice = doc! {"$slice": [&arr, "$$i", size]};
        return vec![
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
        ];
    };
    let element = format!("${field}");
    let start = doc! {"$toDate": {"$toLong": {"$multiply": [
        {"$floor": {"$divide": [{"$toLong": format!("{element}.{}", b.by)}, window]}}, window,
    ]}}};
    let slice = doc! {"$slice": ["$e", "$$k", size]};
    let first = doc! {"$eq": ["$$k", 0]};
    vec![
        doc! {"$project": {field: 1}},
        doc! {"$unwind": {"path": &element, "includeArrayIndex": "_i"}},
        doc! {"$set": {"_w": start}},
        doc! {"$sort": {"_id": 1, "_i": 1}},
        doc! {"$group": {"_id": {"p": "$_id", "w": "$_w"}, "e": {"$push": &element}}},
        doc! {"$project": {"_id": 0, "p": {"$map": {
            "input": {"$range": [0, {"$size": "$e"}, size]},
            "as": "k",
            "in": {
                parent_field: "$_id.p",
                &b.start: "$_id.w",
                &b.page: {"$cond": [first, "$$REMOVE", {"$toInt": {"$add": [{"$divide": ["$$k", size]}, 1]}}]},
                &b.count: {"$size": slice.clone()},
                &b.field: slice,
            },
        }}}},
        doc! {"$unwind": "$p"},
        doc! {"$replaceRoot": {"newRoot": "$p"}},
    ]
}

/// The copy's pipeline after its `$match` and page limit: the pages merged
/// into `into`. By count, by parent and page number (the bucket type's
/// unique index): a page already there is kept, since a mirror wrote it
/// after the page was read, and the settle after the copy's page rewrites
/// any parent written meanwhile. By time a window's first bucket has no
/// page number to merge on: the parents that have pages (a mirror made
/// them all) are left out, and the others' pages inserted; a mirror making
/// some in between refuses the insert by the unique index, and the copy
/// runs the page again ([`copy_again`]). A scratch collection (the
/// probe's) has no such index: its pages are inserted.
pub(super) fn copy_stages(mv: &StoredMove, b: &StoredBuckets, field: &str, into: &str) -> Vec<BsonDoc> {
    let mut out = Vec::new();
    if b.window_ms.is_some() {
        out.push(doc! {"$lookup": {
            "from": into, "localField": "_id", "foreignField": &mv.parent_field,
            "pipeline": [{"$limit": 1}, {"$project": {"_id": 1}}], "as": "_had",
        }});
        out.push(doc! {"$match": {"_had": {"$size": 0}}});
    }
    out.extend(pages(b, &mv.parent_field, field));
    let merge = if into == mv.to.collection && b.window_ms.is_none() {
        let on = vec![Bson::String(mv.parent_field.clone()), Bson::String(b.page.clone())];
        doc! {"$merge": {"into": into, "on": on, "whenMatched": "keepExisting", "whenNotMatched": "insert"}}
    } else {
        doc! {"$merge": {"into": into, "whenMatched": "keepExisting", "whenNotMatched": "insert"}}
    };
    out.push(merge);
    out
}

/// Whether a page of the copy that failed with `e` runs again: a time
/// bucket a mirror made between the copy's look and its insert.
pub(super) fn copy_again(mv: &StoredMove, e: &crate::error::Error) -> bool {
    mv.buckets.as_ref().is_some_and(|b| b.window_ms.is_some()) && e.is_duplicate_key()
}

/// What a move into time buckets carries: the parents, elements, longest
/// array, the arrays' bytes and the elements without a date at the time
/// field (as `without_key`), then the pages the copy would make, counted
/// and measured on the server.
async fn count_windows(db: &Database, mv: &StoredMove, b: &StoredBuckets, field: &str) -> Result<MoveCounts> {
    let arr = format!("${field}");
    let undated = doc! {"$ne": [{"$type": format!("$$e.{}", b.by)}, "date"]};
    let arrays = vec![
        doc! {"$match": {format!("{field}.0"): {"$exists": true}}},
        doc! {"$project": {
            "n": {"$size": &arr},
            "undated": {"$size": {"$filter": {"input": &arr, "as": "e", "cond": undated}}},
            "arrayBytes": {"$bsonSize": {"a": &arr}},
        }},
        doc! {"$group": {
            "_id": Bson::Null, "parents": {"$sum": 1}, "elements": {"$sum": "$n"}, "largestArray": {"$max": "$n"},
            "undated": {"$sum": "$undated"}, "arrayBytes": {"$sum": "$arrayBytes"},
        }},
    ];
    let Some(row) = first(db, &mv.from.collection, arrays).await? else { return Ok(MoveCounts::default()) };
    let number = |row: &BsonDoc, name| crate::admin::doctor::as_u64(row.get(name)).unwrap_or(0);
    let mut counts = MoveCounts {
        parents: number(&row, "parents"),
        elements: number(&row, "elements"),
        largest_array: number(&row, "largestArray"),
        without_key: number(&row, "undated"),
        array_bytes: number(&row, "arrayBytes"),
        ..MoveCounts::default()
    };
    if counts.without_key > 0 {
        return Ok(counts);
    }
    let mut made = vec![doc! {"$match": {format!("{field}.0"): {"$exists": true}}}];
    made.extend(pages(b, &mv.parent_field, field));
    let size = doc! {"$add": [{"$bsonSize": "$$ROOT"}, ID_BYTES]};
    made.push(doc! {"$group": {"_id": Bson::Null, "pages": {"$sum": 1}, "bytes": {"$sum": &size}, "largest": {"$max": &size}}});
    if let Some(row) = first(db, &mv.from.collection, made).await? {
        (counts.pages, counts.bytes, counts.largest_document) =
            (number(&row, "pages"), number(&row, "bytes"), number(&row, "largest"));
    }
    Ok(counts)
}

/// What a move into buckets carries, in one aggregate: the parents and
/// elements, the pages they make with their bytes (the largest page is
/// the "largest document"), the longest array, and the arrays' bytes.
pub(super) async fn count(db: &Database, mv: &StoredMove, b: &StoredBuckets, field: &str) -> Result<MoveCounts> {
    if b.window_ms.is_some() {
        return count_windows(db, mv, b, field).await;
    }
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
    if let Some(c) = counts.filter(|c| c.without_key > 0) {
        let by = mv.buckets.as_ref().map_or("", |b| b.by.as_str());
        out.push(format!(
            "{} element(s) of {at} have no date `{by}`, so they fall in no window: give every element one first",
            c.without_key
        ));
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
    let mut made = vec!["_id", mv.parent_field.as_str(), b.page.as_str(), b.count.as_str(), b.field.as_str()];
    if b.window_ms.is_some() {
        made.push(b.start.as_str());
    }
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
    if let Some(window) = b.window_ms {
        return format!(
            "`{}` ({}): bucket by time, the elements of one `{}` whose `{}` falls in a window of {window} ms, {} \
             per bucket, by `{}`, `{}` and `{}` (a window's buckets hold its elements in array order)",
            mv.to.collection, mv.to.rust_type, mv.from.rust_type, b.by, b.size, mv.parent_field, b.start, b.page
        );
    }
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
