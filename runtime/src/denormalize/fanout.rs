//! Fan-out updaters: every change of a source document through docrel
//! rewrites the denormalized copies of the fields it touched, one
//! `updateMany` per target path, guarded by a per-source version so that
//! concurrent changes, applied in any order, converge on the source's final
//! value and never regress.
//!
//! # The version contract
//!
//! Versions are docrel's bookkeeping, kept beside the data in one field so
//! the shapes of the reference texts stay as they are:
//!
//! - a source document holds `_docrel.v`, set when docrel inserts it (from
//!   the clock, in microseconds, so a source deleted and inserted again
//!   with the same `_id` starts above every version its earlier life
//!   reached) and moved on by each docrel write of a copied field, in the
//!   same atomic write (an update adds one, or, when it only `$set`s every
//!   copied field of one document by `_id`, writes a stamp from the clock
//!   where the stored version is below it, see [`stamped`]; a replace that
//!   changes a copied field moves it past the clock as well, see
//!   [`replace_version`]);
//! - a document holding copies records, per source document, the version
//!   it copied: `_docrel.copies.<via>.<source id>` for top-level copies and
//!   `_docrel.copies.<array>.<source id>` for copies inside reference
//!   arrays. Keyed by the source's id, a record can never be mistaken for
//!   the version of another source when the reference changes;
//! - a fan-out of version `v` writes a copy only where the record is older
//!   than `v` or missing (a missing record is rewritten and recorded even
//!   when its values match, which keeps the guard one comparison);
//! - a repair or refresh, which reads the source and writes later, writes
//!   only where the record is older than what it read, or equal to it with
//!   different values (a write made outside docrel), or missing with
//!   different values: it never makes a copy older than it was.
//!
//! Every write of a holder that (re)points a copy at a source — insert,
//! replace, save, an update of the reference, a push of elements into an
//! array of copies — fills the copies from the source and then confirms
//! with one more read that the source did not change in between; if it did,
//! it refreshes those copies under the guard above. So after any
//! interleaving of docrel calls that returned `Ok`, every copy equals its
//! source's current value (or its source is gone).

use crate::error::{show_id, Error, Result};
use crate::schema::graph::{graph, Shape, Target};
use crate::store::path::{id_key, lookup, push_id_key};
use crate::store::session::{collect, in_session, plain, Cx};
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

/// Where a source document keeps its version.
pub const VERSION_PATH: &str = "_docrel.v";
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
        if let Some(unset) = unset {
            update.insert("$unset", unset);
        }
        let array_filters = paths.element_key.as_ref().map(|key| vec![doc! { key.clone(): id.clone() }]);
        (filter, update, array_filters)
    }
}

/// The first version of a source document: the clock in microseconds, so
/// that a source inserted again with the id of a deleted one starts above
/// every version the deleted one reached (one write per microsecond of its
/// life would be needed to pass it).
pub(crate) fn first_version() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX / 2))
        .unwrap_or(1)
}

/// Adds to an update of a source the move of its version by one, in the
/// same atomic write.
pub(crate) fn inc_version(body: &mut BsonDoc) {
    match body.get_mut("$inc") {
        Some(Bson::Document(inc)) => {
            inc.insert(VERSION_PATH, 1_i64);
        }
        _ => {
            body.insert("$inc", doc! { VERSION_PATH: 1_i64 });
        }
    }
}

/// The first version of a new source, in the bookkeeping of each of
/// `docs` (as inserted).
pub(crate) fn stamp_first_version(docs: &mut [BsonDoc]) {
    let v = first_version();
    for d in docs {
        match d.get_mut("_docrel") {
            Some(Bson::Document(b)) => {
                b.insert("v", v);
            }
            _ => {
                d.insert("_docrel", doc! {"v": v});
            }
        }
    }
}

/// The version a source document carries (0 when docrel never wrote it).
pub(crate) fn version_of(source: &BsonDoc) -> i64 {
    lookup(source, VERSION_PATH).and_then(|v| v.as_i64().or_else(|| v.as_i32().map(i64::from))).unwrap_or(0)
}

