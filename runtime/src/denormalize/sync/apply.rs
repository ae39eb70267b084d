//! One change event, applied: which paths it touched, the fan-out of a
//! source's copies, and the subsets of a child's parents.
//!
//! Subsets are kept by rebuilding from the full collection rather than by
//! pushing summaries: the worker may see a write that docrel already applied
//! synchronously, or see it twice after a restart, and a rebuild is right
//! either way while a second push would duplicate the summary.

use super::watched::Watched;
use crate::denormalize::fanout::{fan_out_copies, touches_derived, version_of, Reach};
use crate::error::{Error, Result};
use crate::patterns::subset::{after_change, after_delete, SubsetTarget};
use crate::schema::graph::Graph;
use crate::store::primary;
use crate::store::session::Cx;
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::change_stream::event::{ChangeStreamEvent, OperationType, UpdateDescription};
use mongodb::Database;

/// Something derived the worker brought up to date.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The collection written: a source of copies, or a child of a subset.
    pub source: &'static str,
    /// The written document's `_id`.
    pub id: Bson,
    /// The source's version the copies now carry (0 for a document that
    /// carries none: a subset child, or a deleted child).
    pub version: i64,
}

/// The paths an update event touched: its updated and removed fields, and
/// the arrays it truncated. A truncation is a change of the array like any
/// other (a copy of it must shrink too), although the server reports it
/// apart from the updated fields.
///
/// ```
/// use docrel::{bson::doc, bson_compat::from_document};
/// use docrel::mongodb::change_stream::event::UpdateDescription;
///
/// let d: UpdateDescription = from_document(doc! {
///     "updatedFields": {"_docrel.v": 4_i64},
///     "removedFields": ["note"],
///     "truncatedArrays": [{"field": "tags", "newSize": 1}],
/// })
/// .unwrap();
/// assert_eq!(docrel::denormalize::touched_fields(&d), ["_docrel.v", "note", "tags"]);
/// ```
pub fn touched_fields(description: &UpdateDescription) -> Vec<String> {
    let updated = description.updated_fields.keys().cloned();
    let removed = description.removed_fields.iter().cloned();
    let truncated = description.truncated_arrays.iter().flatten().map(|t| t.field.clone());
    updated.chain(removed).chain(truncated).collect()
}

/// Applies one event of a watched collection; `None` when nothing derived
/// depends on what it changed. `again`: an earlier attempt at it failed.
pub(super) async fn apply(
    db: &Database,
    watched: &Watched,
    event: &ChangeStreamEvent<BsonDoc>,
    again: bool,
) -> Result<Option<Applied>> {
    let Some(coll) = event.ns.as_ref().and_then(|ns| ns.coll.as_deref()) else { return Ok(None) };
    let Some(coll) = watched.find(coll) else { return Ok(None) };
    let child = watched.is_child(coll);
    let touched: Option<Vec<String>> = match (&event.operation_type, &event.update_description) {
        (OperationType::Update, Some(d)) => Some(touched_fields(d)),
        (OperationType::Insert | OperationType::Replace | OperationType::Update, _) => None,
        (OperationType::Delete, _) if child => {
            let id = event.document_key.as_ref().and_then(|k| k.get("_id")).cloned().unwrap_or(Bson::Null);
            child_deleted(db, watched.graph, coll, &id, event.full_document_before_change.as_ref()).await?;
            return Ok(Some(Applied { source: coll, id, version: 0 }));
        }
        _ => return Ok(None),
    };
    if let Some(t) = &touched {
        if !touches_derived(watched.graph, coll, t) {
            return Ok(None);
        }
    }
    // The document as it is now (it may be newer than this event: versions
    // and guarded rebuilds make applying it early harmless). None: deleted
    // since, and a later event says so.
    let Some(doc) = &event.full_document else { return Ok(None) };
    // The worker applies with the rules published now, under the same lease.
    crate::schema::stored::hold(db).await?;
    let cx = &mut Cx::new(db, None);
    // A retry follows every level: the attempt before may have written
    // the first ones, whose statements now modify nothing.
    let reach = if again { Reach::Again } else { Reach::All };
    fan_out_copies(cx, coll, doc, touched.as_deref(), reach).await?;
    if child {
        // The pre-image, where the collection keeps them, names the parent
        // a moved child left; without it the subsets still holding the
        // child's key are found instead.
        let before = match event.operation_type {
            OperationType::Insert => None,
            _ => event.full_document_before_change.as_ref(),
        };
        after_change(cx, coll, before, doc, touched.as_deref()).await?;
    }
    Ok(Some(Applied { source: coll, id: doc.get("_id").cloned().unwrap_or(Bson::Null), version: version_of(doc) }))
}

