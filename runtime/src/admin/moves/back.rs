//! The way back of a one-to-one move (`#[embed(moved_from = "addresses")]`
//! on the parent's field): the documents of the old collection, each with
//! its `#[parent_ref]`, become the struct embedded in their parent. The
//! parent reference is not in the new program: it is read from the old
//! type in the stored schema. The two shapes are the ones of the forward
//! move ([`OldArray::One`]), the old one being the collection.

use super::count::{first, MoveCounts};
use super::move_plan::{blank, MovePlan};
use crate::error::Result;
use crate::schema::stored::{OldArray, StoredKind, StoredMove, StoredRelation, StoredType};
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::Database;

/// `mv` with the old documents' parent reference, the new field's stored
/// name, and whether the new type requires it; or what refuses it.
pub(super) fn resolve(
    stored: &[StoredType],
    program: &[StoredType],
    mv: &StoredMove,
) -> std::result::Result<(StoredMove, String, bool), String> {
    let parent =
        stored.iter().filter(|t| t.collection == mv.to.collection).flat_map(|t| &t.relations).find(|r| {
            matches!(r.kind, StoredKind::ParentRef) && r.target.as_deref() == Some(mv.from.collection.as_str())
        });
    let Some(parent) = parent else {
        return Err(format!(
            "the stored schema has no type of `{}` with a `#[parent_ref]` to `{}`: the old version must have \
             published its schema (`docrel::schema::publish`) before the move is planned",
            mv.to.collection, mv.from.rust_type
        ));
    };
    let Some(field) = new_field(program, mv) else {
        return Err(format!("the file declares the move into `{}` but not its field", mv.from.rust_type));
    };
    let required = super::shapes::required(program, &mv.from.collection, &field.field);
    let spec = StoredMove { parent_field: parent.field.clone(), ..mv.clone() };
    Ok((spec, field.field.clone(), required))
}

/// The new field, as the program declares it.
fn new_field<'p>(program: &'p [StoredType], mv: &StoredMove) -> Option<&'p StoredRelation> {
    let rust = mv.from.rust_field.as_deref().unwrap_or_default();
    program
        .iter()
        .filter(|t| t.collection == mv.from.collection)
        .flat_map(|t| &t.relations)
        .find(|r| r.rust_field == rust && matches!(r.kind, StoredKind::Embed { many: false, .. }))
}

/// What moves, in one aggregate over the old documents: those naming a
/// stored parent, parents named twice, and documents naming none.
pub(super) async fn count(db: &Database, mv: &StoredMove) -> Result<MoveCounts> {
    let parent = format!("${}", mv.parent_field);
    let pipeline = vec![
        doc! {"$match": {&mv.parent_field: {"$exists": true, "$ne": Bson::Null}}},
        doc! {"$group": {"_id": &parent, "n": {"$sum": 1}, "size": {"$max": {"$bsonSize": "$$ROOT"}}}},
        doc! {"$lookup": {"from": &mv.from.collection, "localField": "_id", "foreignField": "_id", "as": "found"}},
        doc! {"$project": {"n": 1, "size": 1, "stored": {"$gt": [{"$size": "$found"}, 0]}}},
        doc! {"$group": {
            "_id": Bson::Null,
            "parents": {"$sum": {"$cond": ["$stored", 1, 0]}},
            "elements": {"$sum": {"$cond": ["$stored", "$n", 0]}},
            "twice": {"$sum": {"$cond": [{"$gt": ["$n", 1]}, 1, 0]}},
            "orphans": {"$sum": {"$cond": ["$stored", 0, "$n"]}},
            "bytes": {"$sum": {"$cond": ["$stored", "$size", 0]}},
            "largest": {"$max": "$size"},
        }},
    ];
    let Some(row) = first(db, &mv.to.collection, pipeline).await? else { return Ok(MoveCounts::default()) };
    let number = |name| crate::admin::doctor::as_u64(row.get(name)).unwrap_or(0);
    Ok(MoveCounts {
        parents: number("parents"),
        elements: number("elements"),
        bytes: number("bytes"),
        largest_array: 1,
        largest_document: number("largest"),
        duplicate_keys: number("twice"),
        orphans: number("orphans"),
        ..MoveCounts::default()
    })
}

