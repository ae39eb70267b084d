//! The plan of each declared move, from the attributes and the live data:
//! both shapes in the reference texts' words, what moves and its bytes, the
//! indexes, bounds and derived data that go with it, the time it should
//! take, what readers of the old version see, and what refuses it.

use super::copy::probe;
use super::count::count;
use super::move_plan::blank;
pub use super::move_plan::MovePlan;
use crate::admin::index_plan::{existing_collections, show};
use crate::error::Result;
use crate::schema::stored::{OldArray, StoredKind, StoredMove, StoredRelation, StoredType};
use mongodb::Database;

/// Parents the probe copies to measure the rate.
const PROBE_PARENTS: i64 = 50;

/// Plans each of `moves` against the schema stored in `db` and its data;
/// `program` is the new version's types. With `probe`, one page of each
/// move is copied into a scratch collection (then dropped) to time it.
pub async fn plan(db: &Database, program: &[StoredType], moves: &[StoredMove], probe: bool) -> Result<Vec<MovePlan>> {
    let stored = crate::schema::stored::load(db).await?;
    plan_with(db, &stored, program, moves, probe).await
}

/// [`plan`], given the stored schema.
pub(crate) async fn plan_with(
    db: &Database,
    stored: &[StoredType],
    program: &[StoredType],
    moves: &[StoredMove],
    probe: bool,
) -> Result<Vec<MovePlan>> {
    let existing = existing_collections(db).await?;
    let mut out = Vec::new();
    for mv in moves {
        out.push(plan_one(db, stored, program, &existing, mv, probe).await?);
    }
    Ok(out)
}

/// Why `mv` cannot run on `db` now (empty: it can), from the program and
/// the live data's keys ([`super::count::keys`]), without the sizes the
/// full plan counts.
pub(crate) async fn refusals(
    db: &Database,
    stored: &[StoredType],
    program: &[StoredType],
    mv: &StoredMove,
) -> Result<Vec<String>> {
    if mv.kind.is_back() {
        return super::back::refusals(db, stored, program, mv).await;
    }
    let mut plan = blank(program, mv);
    let Some(old) = old_relation(stored, mv, &mut plan) else { return Ok(plan.refusals) };
    plan.refusals.extend(super::shapes::program_refusals(program, mv, old));
    if let Some(b) = &mv.buckets {
        let present = existing_collections(db).await?.contains(&mv.from.collection);
        let counts = if present { Some(super::paged::count(db, mv, b, &old.field).await?) } else { None };
        let listed = listed(db, mv).await?;
        plan.refusals.extend(super::paged::refusals(db, (program, mv), old, counts.as_ref(), listed).await?);
        return Ok(plan.refusals);
    }
    if existing_collections(db).await?.contains(&mv.from.collection) {
        let (collection, field) = (&mv.from.collection, &old.field);
        let keys = match holds(old) {
            OldArray::Elements => super::count::keys(db, collection, field, &mv.key).await?,
            OldArray::Ids => {
                let mut keys = super::count::keys(db, collection, field, "").await?;
                keys.orphans = super::count::orphans(db, mv, field).await?;
                keys
            }
            OldArray::One => super::count::count_one(db, collection, field, &mv.parent_field).await?,
        };
        plan.refusals.extend(super::shapes::data_refusals(program, mv, old, &keys));
    }
    Ok(plan.refusals)
}

/// The stored embedded arrays the program no longer declares while it adds
/// a collection and declares no move of them: never taken for a move, but
/// said, since it is the mistake a move without `moved_from` makes.
pub fn undeclared(stored: &[StoredType], program: &[StoredType], moves: &[StoredMove]) -> Vec<String> {
    let added: Vec<&str> =
        program.iter().map(|t| t.collection.as_str()).filter(|c| !stored.iter().any(|s| s.collection == *c)).collect();
    if added.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for s in stored.iter().filter(|s| program.iter().any(|t| t.collection == s.collection)) {
        let declared = |field: &str| {
            program
                .iter()
                .filter(|t| t.collection == s.collection)
                .any(|t| t.relations.iter().any(|r| r.field == field))
        };
        for r in s.relations.iter().filter(|r| matches!(r.kind, StoredKind::Embed { many: true, .. })) {
            let moved = moves.iter().any(|m| {
                m.from.collection == s.collection
                    && m.from.rust_field.as_deref().is_some_and(|f| f == r.rust_field || f == r.field)
            });
            if declared(&r.field) || moved {
                continue;
            }
            out.push(format!(
 "`{}.{}` is no longer declared and `{}` is new: not a move unless a type of `{}` declares `#[document(moved_from = {}::{})]`; without it the array stays as it is (and `--remove {}.{}` forgets its rule)",
                s.collection,
                r.field,
                added.join("`, `"),
                added.join("` or `"),
                s.rust_name,
                r.rust_field,
                s.collection,
                r.field
            ));
        }
    }
    out
}