/// The version a replace (or upsert) of a source writes, as an aggregation
/// expression over the stored document: `stamp` (the clock, see
/// [`first_version`]) when the document is new or never versioned; past
/// both the stored version and `stamp` when a field something is derived
/// from (`derived`, `None`: any field) differs from `body`; the stored
/// version otherwise. So the image after the write tells what it did
/// (see [`replace_outcome`]) without the image before it.
pub(crate) fn replace_version(derived: Option<&[&str]>, body: &BsonDoc, stamp: i64) -> Bson {
    let stored = format!("${VERSION_PATH}");
    let changed: Bson = match derived {
        None => true.into(),
        Some(fields) => {
            let differs: Vec<Bson> = fields
                .iter()
                .map(|f| match lookup(body, f) {
                    Some(value) => doc! {"$ne": [format!("${f}"), {"$literal": value.clone()}]},
                    None => doc! {"$ne": [{"$type": format!("${f}")}, "missing"]},
                })
                .map(Bson::Document)
                .collect();
            doc! {"$or": differs}.into()
        }
    };
    doc! {"$cond": [
        {"$eq": [{"$type": &stored}, "missing"]},
        stamp,
        {"$cond": [changed, {"$max": [{"$add": [&stored, 1_i64]}, stamp + 1]}, &stored]},
    ]}
    .into()
}

/// What a replace written with [`replace_version`] did, from the version
/// read back after it: `(created, changed)`. A version from a concurrent
/// writer's later clock can only make it say "changed" where nothing did,
/// which costs a fan-out that finds nothing stale, never a missed one.
pub(crate) fn replace_outcome(after: i64, stamp: i64) -> (bool, bool) {
    (after == stamp, after >= stamp)
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

/// The values of everything derived from `source` after an update `body`,
/// when its `$set` gives each of them literally (`$set: {name: ..}` for a
/// copied `name`): the write then reads back only its version. `None`
/// when some derived field is not set that way (left as stored, changed by
/// another operator, nested, or unknown to the schema): then the write
/// reads them back ([`source_projection`]).
pub(crate) fn known_values(source: &str, body: &BsonDoc) -> Option<BsonDoc> {
    set_values(source, body.get_document("$set").ok()?)
}

/// [`known_values`] from the `$set` of the update.
pub(crate) fn set_values(source: &str, set: &(impl Values + ?Sized)) -> Option<BsonDoc> {
    graph()
        .derived_fields(source)?
        .iter()
        .map(|f| if f.contains('.') { None } else { set.value(f).map(|v| ((*f).to_owned(), v.clone())) })
        .collect()
}

/// The projection of a write whose derived values are [`known_values`]:
/// its version alone.
pub(crate) fn version_projection() -> BsonDoc {
    doc! { VERSION_PATH: 1 }
}

/// A version stamped by this process: the clock in microseconds (see
/// [`first_version`]), above every stamp it issued before.
pub(crate) fn next_stamp() -> i64 {
    use std::sync::atomic::{AtomicI64, Ordering};
    static LAST: AtomicI64 = AtomicI64::new(0);
    let now = first_version();
    let prev = LAST.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |last| Some(now.max(last + 1))).unwrap_or(0);
    now.max(prev + 1)
}