/// A child was deleted: rebuild the subsets of its parent. The event holds
/// only the child's `_id`; the parent comes from the pre-image when the
/// collection keeps them (`changeStreamPreAndPostImages`), else from the
/// parents whose subset holds a summary with that `_id`. When neither is
/// there (no pre-images, and summaries without `_id`), the parent is
/// unknown and its subset stays as it is until its next change or a repair.
async fn child_deleted(
    db: &Database,
    g: &'static Graph,
    child: &'static str,
    id: &Bson,
    before: Option<&BsonDoc>,
) -> Result<()> {
    for (i, target) in g.subsets_of(child).iter().enumerate() {
        let parents = match before {
            Some(before) => {
                before.get(target.parent_field).filter(|p| **p != Bson::Null).cloned().into_iter().collect()
            }
            None => holders(db, target, id).await?,
        };
        after_delete(&mut Cx::new(db, None), child, parents.into_iter().map(|p| (i, p)).collect()).await?;
    }
    Ok(())
}

/// The parents whose subset holds a summary with this `_id` (only when
/// summaries carry `_id`: otherwise nothing in a delete event identifies
/// the child's summary).
pub(super) async fn holders(db: &Database, target: &SubsetTarget, id: &Bson) -> Result<Vec<Bson>> {
    if !target.spec.fields.is_none_or(|f| f.contains(&"_id")) {
        return Ok(Vec::new());
    }
    let filter = doc! { format!("{}._id", target.rel.field): id.clone() };
    db.collection::<BsonDoc>(target.parent)
        .distinct("_id", filter)
        .selection_criteria(primary())
        .await
        .map_err(|e| Error::driver("distinct", target.parent, e))
}

/// Rebuilds every subset summarizing `child`, in every parent: what a
/// repair after lost history does for subsets (one read and one write per
/// parent). A parent whose rebuild fails for good (its validator refuses
/// it), and a child it leaves out (a summary over `max_bytes`), is a dead
/// letter of `worker`, and the others are rebuilt: one parent does not
/// stop the worker at every start. A transient failure ends the repair
/// (the next start repairs again).
pub(super) async fn rebuild_all_subsets(db: &Database, child: &str, worker: &str) -> Result<()> {
    for target in crate::schema::graph::of(db).subsets_of(child) {
        let mut cursor = db
            .collection::<BsonDoc>(target.parent)
            .find(doc! {})
            .projection(doc! {"_id": 1})
            .selection_criteria(primary())
            .await
            .map_err(|e| Error::driver("find", target.parent, e))?;
        while cursor.advance().await.map_err(|e| Error::driver("find", target.parent, e))? {
            let Some(id) = cursor.current().get("_id").ok().flatten().and_then(|id| Bson::try_from(id).ok()) else {
                continue;
            };
            let parent = Some((target.parent, target.rel.field, &id));
            let letter = |document: Bson, e: Error| async move {
                super::dead_letter::record_repair(db, worker, child, document, parent, &e).await
            };
            match target.rebuild_in(&mut Cx::new(db, None), &id).await {
                Ok(rebuilt) => {
                    for (left, bytes) in rebuilt.left_out {
                        letter(left.clone(), target.left_out_error(&left, bytes, &id)).await?;
                    }
                }
                Err(e) if super::retry::transient(&e) => return Err(e),
                Err(e) => letter(Bson::Null, e).await?,
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bson_compat;

    fn description(d: BsonDoc) -> UpdateDescription {
        bson_compat::from_document(d).expect("an update description")
    }

    #[test]
    fn truncated_arrays_are_touched() {
        let d = description(doc! {
            "updatedFields": {"_docrel.v": 2_i64},
            "removedFields": [],
            "truncatedArrays": [{"field": "tags", "newSize": 1}, {"field": "a.b", "newSize": 0}],
        });
        assert_eq!(touched_fields(&d), ["_docrel.v", "tags", "a.b"]);
    }

    #[test]
    fn an_event_without_truncations_touches_its_fields() {
        let d = description(doc! {"updatedFields": {"name": "x"}, "removedFields": ["old"]});
        assert_eq!(touched_fields(&d), ["name", "old"]);
    }
}