async fn plan_one(
    db: &Database,
    stored: &[StoredType],
    program: &[StoredType],
    existing: &[String],
    mv: &StoredMove,
    with_probe: bool,
) -> Result<MovePlan> {
    if mv.kind.is_back() {
        return super::back::plan(db, stored, program, existing, mv).await;
    }
    let mut plan = blank(program, mv);
    let Some(old) = old_relation(stored, mv, &mut plan) else { return Ok(plan) };
    if let Some(b) = &mv.buckets {
        return plan_buckets(db, program, existing, (mv, b), old, plan, with_probe).await;
    }
    plan.old = holds(old);
    plan.from = format!("{}.{}", mv.from.collection, old.field);
    plan.old_shape = super::shapes::old_shape(old);
    plan.refusals.extend(super::shapes::program_refusals(program, mv, old));
    plan.derived = super::shapes::derived(program, mv, old);
    plan.readers = super::shapes::readers(mv, old);
    plan.bounds = super::shapes::bounds(mv, old);
    plan.index_builds = super::indexes::needed(db, program, mv, holds(old), &old.field)
        .await?
        .into_iter()
        .map(|(collection, model)| format!("{collection} {}", show(&model.keys)))
        .collect();
    if existing.contains(&mv.from.collection) {
        let counts = match holds(old) {
            OldArray::Elements => count(db, &mv.from.collection, &old.field, &mv.key, &mv.parent_field).await?,
            OldArray::Ids => super::count::count_ids(db, mv, &old.field).await?,
            OldArray::One => super::count::count_one(db, &mv.from.collection, &old.field, &mv.parent_field).await?,
        };
        plan.refusals.extend(super::shapes::data_refusals(program, mv, old, &counts));
        if with_probe && counts.elements > 0 {
            plan.estimate = probe(db, mv, holds(old), &old.field, PROBE_PARENTS, counts.elements).await?;
        }
        plan.counts = Some(counts);
    }
    Ok(plan)
}

/// [`plan_one`] of a move into buckets ([`super::paged`]).
async fn plan_buckets(
    db: &Database,
    program: &[StoredType],
    existing: &[String],
    (mv, b): (&StoredMove, &crate::schema::stored::StoredBuckets),
    old: &StoredRelation,
    mut plan: MovePlan,
    with_probe: bool,
) -> Result<MovePlan> {
    plan.from = format!("{}.{}", mv.from.collection, old.field);
    plan.old_shape = super::shapes::old_shape(old);
    plan.new_shape = vec![super::paged::new_shape(mv, b)];
    plan.refusals.extend(super::shapes::program_refusals(program, mv, old));
    plan.derived = super::paged::derived(mv, b, old);
    plan.readers = super::shapes::readers(mv, old);
    plan.readers.push(super::paged::new_readers(mv));
    plan.bounds = super::shapes::bounds(mv, old);
    plan.index_builds = super::indexes::needed(db, program, mv, OldArray::Elements, &old.field)
        .await?
        .into_iter()
        .map(|(collection, model)| format!("{collection} {}", show(&model.keys)))
        .collect();
    let counts = if existing.contains(&mv.from.collection) {
        Some(super::paged::count(db, mv, b, &old.field).await?)
    } else {
        None
    };
    let listed = listed(db, mv).await?;
    plan.refusals.extend(super::paged::refusals(db, (program, mv), old, counts.as_ref(), listed).await?);
    if let Some(c) = counts.as_ref().filter(|c| with_probe && c.pages > 0) {
        plan.estimate = probe(db, mv, OldArray::Elements, &old.field, PROBE_PARENTS, c.pages).await?;
    }
    plan.counts = counts;
    Ok(plan)
}

/// Whether `mv` is under way in `db` (its pages are then its own).
async fn listed(db: &Database, mv: &StoredMove) -> Result<bool> {
    Ok(crate::schema::stored::load_moves(db).await?.iter().any(|m| m.spec.id == mv.id))
}

/// The stored rule of `mv`'s old array, found by the old version's Rust
/// name (or its stored name).
pub(super) fn stored_array<'s>(stored: &'s [StoredType], mv: &StoredMove) -> Option<&'s StoredRelation> {
    let rust_field = mv.from.rust_field.as_deref().unwrap_or_default();
    stored
        .iter()
        .filter(|t| t.collection == mv.from.collection)
        .flat_map(|t| &t.relations)
        .find(|r| r.rust_field == rust_field || r.field == rust_field)
}

/// The stored rule of the old array; `None` (with the refusal said) when
/// the old version never published it or it is no embedded array.
fn old_relation<'s>(stored: &'s [StoredType], mv: &StoredMove, plan: &mut MovePlan) -> Option<&'s StoredRelation> {
    let rust_field = mv.from.rust_field.as_deref().unwrap_or_default();
    let Some(old) = stored_array(stored, mv) else {
        plan.refusals.push(format!(
            "the stored schema of `{}` has no `{rust_field}`: the old version must have published its schema \
             (`docrel::schema::publish`, or `docrel schema apply` with its export) before the move is planned",
            mv.from.collection
        ));
        return None;
    };
    let refusal = match &old.kind {
        StoredKind::Embed { .. } => None,
        StoredKind::RefMany { key: None, .. } if old.target.as_deref() == Some(mv.to.collection.as_str()) => None,
        StoredKind::RefMany { key: None, .. } => Some(format!(
            "`{}.{}` holds ids of `{}`, not of `{}`: the documents that get the parent reference are the ones \
             the array refers to",
            mv.from.collection,
            old.field,
            old.target.as_deref().unwrap_or("?"),
            mv.to.collection
        )),
        StoredKind::RefMany { key: Some(key), .. } => Some(format!(
            "`{}.{}` holds `{{{key}, ..}}` references: not yet, a move takes an array of plain ids",
            mv.from.collection, old.field
        )),
        _ => Some(format!(
            "`{}.{}` is {}: `moved_from` on a document type moves an embedded array, an embedded document or an \
             array of references",
            mv.from.collection,
            old.field,
            old.pattern().name()
        )),
    };
    if let Some(refusal) = refusal {
        plan.old_shape = super::shapes::old_shape(old);
        plan.refusals.push(refusal);
        return None;
    }
    Some(old)
}

/// What the stored field `old` holds: elements, one document, or ids of
/// the new collection's documents.
pub(super) fn holds(old: &StoredRelation) -> OldArray {
    OldArray::of(&old.kind).unwrap_or_default()
}
