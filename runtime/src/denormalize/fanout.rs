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
//!   where the stored version is below it; a replace that
//!   changes a copied field moves it past the clock as well);
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

use crate::denormalize::chain;
pub(crate) use crate::denormalize::chain::Reach;
use crate::error::{show_id, Error, Result};
use crate::schema::graph::{Graph, Shape, Target};
use crate::store::path::id_key;
use crate::store::session::{collect, in_session, plain, Cx};
use mongodb::bson::{doc, Bson, Document as BsonDoc};

use crate::denormalize::copies::past_records_ahead;
pub use crate::denormalize::copies::VERSION_PATH;
pub(crate) use crate::denormalize::copies::{
    after_image, apply_to, apply_to_all, first_version, inc_version, replace_outcome, replace_version, stamp,
    stamp_first_version, stampable, version_of, version_projection, Batched, Guard, Values,
};

/// Whether a write of the `touched` paths of a `source` document changes a
/// field something is derived from (a copy elsewhere, a subset summary).
pub(crate) fn touches_derived<S: AsRef<str>>(
    g: &'static Graph,
    source: &str,
    touched: impl IntoIterator<Item = S>,
) -> bool {
    if !g.has_derived(source) {
        return false;
    }
    let Some(derived) = g.derived_fields(source) else { return true };
    touched.into_iter().any(|t| derived.iter().any(|d| crate::store::path::overlaps(d, t.as_ref())))
}

/// The projection that reads what is derived from a source, and its
/// version; `None` reads the whole document.
pub(crate) fn source_projection(g: &'static Graph, source: &str) -> Option<BsonDoc> {
    let mut p: BsonDoc = g.derived_fields(source)?.iter().map(|f| ((*f).to_owned(), Bson::Int32(1))).collect();
    p.insert(VERSION_PATH, 1);
    Some(p)
}

/// The values of everything derived from `source` after an update `body`,
/// when its `$set` gives each of them literally (`$set: {name: ..}` for a
/// copied `name`): the write then reads back only its version. `None`
/// when some derived field is not set that way (left as stored, changed by
/// another operator, nested, or unknown to the schema): then the write
/// reads them back ([`source_projection`]).
pub(crate) fn known_values(g: &'static Graph, source: &str, body: &BsonDoc) -> Option<BsonDoc> {
    set_values(g, source, body.get_document("$set").ok()?)
}

/// [`known_values`] from the `$set` of the update.
pub(crate) fn set_values(g: &'static Graph, source: &str, set: &(impl Values + ?Sized)) -> Option<BsonDoc> {
    g.derived_fields(source)?
        .iter()
        .map(|f| if f.contains('.') { None } else { set.value(f).map(|v| ((*f).to_owned(), v.clone())) })
        .collect()
}

/// What a fan-out wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FanOutReport {
    /// `(target collection, copies rewritten)` per target path, in order.
    pub targets: Vec<(&'static str, u64)>,
}

/// Rewrites every copy of the source document `source_doc` (read back after
/// its write: `_id`, the copied fields and `_docrel.v`) whose fields are in
/// `touched` (all when `None`), and what is derived from those copies in
/// turn (copies of copies, summaries carrying them: see
/// [`crate::denormalize::chain`]) as far as `reach` says: everything, or
/// inside a transactional fan-out ([`Reach::Copies`]) the copies of
/// copies only, which commit with the source (the summaries carrying them
/// are rebuilt after the commit, by [`after_commit`]). One `updateMany` per
/// target path.
pub(crate) async fn fan_out_copies(
    cx: &mut Cx<'_>,
    source: &'static str,
    source_doc: &BsonDoc,
    touched: Option<&[String]>,
    reach: Reach,
) -> Result<FanOutReport> {
    let id = source_doc.get("_id").cloned().unwrap_or(Bson::Null);
    fan_out_reaching(cx, source, &id, version_of(source_doc), source_doc, touched, reach).await
}

/// After a transactional fan-out of `source_doc` committed: the summaries
/// of the source in its parents' subsets, and those carrying its copies
/// (at every level), rebuilt from the committed state.
pub(crate) async fn after_commit(
    cx: &mut Cx<'_>,
    source: &'static str,
    source_doc: &BsonDoc,
    touched: Option<&[String]>,
) -> Result<()> {
    let id = source_doc.get("_id").cloned().unwrap_or(Bson::Null);
    for target in touched_targets(cx.graph, source, touched) {
        let written = chain::written(target, &id, version_of(source_doc), source_doc);
        chain::follow_source(cx, target, &written, Reach::Summaries).await?;
    }
    if !cx.graph.subsets_of(source).is_empty() {
        Box::pin(crate::patterns::subset::after_change(cx, source, None, source_doc, touched)).await?;
    }
    Ok(())
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
    fan_out_reaching(cx, source, id, version, values, touched, Reach::All).await
}