/// What the data stops: a parent named by two documents (the field holds
/// one), and, when the new field is required, parents without one.
pub(super) async fn data_refusals(
    db: &Database,
    mv: &StoredMove,
    required: bool,
    c: &MoveCounts,
) -> Result<Vec<String>> {
    let mut out = Vec::new();
    if c.duplicate_keys > 0 {
        out.push(format!(
            "{} `{}` document(s) are named by more than one `{}` document: `{}` holds one; delete or re-parent the \
             others first",
            c.duplicate_keys,
            mv.from.collection,
            mv.to.collection,
            mv.from.rust_field.as_deref().unwrap_or_default()
        ));
    }
    if required {
        let all = db.collection::<BsonDoc>(&mv.from.collection).estimated_document_count().await;
        let all = all.map_err(|e| crate::error::Error::driver("count", mv.from.collection.clone(), e))?;
        let missing = all.saturating_sub(c.parents);
        if missing > 0 {
            out.push(format!(
                "about {missing} `{}` document(s) have no `{}` document, and `{}::{}` is not an `Option`: make it one, \
                 or give each its document first",
                mv.from.collection,
                mv.to.collection,
                mv.from.rust_type,
                mv.from.rust_field.as_deref().unwrap_or_default()
            ));
        }
    }
    Ok(out)
}

/// The words of the plan that come from the schemas alone.
pub(super) fn describe(plan: &mut MovePlan, mv: &StoredMove, field: &str) {
    let (from, to, parent) = (&mv.from.collection, &mv.to.collection, &mv.parent_field);
    plan.old = OldArray::One;
    plan.from = format!("{to} (by `{parent}`)");
    plan.to = format!("{from}.{field}");
    plan.old_shape = format!("one-to-one (a `{to}` document referring to its parent by `{parent}`)");
    plan.new_shape = vec![format!("`{from}.{field}`: one-to-one (embed)")];
    plan.bounds = vec![format!(
        "a `{from}` has one `{to}` document while both shapes are kept: a second one of a parent is refused in \
         either version until the old collection is retired"
    )];
    plan.readers = vec![
        format!("during the move: `{to}` as before, with every `{field}` the new version writes in it"),
        format!(
            "after it is retired: `{to}` no longer changes; with `--drop-old` its documents are gone, so old readers \
             must be gone first"
        ),
    ];
    plan.derived = vec![format!(
        "each `{to}` document becomes `{from}.{field}` of the parent its `{parent}` names, without its `_id` and \
         `{parent}`"
    )];
}

/// The pipeline, on the old collection, copying the documents `matched`
/// finds (at most `limit`, in `_id` order) into their parents' `field`;
/// a parent that is not stored gets nothing.
pub(super) fn copy_pipeline(mv: &StoredMove, field: &str, matched: BsonDoc, limit: Option<i64>) -> Vec<BsonDoc> {
    let mut first = doc! {&mv.parent_field: {"$exists": true, "$ne": Bson::Null}};
    first.extend(matched);
    let mut out = vec![doc! {"$match": first}, doc! {"$sort": {"_id": 1}}];
    if let Some(limit) = limit {
        out.push(doc! {"$limit": limit});
    }
    out.extend([
        doc! {"$replaceRoot": {"newRoot": {"_id": format!("${}", mv.parent_field), field: "$$ROOT"}}},
        doc! {"$project": {
            format!("{field}._id"): 0,
            format!("{field}.{}", mv.parent_field): 0,
            format!("{field}._docrel"): 0,
        }},
        doc! {"$merge": {"into": &mv.from.collection, "on": "_id", "whenMatched": "merge", "whenNotMatched": "discard"}},
    ]);
    out
}

/// The plan of `mv` (see [`super::plan::plan`]).
pub(super) async fn plan(
    db: &Database,
    stored: &[StoredType],
    program: &[StoredType],
    existing: &[String],
    mv: &StoredMove,
) -> Result<MovePlan> {
    let mut plan = blank(program, mv);
    let (spec, field, required) = match resolve(stored, program, mv) {
        Ok(resolved) => resolved,
        Err(refusal) => {
            plan.refusals.push(refusal);
            return Ok(plan);
        }
    };
    describe(&mut plan, &spec, &field);
    if existing.contains(&spec.to.collection) {
        let counts = count(db, &spec).await?;
        plan.refusals.extend(data_refusals(db, &spec, required, &counts).await?);
        plan.counts = Some(counts);
    }
    Ok(plan)
}

/// Why `mv` cannot run now (empty: it can).
pub(super) async fn refusals(
    db: &Database,
    stored: &[StoredType],
    program: &[StoredType],
    mv: &StoredMove,
) -> Result<Vec<String>> {
    match resolve(stored, program, mv) {
        Err(refusal) => Ok(vec![refusal]),
        Ok((spec, _, required)) => {
            let counts = count(db, &spec).await?;
            data_refusals(db, &spec, required, &counts).await
        }
    }
}

/// Drops the old collection of a retired move back (`--drop-old`):
/// answers how many documents it held, and that it finished.
pub(super) async fn drop_documents(db: &Database, mv: &StoredMove) -> Result<(u64, bool)> {
    let old = db.collection::<BsonDoc>(&mv.to.collection);
    let failed = |op: &'static str| move |e| crate::error::Error::driver(op, mv.to.collection.clone(), e);
    let held = old.count_documents(doc! {}).await.map_err(failed("count"))?;
    old.drop().await.map_err(failed("drop"))?;
    Ok((held, true))
}
