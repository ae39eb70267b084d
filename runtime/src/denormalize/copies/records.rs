//! Where a holder records which version of each source its copies are
//! from (`_docrel.copies.<via>.<source id>`), and the guarded write of one
//! target path for one source: a copy is rewritten only where its record is
//! older (see the version contract in [`crate::denormalize::fanout`]).

use super::versions::{version_of, VERSION_CEILING};
use crate::error::{Error, Result};
use crate::schema::graph::{Shape, Target};
use crate::store::path::{lookup, push_id_key};
use crate::store::session::{in_session, Cx};
use crate::store::update::OnlySet;
use mongodb::bson::{doc, Bson, Document as BsonDoc, RawDocumentBuf};

/// The values of a changed source a fan-out copies, by source field.
pub(crate) trait Values: Sync {
    fn value(&self, field: &str) -> Option<&Bson>;
}

impl Values for BsonDoc {
    fn value(&self, field: &str) -> Option<&Bson> {
        lookup(self, field)
    }
}

/// The `$set` of a short write by id: its fields are top-level (see
/// [`known_values`]).
impl Values for OnlySet<'_> {
    fn value(&self, field: &str) -> Option<&Bson> {
        self.get(field)
    }
}

pub(crate) const COPIES_PATH: &str = "_docrel.copies";

/// Which guard a copy write uses (see the module's version contract).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Guard {
    /// A fan-out right after the source's write, with its new version.
    FanOut,
    /// A repair or refresh that read the source some time ago.
    Refresh,
}

impl Target {
    /// The field of a holder's `_docrel.copies` that records versions of this target.
    pub(crate) fn record_field(&self) -> &'static str {
        match self.shape {
            Shape::Top { via } => via,
            Shape::Array { array, .. } => array,
        }
    }

    /// The field of a holder holding every record of this target, for a
    /// projection.
    pub(crate) fn records_path(&self) -> String {
        format!("{COPIES_PATH}.{}", self.record_field())
    }

    /// The version `holder` records for its copy of the source `id`.
    pub(crate) fn recorded(&self, holder: &BsonDoc, id: &Bson) -> Option<i64> {
        lookup(holder, &self.version_path(id)).and_then(|v| v.as_i64().or_else(|| v.as_i32().map(i64::from)))
    }

    /// Whether `holder` records its copy of the source `id` at a version
    /// above the source's own (`source` as read): no guarded write of that
    /// copy can land until the source's version moves past the record
    /// ([`super::versions::move_past`]).
    pub(crate) fn record_ahead(&self, holder: &BsonDoc, id: &Bson, source: &BsonDoc) -> Option<i64> {
        self.recorded(holder, id).filter(|r| *r > version_of(source))
    }

    /// A record of the source `id` ahead of its `version`, in words for a
    /// report, and whether a repair fixes it.
    pub(crate) fn describe_ahead(&self, id: &Bson, record: i64, version: i64) -> (String, bool) {
        if record >= VERSION_CEILING {
            let text = format!(
                " (it records version {record}, which no version of the source can pass: it was written outside \
                 docrel; remove `{}` from the holder and repair again)",
                self.version_path(id)
            );
            return (text, false);
        }
        let text = format!(
            " (it records version {record}, ahead of the source's {version}: the source was restored or rewritten \
             outside docrel, or inserted again by a clock behind; repair moves the source's version past it)"
        );
        (text, true)
    }

    pub(crate) fn version_path(&self, id: &Bson) -> String {
        let field = self.record_field();
        // Room for an object id's key, the common one.
        let mut path = String::with_capacity(COPIES_PATH.len() + field.len() + 26);
        for part in [COPIES_PATH, ".", field, "."] {
            path.push_str(part);
        }
        push_id_key(&mut path, id);
        path
    }

    /// The update that writes `values` (of the source `id`, at version `v`)
    /// into this target, only where the copy is stale under `guard`.
    /// Idempotent.
    pub(crate) fn update(
        &self,
        id: &Bson,
        values: &(impl Values + ?Sized),
        v: i64,
        guard: Guard,
    ) -> (BsonDoc, BsonDoc, Option<Vec<BsonDoc>>) {
        let version = self.version_path(id);
        let mut set = BsonDoc::new();
        // Made on the first missing value: a fan-out usually has none, and
        // every new document costs a hasher seed and allocations.
        let mut unset: Option<BsonDoc> = None;
        // Only the refresh guard compares values; a fan-out's guard skips
        // building the comparison.
        let mut differs = Vec::new();
        let paths = self.paths();
        for ((copy, source), path) in self.fields.iter().zip(&paths.set) {
            let path = path.clone();
            match values.value(source) {
                Some(value) => {
                    if guard == Guard::Refresh {
                        differs.push(doc! { *copy: {"$ne": value.clone()} });
                    }
                    set.insert(path, value.clone());
                }
                None => {
                    if guard == Guard::Refresh {
                        differs.push(doc! { *copy: {"$exists": true} });
                    }
                    unset.get_or_insert_with(BsonDoc::new).insert(path, "");
                }
            }
        }
        let filter = match guard {
            // An indexed equality and one comparison, no `$or`: servers
            // that plan a top-level `$or` branch by branch (the embedded
            // test server scans the whole collection for it) keep the
            // reference index. A missing record counts as older, so such
            // a copy is rewritten (and recorded) even when its values
            // already match: harmless, since no later version wrote it.
            Guard::FanOut => doc! { paths.id.clone(): id.clone(), version.clone(): {"$not": {"$gte": v}} },
            Guard::Refresh => {
                let stale_values = match self.shape {
                    Shape::Top { .. } => doc! {"$or": differs},
                    Shape::Array { array, key } => {
                        doc! { array: {"$elemMatch": {key: id.clone(), "$or": differs}} }
                    }
                };
                // Same version, other values: the source or the copy was
                // written outside docrel.
                let stale = vec![
                    doc! { version.clone(): {"$lt": v} },
                    doc! { "$and": [{ version.clone(): {"$exists": false} }, stale_values.clone()] },
                    doc! { "$and": [{ version.clone(): v }, stale_values] },
                ];
                doc! { paths.id.clone(): id.clone(), "$or": stale }
            }
        };
        set.insert(version, v);
        let mut update = doc! {"$set": set};
        if self.relays() {
            // The holders are sources of copies of these copies: their
            // version moves on in the same write, as any write of a copied
            // field's does, so the next level's guard lets the change through.
            update.insert("$inc", doc! { super::versions::VERSION_PATH: 1_i64 });
        }
        if let Some(unset) = unset {
            update.insert("$unset", unset);
        }
        let array_filters = paths.element_key.as_ref().map(|key| vec![doc! { key.clone(): id.clone() }]);
        (filter, update, array_filters)
    }
}