/// The targets of `source` that copy a field in `touched` (all when `None`).
fn touched_targets(g: &'static Graph, source: &str, touched: Option<&[String]>) -> Vec<&'static Target> {
    let copies = |target: &&Target| touched.is_none_or(|t| target.source_fields().any(|f| touches_copies_one(f, t)));
    g.targets_of(source).iter().filter(copies).collect()
}

/// The fan-out of [`fan_out_source`], following the chains of the copies
/// it rewrote as far as `reach` says.
async fn fan_out_reaching(
    cx: &mut Cx<'_>,
    source: &'static str,
    id: &Bson,
    version: i64,
    values: &(impl Values + ?Sized),
    touched: Option<&[String]>,
    reach: Reach,
) -> Result<FanOutReport> {
    let mut report = FanOutReport::default();
    let targets = touched_targets(cx.graph, source, touched);
    // On MongoDB 8.0+ every target's statement in one round trip.
    let batched = apply_to_all(cx, &targets, id, values, version).await.map_err(|(k, e)| {
        let done: Vec<&str> = targets[..k].iter().map(|t| t.collection).collect();
        failed(source, id, targets[k], done.join(", "), e)
    })?;
    for (k, target) in targets.into_iter().enumerate() {
        let done = |report: &FanOutReport| report.targets.iter().map(|(c, _)| *c).collect::<Vec<_>>().join(", ");
        let n = match &batched {
            Batched::Counts(counts) => counts[k],
            Batched::NotSent | Batched::Unknown => apply_to(cx, target, id, values, version, Guard::FanOut, None)
                .await
                .map_err(|e| failed(source, id, target, done(&report), e))?,
        };
        // After a batch of unknown outcome, a target whose statement here
        // modified nothing may have been written by the batch.
        if n > 0 || matches!(batched, Batched::Unknown) || reach == Reach::Again {
            // Boxed: a chain is rare, and its future would make every fan-out's as large.
            Box::pin(chain::follow_source(cx, target, &chain::written(target, id, version, values), reach))
                .await
                .map_err(|e| failed(source, id, target, done(&report), e))?;
        }
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
/// path and page of ids, and one update per target path and referenced new
/// document.
pub(crate) async fn fan_out_inserted(cx: &mut Cx<'_>, source: &'static str, docs: &[BsonDoc]) -> Result<()> {
    let targets = cx.graph.targets_of(source);
    if targets.is_empty() || docs.is_empty() {
        return Ok(());
    }
    let ids: Vec<Bson> = docs.iter().filter_map(|d| d.get("_id").cloned()).collect();
    for target in targets {
        let mut referenced = Vec::new();
        for page in crate::store::page::id_pages(&ids) {
            referenced.extend(referenced_ids(cx, target, page).await?);
        }
        if referenced.is_empty() {
            continue;
        }
        let wanted: std::collections::HashSet<String> = referenced.iter().map(id_key).collect();
        for d in docs {
            let Some(id) = d.get("_id") else { continue };
            if wanted.contains(&id_key(id)) {
                let mut n = apply_to(cx, target, id, d, version_of(d), Guard::FanOut, None)
                    .await
                    .map_err(|e| failed(source, id, target, String::new(), e))?;
                // Holders recording its earlier life ahead of its version refused it.
                n += past_records_ahead(cx, source, target, id, version_of(d))
                    .await
                    .map_err(|e| failed(source, id, target, String::new(), e))?;
                if n > 0 {
                    let written = chain::written(target, id, version_of(d), d);
                    Box::pin(chain::follow_source(cx, target, &written, Reach::All))
                        .await
                        .map_err(|e| failed(source, id, target, String::new(), e))?;
                }
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
    let report = fan_out_copies(cx, source, source_doc, touched, Reach::All).await?;
    // Boxed, and only for a source that is summarized somewhere: its future
    // would otherwise make every fan-out's as large.
    if !cx.graph.subsets_of(source).is_empty() {
        Box::pin(crate::patterns::subset::after_change(cx, source, None, source_doc, touched)).await?;
    }
    Ok(report)
}

fn touches_copies_one(field: &str, touched: &[String]) -> bool {
    touched.iter().any(|t| crate::store::path::overlaps(field, t))
}
