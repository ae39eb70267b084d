//! Fan-out updaters: every change of a source document through docrel
//! rewrites the denormalized copies of the fields it touched, one
//! `updateMany` per target path, guarded by a per-source version so that
//! concurrent changes, applied in any order, converge on the source's final
//! value and never regress.
//!
//! Versions are docrel's bookkeeping, kept beside the data in one field so
//! the shapes of the reference texts stay as they are: a source document
//! holds `_docrel.v` (incremented by each docrel write of a copied field),
//! and a document holding copies records the version it copied in
//! `_docrel.copies.<via>` (top-level copies) or
//! `_docrel.copies.<array>.<element id>` (copies inside reference arrays).

use crate::error::{show_id, Error, Result};
use crate::schema::graph::{graph, Shape, Target};
use crate::store::path::{id_key, lookup};
use bson::{doc, Bson, Document as BsonDoc, RawDocumentBuf};
use mongodb::Database;

/// Where a source document keeps its version.
pub const VERSION_PATH: &str = "_docrel.v";
pub(crate) const COPIES_PATH: &str = "_docrel.copies";

impl Target {
    pub(crate) fn version_path(&self, id: &Bson) -> String {
        match self.shape {
            Shape::Top { via } => format!("{COPIES_PATH}.{via}"),
            Shape::Array { array, .. } => format!("{COPIES_PATH}.{array}.{}", id_key(id)),
        }
    }

    /// The update that writes `values` (of the source `id`, at version `v`)
    /// into this target, only where the copy is stale: its recorded version
    /// is older, or it has none and some value differs. Idempotent.
    pub(crate) fn update(
        &self,
        id: &Bson,
        values: &BsonDoc,
        v: i64,
        by_value_only: bool,
    ) -> (BsonDoc, BsonDoc, Option<Vec<BsonDoc>>) {
        let version = self.version_path(id);
        let mut set = BsonDoc::new();
        let mut unset = BsonDoc::new();
        let mut differs = Vec::new();
        for (copy, source) in &self.fields {
            let path = match self.shape {
                Shape::Top { .. } => (*copy).to_owned(),
                Shape::Array { array, .. } => format!("{array}.$[e].{copy}"),
            };
            match lookup(values, source) {
                Some(value) => {
                    differs.push(doc! { *copy: {"$ne": value.clone()} });
                    set.insert(path, value.clone());
                }
                None => {
                    differs.push(doc! { *copy: {"$exists": true} });
                    unset.insert(path, "");
                }
            }
        }
        let stale_values = match self.shape {
            Shape::Top { .. } => doc! {"$or": differs},
            Shape::Array { array, key } => {
                doc! { array: {"$elemMatch": {key: id.clone(), "$or": differs}} }
            }
        };
        let filter = if by_value_only {
            // Repair: the source may have been written outside docrel (its
            // version unchanged), so value differences decide.
            doc! { "$and": [{ self.id_path(): id.clone() }, stale_values] }
        } else {
            doc! {
                self.id_path(): id.clone(),
                "$or": [
                    { version.clone(): {"$lt": v} },
                    { "$and": [{ version.clone(): {"$exists": false} }, stale_values] },
                ],
            }
        };
        set.insert(version, v);
        let mut update = doc! {"$set": set};
        if !unset.is_empty() {
            update.insert("$unset", unset);
        }
        let array_filters = match self.shape {
            Shape::Top { .. } => None,
            Shape::Array { key, .. } => Some(vec![doc! { format!("e.{key}"): id.clone() }]),
        };
        (filter, update, array_filters)
    }
}

/// The version a source document carries (0 when docrel never wrote it).
pub(crate) fn version_of(source: &BsonDoc) -> i64 {
    lookup(source, VERSION_PATH).and_then(|v| v.as_i64().or_else(|| v.as_i32().map(i64::from))).unwrap_or(0)
}

/// Every target path of the copies of `source` (a collection), from the
/// schema graph.
pub fn targets_of(source: &str) -> &'static [Target] {
    graph().targets_of(source)
}

/// Whether a write of the `touched` paths of a `source` document changes a
/// field something is derived from (a copy elsewhere, a subset summary).
pub(crate) fn touches_derived<S: AsRef<str>>(source: &str, touched: impl IntoIterator<Item = S>) -> bool {
    let g = graph();
    if !g.has_derived(source) {
        return false;
    }
    let Some(derived) = g.derived_fields(source) else { return true };
    touched.into_iter().any(|t| derived.iter().any(|d| crate::store::path::overlaps(d, t.as_ref())))
}

/// The projection that reads what is derived from a source, and its
/// version; `None` reads the whole document.
pub(crate) fn source_projection(source: &str) -> Option<BsonDoc> {
    let mut p: BsonDoc = graph().derived_fields(source)?.iter().map(|f| ((*f).to_owned(), Bson::Int32(1))).collect();
    p.insert(VERSION_PATH, 1);
    Some(p)
}

/// What a fan-out wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FanOutReport {
    /// `(target collection, copies rewritten)` per target path, in order.
    pub targets: Vec<(&'static str, u64)>,
}

/// Rewrites every copy of the source document `source_doc` (read back after
/// its write: `_id`, the copied fields and `_docrel.v`) whose fields are in
/// `touched` (all when `None`). One `updateMany` per target path.
pub(crate) async fn fan_out(
    db: &Database,
    source: &'static str,
    source_doc: &BsonDoc,
    touched: Option<&[String]>,
    mut session: Option<&mut mongodb::ClientSession>,
) -> Result<FanOutReport> {
    let id = source_doc.get("_id").cloned().unwrap_or(Bson::Null);
    let version = version_of(source_doc);
    let mut report = FanOutReport::default();
    for target in targets_of(source) {
        if let Some(touched) = touched {
            if !target.source_fields().any(|f| touches_copies_one(f, touched)) {
                continue;
            }
        }
        let n =
            apply_to(db, target, &id, source_doc, version, false, None, session.as_deref_mut()).await.map_err(|e| {
                Error::FanOut {
                    source_collection: source,
                    id: show_id(&id),
                    target: target.collection,
                    path: target.id_path(),
                    done: report.targets.iter().map(|(c, _)| *c).collect::<Vec<_>>().join(", "),
                    cause: Box::new(e),
                }
            })?;
        report.targets.push((target.collection, n));
    }
    crate::patterns::subset::after_change(db, source, source_doc, touched).await?;
    Ok(report)
}

fn touches_copies_one(field: &str, touched: &[String]) -> bool {
    touched.iter().any(|t| crate::store::path::overlaps(field, t))
}

/// One target path's update for one source document, limited to the
/// target documents `only` when given (a repair rewrites the batch it
/// scanned, so its counts add up), inside `session`'s transaction if given.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn apply_to(
    db: &Database,
    target: &Target,
    id: &Bson,
    values: &BsonDoc,
    version: i64,
    by_value_only: bool,
    only: Option<&[Bson]>,
    session: Option<&mut mongodb::ClientSession>,
) -> Result<u64> {
    let (mut filter, update, array_filters) = target.update(id, values, version, by_value_only);
    if let Some(only) = only {
        filter = doc! {"$and": [filter, {"_id": {"$in": only}}]};
    }
    let coll = db.collection::<RawDocumentBuf>(target.collection);
    let mut action = coll.update_many(filter, update);
    if let Some(af) = array_filters {
        action = action.array_filters(af);
    }
    let r = match session {
        Some(s) => action.session(s).await,
        None => action.await,
    }
    .map_err(|e| Error::driver("update_many", target.collection, e))?;
    Ok(r.modified_count)
}