/// One target path's update for one source document, limited to the
/// target documents `only` when given (a repair rewrites the batch it
/// scanned, so its counts add up), inside `session`'s transaction if given.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn apply_to(
    cx: &mut Cx<'_>,
    target: &Target,
    id: &Bson,
    values: &(impl Values + ?Sized),
    version: i64,
    guard: Guard,
    only: Option<&[Bson]>,
) -> Result<u64> {
    let (mut filter, update, array_filters) = target.update(id, values, version, guard);
    if let Some(only) = only {
        filter = doc! {"$and": [filter, {"_id": {"$in": only}}]};
    }
    let coll = cx.db.collection::<RawDocumentBuf>(target.collection);
    let mut action = coll.update_many(filter, update);
    if let Some(af) = array_filters {
        action = action.array_filters(af);
    }
    let r = in_session!(action, cx.session()).map_err(|e| Error::driver("update_many", target.collection, e))?;
    crate::client::trace::fanned_out(target.collection, || &target.paths().id, r.modified_count);
    Ok(r.modified_count)
}

/// What [`apply_to_all`] did.
pub(crate) enum Batched {
    /// The documents each statement modified, in the order of the targets.
    Counts(Vec<u64>),
    /// Nothing sent: one target, or a deployment without `bulkWrite`.
    NotSent,
    /// Sent, and what it wrote is unknown (a connection cut, an answer
    /// lost, a write-concern error): [`apply_to`] per target writes the
    /// same again, but finds modified nothing where the batch did write,
    /// so what is derived from every target must be followed anyway.
    Unknown,
}

/// [`apply_to`] of every target in `targets` for one source document, in
/// one client-level `bulkWrite` (MongoDB 8.0+, more than one target).
/// `Err((k, e))` when the server refused the statement of target `k`:
/// those before it were written.
pub(crate) async fn apply_to_all(
    cx: &mut Cx<'_>,
    targets: &[&Target],
    id: &Bson,
    values: &(impl Values + ?Sized),
    version: i64,
) -> std::result::Result<Batched, (usize, Error)> {
    if targets.len() < 2 || !crate::store::bulk::available(cx.db.client()) {
        return Ok(Batched::NotSent);
    }
    let models = targets.iter().map(|target| fan_out_model(cx, target, id, values, version)).collect();
    let result = match crate::store::bulk::send(cx, models).await {
        Ok(result) => result,
        Err(e) => {
            return match crate::store::bulk::first_refused(&e).filter(|k| *k < targets.len()) {
                Some(k) => Err((k, Error::driver("bulkWrite", targets[k].collection, e))),
                None => Ok(Batched::Unknown),
            };
        }
    };
    let modified = |k: usize| result.update_results.get(&k).map_or(0, |r| r.modified_count);
    let counts: Vec<u64> = (0..targets.len()).map(modified).collect();
    for (target, n) in targets.iter().zip(&counts) {
        crate::client::trace::fanned_out(target.collection, || &target.paths().id, *n);
    }
    Ok(Batched::Counts(counts))
}

/// [`apply_to`]'s guarded fan-out of `target` as a statement of a
/// `bulkWrite`.
pub(crate) fn fan_out_model(
    cx: &Cx<'_>,
    target: &Target,
    id: &Bson,
    values: &(impl Values + ?Sized),
    version: i64,
) -> mongodb::options::WriteModel {
    let (filter, update, array_filters) = target.update(id, values, version, Guard::FanOut);
    crate::store::bulk::update_many(cx, target.collection, filter, update, array_filters)
}