/// A single write that needs no read-back: the write of a source by its
/// `_id`, made only of a `$set` of every derived field ([`known_values`]).
/// The version it writes is stamped here ([`next_stamp`]) and the write
/// applies only where the stored version is below the stamp, so each
/// successful write still moves the version on and the version still tells
/// the values; both are known without reading the document back, which
/// makes the write a plain `update` (some servers answer `findAndModify` by
/// scanning the collection). Returns the filter, the update and the source
/// as the fan-out reads it (`_id`, version, the derived `values`); `None`
/// for any other write.
///
/// A stamped write that matches nothing (no such document, one never
/// versioned, or a version at or above the stamp: this client's clock
/// behind another writer's) is written again the usual way
/// (`findAndModify` with `$inc`), which tells those apart. Only a `$set`
/// qualifies because of that second write: after a retry whose first
/// attempt did land, it writes the same values again, at a later version.
pub(crate) fn stamped(filter: &BsonDoc, body: &BsonDoc, values: &BsonDoc) -> Option<(BsonDoc, BsonDoc, BsonDoc)> {
    let id = match filter.get("_id")? {
        Bson::Document(d) if d.keys().any(|k| k.starts_with('$')) => return None,
        id => id.clone(),
    };
    if filter.contains_key(VERSION_PATH) || filter.keys().any(|k| k.starts_with('$')) {
        return None;
    }
    let only_version_inc =
        |v: &Bson| matches!(v, Bson::Document(inc) if inc.len() == 1 && inc.contains_key(VERSION_PATH));
    // A source with copies elsewhere: its update carries the `$inc` of its
    // version (a subset child, versioned by nothing, does not).
    if !body.get("$inc").is_some_and(only_version_inc) || !body.iter().all(|(op, _)| op == "$set" || op == "$inc") {
        return None;
    }
    let set = body.get_document("$set").ok()?.clone();
    let (filter, update, stamp) = stamp_write(filter.clone(), set);
    Some((filter, update, after_image(id, stamp, values.clone())))
}

/// The stamped write of one source by its `_id` (see [`stamped`]), built
/// from the `$set` of an update that is nothing else: every derived field
/// must be set in it literally ([`known_values`]), and the source must
/// carry a version. Returns the filter, the update and the stamp; the
/// fan-out reads the values from `set` itself ([`fan_out_source`]), so no
/// image of the source is built.
pub(crate) fn stamped_by_id(source: &str, id: &Bson, set: OnlySet<'_>) -> Option<(BsonDoc, BsonDoc, i64)> {
    if graph().targets_of(source).is_empty() || !sets_derived(source, &set) {
        return None;
    }
    Some(stamp_write(doc! {"_id": id.clone()}, set.to_doc()))
}

/// Whether `set` (a `$set`) gives every field derived from `source`
/// literally: the condition of [`known_values`], without building them.
fn sets_derived(source: &str, set: &OnlySet<'_>) -> bool {
    graph()
        .derived_fields(source)
        .is_some_and(|derived| derived.iter().all(|f| !f.contains('.') && set.get(f).is_some()))
}

/// The source as the fan-out reads it after a stamped write: `_id`,
/// version, the derived `values`.
pub(crate) fn after_image(id: Bson, stamp: i64, values: BsonDoc) -> BsonDoc {
    let mut after = doc! {"_id": id, "_docrel": {"v": stamp}};
    after.extend(values);
    after
}

/// A stamped write of `set` to the source where `filter` matches: the
/// filter and the update with the stamp (see [`stamped`]), and the stamp.
fn stamp_write(mut filter: BsonDoc, mut set: BsonDoc) -> (BsonDoc, BsonDoc, i64) {
    let stamp = next_stamp();
    filter.insert(VERSION_PATH, doc! {"$lt": stamp});
    set.insert(VERSION_PATH, stamp);
    (filter, doc! {"$set": set}, stamp)
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
pub(crate) async fn fan_out_copies(
    cx: &mut Cx<'_>,
    source: &'static str,
    source_doc: &BsonDoc,
    touched: Option<&[String]>,
) -> Result<FanOutReport> {
    let id = source_doc.get("_id").cloned().unwrap_or(Bson::Null);
    fan_out_source(cx, source, &id, version_of(source_doc), source_doc, touched).await
}

/// [`fan_out_copies`] of the source `id` at `version`, given its copied
/// fields at their paths in `values` (other fields are ignored): a write
/// that knows them needs no image of the source.
pub(crate) async fn fan_out_source(
    cx: &mut Cx<'_>,
    source: &'static str,
    id: &Bson,
    version: i64,
    values: &(impl Values + ?Sized),
    touched: Option<&[String]>,
) -> Result<FanOutReport> {
    let mut report = FanOutReport::default();
    for target in targets_of(source) {
        if let Some(touched) = touched {
            if !target.source_fields().any(|f| touches_copies_one(f, touched)) {
                continue;
            }
        }
        let n = apply_to(cx, target, id, values, version, Guard::FanOut, None).await.map_err(|e| {
            let done = report.targets.iter().map(|(c, _)| *c).collect::<Vec<_>>().join(", ");
            failed(source, id, target, done, e)
        })?;
        report.targets.push((target.collection, n));
    }
    Ok(report)
}

/// The error of a fan-out that failed at `target` after the targets `done`;
/// also a `WARN` event, since copies may now be stale.
fn failed(source: &'static str, id: &Bson, target: &Target, done: String, cause: Error) -> Error {
    let error = Error::FanOut {
        source_collection: source,
        id: show_id(id),
        target: target.collection,
        path: target.id_path(),
        done,
        cause: Box::new(cause),
    };
    crate::client::trace::fan_out_failed(&error);
    error
}

/// After documents of `source` were inserted: holders that already refer
/// to them (written while they did not exist, or when an earlier document
/// with the same id existed) get their copies. One `distinct` per target
/// path, and one update per target path and referenced new document.
pub(crate) async fn fan_out_inserted(cx: &mut Cx<'_>, source: &'static str, docs: &[BsonDoc]) -> Result<()> {
    let targets = targets_of(source);
    if targets.is_empty() || docs.is_empty() {
        return Ok(());
    }
    let ids: Vec<Bson> = docs.iter().filter_map(|d| d.get("_id").cloned()).collect();
    for target in targets {
        let referenced = referenced_ids(cx, target, &ids).await?;
        if referenced.is_empty() {
            continue;
        }
        let wanted: std::collections::HashSet<String> = referenced.iter().map(id_key).collect();
        for d in docs {
            let Some(id) = d.get("_id") else { continue };
            if wanted.contains(&id_key(id)) {
                apply_to(cx, target, id, d, version_of(d), Guard::FanOut, None)
                    .await
                    .map_err(|e| failed(source, id, target, String::new(), e))?;
            }
        }
    }
    Ok(())
}

/// Which of `ids` some document of `target` refers to. A `distinct` on the
/// reference field; for arrays the holders' element ids are read instead,
/// since `distinct` through an array of documents is not answered the same
/// by every MongoDB-wire server (the embedded test server misses it).
async fn referenced_ids(cx: &mut Cx<'_>, target: &Target, ids: &[Bson]) -> Result<Vec<Bson>> {
    let coll = cx.db.collection::<BsonDoc>(target.collection);
    let filter = doc! { target.id_path(): {"$in": ids} };
    match target.shape {
        Shape::Top { .. } => in_session!(
            coll.distinct(target.id_path(), filter).selection_criteria(crate::store::primary()),
            cx.session()
        )
        .map_err(|e| Error::driver("distinct", target.collection, e)),
        Shape::Array { .. } => {
            let find = coll
                .find(filter)
                .projection(doc! { target.id_path(): 1 })
                .batch_size(i32::MAX as u32)
                .selection_criteria(crate::store::primary());
            let holders = collect(find, cx.session(), target.collection, |raw| plain(target.collection, raw)).await?;
            Ok(holders.iter().flat_map(|holder| target.held_copies(holder)).map(|(id, _)| id.clone()).collect())
        }
    }
}

/// [`fan_out_copies`] and then the summaries of the source in its parents'
/// subsets: everything derived from one changed source document.
pub(crate) async fn fan_out(
    cx: &mut Cx<'_>,
    source: &'static str,
    source_doc: &BsonDoc,
    touched: Option<&[String]>,
) -> Result<FanOutReport> {
    let report = fan_out_copies(cx, source, source_doc, touched).await?;
    // Boxed, and only for a source that is summarized somewhere: its future
    // would otherwise make every fan-out's as large.
    if !graph().subsets_of(source).is_empty() {
        Box::pin(crate::patterns::subset::after_change(cx, source, None, source_doc, touched)).await?;
    }
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
