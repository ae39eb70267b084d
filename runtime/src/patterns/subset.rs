//! The subset pattern: a parent keeps summaries of its N newest (or
//! highest) children in an embedded array, while the full set lives in the
//! children's own collection.
//!
//! # Concurrency
//!
//! Each subset of a parent carries a change counter in its bookkeeping,
//! `_docrel.subsets.<array>` = `{n, r}`: every change bumps `n`, and `r`
//! holds the `n` of the last rebuild that was written. Inserting children
//! pushes their summaries with `$each`/`$sort`/`$slice` and bumps `n` in the
//! same update (pushes commute), then, outside a transaction, reads the
//! children's parents back (a delete or a move racing the insert rebuilds
//! the parent the child left). Editing, moving or deleting a child
//! rebuilds: bump `n` to `e`, read the top N children, and write them only
//! while `n` is still `e`; if another change came in between, the write is
//! skipped and the rebuild retried, unless a rebuild that started later
//! already wrote (`r > e`), since it saw everything this one did. So the
//! last writer always wrote a state read after every earlier change.

use crate::bson_compat;
use crate::error::{Error, Result};
use crate::schema::document::Relation;
use crate::schema::graph::Graph;
pub use crate::schema::graph::SubsetTarget;
use crate::store::page::id_pages;
use crate::store::path::id_key;
use crate::store::path::lookup;
use crate::store::primary;
use crate::store::session::{collect, in_session, plain, Cx};
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::options::{InsertOneModel, WriteModel};
use mongodb::Database;
use std::collections::HashMap;

impl SubsetTarget {
    /// The subset's order, as the push's `$sort` and the rebuild's `sort`:
    /// the declared keys, then the summary's identity ([`Self::identity`]),
    /// so children tied on the declared keys are kept the same way by both.
    pub(super) fn order(&self) -> BsonDoc {
        let mut order = crate::store::query::Sort::from_pairs(self.spec.sort).into_document();
        if let Some(tie) = self.identity() {
            if !order.contains_key(tie) {
                order.insert(tie, Bson::Int32(1));
            }
        }
        order
    }

    /// What identifies a child's summary: the child's `_id` when the
    /// summary carries it, else the declared `key` (the derive makes a
    /// summary carry its `key`). A push is guarded by it and a child seen
    /// moving without its former image is looked for by it.
    pub(crate) fn identity(&self) -> Option<&'static str> {
        match self.spec.fields {
            Some(fields) if !fields.contains(&"_id") => self.spec.key,
            _ => Some("_id"),
        }
    }

    /// The summary of a child: its fields of the element view, in order.
    /// One over `max_bytes` is refused, for a write that checks it before
    /// anything is written (insert, replace, save).
    pub(crate) fn summary(&self, child: &BsonDoc) -> Result<BsonDoc> {
        let summary = self.summarize(child);
        match self.oversize(&summary) {
            Some(bytes) => Err(self.too_large(bytes, "nothing was written")),
            None => Ok(summary),
        }
    }

    pub(super) fn summarize(&self, child: &BsonDoc) -> BsonDoc {
        match self.spec.fields {
            Some(fields) => {
                fields.iter().filter_map(|f| lookup(child, f).map(|v| ((*f).to_owned(), v.clone()))).collect()
            }
            None => child.clone(),
        }
    }

    /// The size of a summary over `max_bytes`, or `None` when it fits.
    pub(super) fn oversize(&self, summary: &BsonDoc) -> Option<usize> {
        let max = self.spec.max_bytes? as usize;
        let bytes = bson_compat::to_vec(summary).map(|v| v.len()).unwrap_or(usize::MAX);
        (bytes > max).then_some(bytes)
    }

    /// The error of a summary of `bytes` over `max_bytes`, saying what the
    /// write did (`done`).
    pub(super) fn too_large(&self, bytes: usize, done: &str) -> Error {
        Error::Invalid {
            what: crate::error::Misuse::SubsetElement,
            message: format!(
                "the summary of a `{}` for `{}.{}` is {bytes} bytes, above its `max_bytes = {}`; {done}. Shorten \
                 it, or raise `max_bytes`",
                self.spec.child_type,
                self.parent,
                self.rel.field,
                self.spec.max_bytes.unwrap_or_default()
            ),
        }
    }

    /// The bookkeeping path of this subset's change counter.
    pub(super) fn counter(&self) -> String {
        format!("_docrel.subsets.{}", self.rel.field)
    }

    /// The push of `summaries` into the subset of `parent`: the filter
    /// (guarded by the summaries' identities, when they have one) and the
    /// update, which bumps the change counter.
    fn push_statement(&self, parent: &Bson, summaries: Vec<BsonDoc>) -> (BsonDoc, BsonDoc) {
        let slice = if self.spec.keep_last { -i64::from(self.max) } else { i64::from(self.max) };
        // A rebuild that ran between the children's insert and this push
        // already took them in: pushing again would keep them twice.
        let keys: Option<Vec<Bson>> =
            self.identity().map(|k| summaries.iter().filter_map(|s| lookup(s, k).cloned()).collect());
        let update = doc! {
            "$push": { self.rel.field: {"$each": summaries, "$sort": self.order(), "$slice": slice} },
            "$inc": { format!("{}.n", self.counter()): 1_i64 },
        };
        let mut filter = doc! {"_id": parent.clone()};
        if let (Some(key), Some(keys)) = (self.identity(), keys) {
            filter.insert(format!("{}.{key}", self.rel.field), doc! {"$nin": keys});
        }
        (filter, update)
    }

    /// After a push matched `matched` parents: when it matched none and was
    /// guarded (by the summaries' identities, or by the parent's version,
    /// `versioned`), the parent is gone (the rebuild finds none and writes
    /// nothing), one of the summaries is already there, or the parent
    /// changed since its version was read: the rebuild writes exactly the
    /// top N.
    async fn pushed(&self, cx: &mut Cx<'_>, parent: &Bson, matched: u64, versioned: bool) -> Result<()> {
        if matched == 0 && (versioned || self.identity().is_some()) {
            self.rebuild_in(cx, parent).await?;
        }
        Ok(())
    }
}

/// The pushes of inserted children: one per parent and subset (per page
/// of children). On MongoDB 8.0+ they travel in one `bulkWrite` (one round
/// trip however many parents), else one `update` each.
async fn push_all(cx: &mut Cx<'_>, pushes: Vec<Push>) -> Result<()> {
    if pushes.len() > 1 && crate::store::bulk::available(cx.db.client()) {
        let models = pushes.iter().map(|push| push_model(cx, push, None)).collect();
        // Only single-document statements: the driver retries it as a
        // retryable write.
        let result = crate::store::bulk::send_summary(cx, models).await.map_err(|e| {
            let at = crate::store::bulk::first_refused(&e).and_then(|i| pushes.get(i)).unwrap_or(&pushes[0]);
            Error::driver("bulkWrite", at.0.parent, e)
        })?;
        missed(cx, &pushes, result.matched_count, false).await?;
        return Ok(());
    }
    for (target, parent, summaries) in pushes {
        let (filter, update) = target.push_statement(&parent, summaries);
        let coll = cx.db.collection::<BsonDoc>(target.parent);
        let r = in_session!(coll.update_one(filter, update), cx.session())
            .map_err(|e| Error::driver("update", target.parent, e))?;
        target.pushed(cx, &parent, r.matched_count, false).await?;
    }
    Ok(())
}

/// Whether a write of `touched` paths of a child changes its summary in `target`.
fn touched_by(target: &SubsetTarget, touched: &[String]) -> bool {
    match target.fields() {
        None => true,
        Some(fields) => touched.iter().any(|t| fields.iter().any(|f| crate::store::path::overlaps(f, t))),
    }
}

/// Whether a write of `touched` (all fields when `None`) may have moved a
/// child to another parent.
fn moved(target: &SubsetTarget, touched: Option<&[String]>) -> bool {
    touched.is_none_or(|t| t.iter().any(|f| crate::store::path::overlaps(f, target.parent_field)))
}

/// Checks the summaries of children about to be inserted (nothing is
/// written when one is too large).
pub(crate) fn check(g: &'static Graph, child: &str, docs: &[BsonDoc]) -> Result<()> {
    for target in g.subsets_of(child) {
        for d in docs {
            target.summary(d)?;
        }
    }
    Ok(())
}

/// After children were inserted: one push per parent and subset (per page
/// of children), then, outside a transaction, the children read back
/// ([`settle`]). In a transaction no other writer sees the children before
/// it commits, so none can move or delete them between insert and push.
pub(crate) async fn after_insert(cx: &mut Cx<'_>, child: &str, docs: &[BsonDoc]) -> Result<()> {
    push_all(cx, pushes_of(cx.graph, child, docs)?).await?;
    let transaction = match cx.session() {
        Some(s) => crate::store::transaction::in_transaction(s).await,
        None => false,
    };
    match transaction {
        true => Ok(()),
        false => settle(cx, child, docs).await,
    }
}

/// One push of summaries into the subset of a parent.
type Push = (&'static SubsetTarget, Bson, Vec<BsonDoc>);

/// Conditions a push's parent must meet, by parent collection and id
/// (`id_key`): see [`insert_and_push`].
pub(crate) type Guards = HashMap<(&'static str, String), BsonDoc>;

/// A push as a statement of a `bulkWrite`, its filter narrowed by `guard`.
fn push_model(cx: &Cx<'_>, (target, parent, summaries): &Push, guard: Option<&BsonDoc>) -> WriteModel {
    let (mut filter, update) = target.push_statement(parent, summaries.clone());
    if let Some(guard) = guard {
        filter.extend(guard.clone());
    }
    crate::store::bulk::update_one(cx, target.parent, filter, update)
}

/// The pushes children `docs` owe: one per parent and subset (per page of
/// children).
fn pushes_of(g: &'static Graph, child: &str, docs: &[BsonDoc]) -> Result<Vec<Push>> {
    let mut pushes = Vec::new();
    for target in g.subsets_of(child) {
        let mut by_parent: Vec<(Bson, Vec<BsonDoc>)> = Vec::new();
        let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for d in docs {
            let Some(parent) = d.get(target.parent_field).filter(|p| **p != Bson::Null) else { continue };
            let summary = target.summary(d)?;
            let i = *at.entry(id_key(parent)).or_insert_with(|| {
                by_parent.push((parent.clone(), Vec::new()));
                by_parent.len() - 1
            });
            by_parent[i].1.push(summary);
        }
        for (parent, summaries) in by_parent {
            for page in id_pages(&summaries) {
                pushes.push((target, parent.clone(), page.to_vec()));
            }
        }
    }
    Ok(pushes)
}

/// In a transaction on MongoDB 8.0+: the insert of children `docs` of
/// `child` and the pushes of their summaries in one `bulkWrite`, the
/// insert's statements first (the pushes run only once every child was
/// written). No read-back: no other writer sees the children before the
/// transaction commits. A push whose parent has a guard (by parent
/// collection and id) writes only where the parent meets it. Returns
/// whether every push matched its parent.
pub(crate) async fn insert_and_push(
    cx: &mut Cx<'_>,
    child: &'static str,
    docs: &[BsonDoc],
    guards: &Guards,
) -> Result<bool> {
    let pushes = pushes_of(cx.graph, child, docs)?;
    let ns = crate::store::bulk::namespace(cx, child);
    let mut models: Vec<WriteModel> = Vec::with_capacity(docs.len() + pushes.len());
    for d in docs {
        models.push(InsertOneModel::builder().namespace(ns.clone()).document(d.clone()).build().into());
    }
    let guard = |(target, parent, _): &Push| guards.get(&(target.parent, id_key(parent)));
    models.extend(pushes.iter().map(|push| push_model(cx, push, guard(push))));
    let result = crate::store::bulk::send_summary(cx, models).await.map_err(|e| {
        match crate::store::bulk::first_refused(&e).and_then(|i| i.checked_sub(docs.len())).and_then(|i| pushes.get(i))
        {
            Some((target, ..)) => Error::driver("bulkWrite", target.parent, e),
            // The insert's (a duplicate key), or the whole batch's.
            None => Error::driver("insert_many", child, e),
        }
    })?;
    missed(cx, &pushes, result.matched_count, !guards.is_empty()).await
}

/// After a batch of `pushes` matched `matched` parents in all: when one
/// matched none (rare: its parent is gone, a summary was there already,
/// or, `versioned`, a parent changed since its version was read) the
/// batch's totals do not say which, and every guarded push's parent is
/// rebuilt, as [`SubsetTarget::pushed`] rebuilds one. Returns whether
/// every push matched.
async fn missed(cx: &mut Cx<'_>, pushes: &[Push], matched: i64, versioned: bool) -> Result<bool> {
    if usize::try_from(matched).is_ok_and(|m| m >= pushes.len()) {
        return Ok(true);
    }
    for (target, parent, _) in pushes {
        target.pushed(cx, parent, 0, versioned).await?;
    }
    Ok(false)
}

/// After the pushes of inserted children: the children as they are now,
/// read once (by pages of ids). A write that ran between the insert and
/// the push rebuilt before the push landed: a delete (the push brought a
/// deleted child's summary back) or a move to another parent (the move's
/// rebuild of the parent it left did not find the summary yet, and the
/// push added it there). Each parent a pushed child no longer has is
/// rebuilt.
async fn settle(cx: &mut Cx<'_>, child: &str, docs: &[BsonDoc]) -> Result<()> {
    let targets = cx.graph.subsets_of(child);
    if targets.is_empty() || docs.is_empty() {
        return Ok(());
    }
    let ids: Vec<Bson> = docs.iter().filter_map(|d| d.get("_id").cloned()).collect();
    let mut projection = doc! {"_id": 1};
    for target in targets {
        projection.insert(target.parent_field, 1);
    }
    let coll = cx.db.collection::<BsonDoc>(child);
    let mut now: HashMap<String, BsonDoc> = HashMap::with_capacity(ids.len());
    for page in id_pages(&ids) {
        // The whole page in the first batch, with room to spare so the
        // server closes the cursor: one round trip.
        let batch = u32::try_from(page.len() + 1).unwrap_or(u32::MAX);
        let find = coll
            .find(doc! {"_id": {"$in": page}})
            .projection(projection.clone())
            .batch_size(batch)
            .selection_criteria(primary());
        for found in collect(find, cx.session(), child, |raw| plain(child, raw)).await? {
            now.insert(id_key(found.get("_id").unwrap_or(&Bson::Null)), found);
        }
    }
    for target in targets {
        let mut left: Vec<&Bson> = docs
            .iter()
            .filter_map(|d| {
                let pushed = d.get(target.parent_field).filter(|p| **p != Bson::Null)?;
                let current = now.get(&id_key(d.get("_id")?)).and_then(|c| c.get(target.parent_field));
                (current != Some(pushed)).then_some(pushed)
            })
            .collect();
        left.sort_by_key(|p| id_key(p));
        left.dedup();
        for parent in left {
            target.rebuild_in(cx, parent).await?;
        }
    }
    Ok(())
}

/// Whether `e`, from [`after_change`], says a child was written whose
/// summary is left out of its subset (the only error about a summary a
/// write can meet once it is written: the others are checked before).
pub(crate) fn is_left_out(e: &Error) -> bool {
    matches!(e, Error::Invalid { what: crate::error::Misuse::SubsetElement, .. })
}

/// After a child changed: `before` holds its previous values (`None` when
/// it was just created), `after` its new ones. Rebuilds the subsets whose
/// summaries it touched, in its new parent and, when it moved, its old one.
/// A child whose summary grew past `max_bytes` is left out of its parent's
/// subset, and the error says the child was written.
pub(crate) async fn after_change(
    cx: &mut Cx<'_>,
    child: &str,
    before: Option<&BsonDoc>,
    after: &BsonDoc,
    touched: Option<&[String]>,
) -> Result<()> {
    // Every subset is rebuilt before the error of a summary left out is returned.
    let mut left_out = None;
    for target in cx.graph.subsets_of(child) {
        if let Some(t) = touched {
            if !touched_by(target, t) {
                continue;
            }
        }
        let new_parent = after.get(target.parent_field).filter(|p| **p != Bson::Null);
        let old_parent = before.and_then(|b| b.get(target.parent_field)).filter(|p| **p != Bson::Null);
        if let Some(parent) = new_parent {
            let rebuilt = target.rebuild_in(cx, parent).await?;
            let id = after.get("_id").unwrap_or(&Bson::Null);
            if let Some((child, bytes)) = rebuilt.left_out.iter().find(|(child, _)| child == id) {
                left_out.get_or_insert_with(|| target.left_out_error(child, *bytes, parent));
            }
        }
        if let Some(old) = old_parent {
            if Some(old) != new_parent {
                target.rebuild_in(cx, old).await?;
            }
        } else if let (None, Some(key), true) = (before, target.identity(), moved(target, touched)) {
            // No image of the child before the write: any other parent whose
            // subset still holds its summary is one it moved away from.
            let Some(key_value) = lookup(after, key) else { continue };
            let mut filter = doc! { format!("{}.{key}", target.rel.field): key_value.clone() };
            if let Some(p) = new_parent {
                filter.insert("_id", doc! {"$ne": p.clone()});
            }
            let coll = cx.db.collection::<BsonDoc>(target.parent);
            let holders = in_session!(coll.distinct("_id", filter).selection_criteria(primary()), cx.session())
                .map_err(|e| Error::driver("distinct", target.parent, e))?;
            for old in holders {
                target.rebuild_in(cx, &old).await?;
            }
        }
    }
    left_out.map_or(Ok(()), Err)
}

/// After children were deleted: rebuild their parents' subsets, each
/// subset's parents a page at a time ([`SubsetTarget::rebuild_many`]).
pub(crate) async fn after_delete(cx: &mut Cx<'_>, child: &str, parents: Vec<(usize, Bson)>) -> Result<()> {
    let targets = cx.graph.subsets_of(child);
    for (i, target) in targets.iter().enumerate() {
        let of_target: Vec<Bson> = parents.iter().filter(|(t, _)| *t == i).map(|(_, p)| p.clone()).collect();
        if !of_target.is_empty() {
            target.rebuild_many(cx, &of_target).await?;
        }
    }
    Ok(())
}

/// The subset array of parent `P` summarizing children `C`; from
/// `P::rels().<array>`.
pub struct Subset<P, C> {
    /// The relationship's index in `P`'s schema (see `RefMany`'s).
    index: usize,
    _types: std::marker::PhantomData<fn() -> (P, C)>,
}

impl<P, C> Clone for Subset<P, C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P, C> Copy for Subset<P, C> {}

impl<P: crate::schema::document::Document, C> std::fmt::Debug for Subset<P, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subset").field("relation", self.relation()).finish()
    }
}

impl<P, C> Subset<P, C> {
    /// A handle (generated code calls this).
    #[doc(hidden)]
    pub const fn new(index: usize) -> Self {
        Subset { index, _types: std::marker::PhantomData }
    }
}

impl<P: crate::schema::document::Document, C> Subset<P, C> {
    /// The static description of the subset's array.
    pub fn relation(&self) -> &'static Relation {
        &P::schema().relations[self.index]
    }
}

impl<P: crate::schema::document::Document, C: crate::schema::document::Document> Subset<P, C> {
    fn target(&self, db: &Database) -> Result<&'static SubsetTarget> {
        crate::schema::graph::of(db)
            .subsets_of(C::COLLECTION)
            .iter()
            .find(|t| t.is_kept_in(P::COLLECTION, self.relation()))
            .ok_or_else(|| Error::Invalid {
                what: crate::error::Misuse::Subset,
                message: format!(
                "`{}` summarizes `{}`, but no field of `{}` refers back to `{}`: add `#[parent_ref(to = ..)]` on it",
                self.relation().field,
                C::COLLECTION,
                C::COLLECTION,
                P::COLLECTION
            ),
            })
    }

    /// Rebuilds the parent's subset from the full collection (one read, one
    /// write); returns how many summaries it holds.
    pub async fn rebuild(&self, db: &Database, parent: &P::Id) -> Result<usize> {
        crate::schema::stored::hold(db).await?;
        self.target(db)?.rebuild(db, &crate::id::DocId::to_bson(parent)).await
    }

    /// Whether the parent's subset holds exactly what the full collection says.
    pub async fn check(&self, db: &Database, parent: &P::Id) -> Result<bool> {
        let target = self.target(db)?;
        let id = crate::id::DocId::to_bson(parent);
        let expected = target.expected(db, &id).await?;
        let stored = db
            .collection::<BsonDoc>(P::COLLECTION)
            .find_one(doc! {"_id": id})
            .projection(doc! { self.relation().field: 1 })
            .await
            .map_err(|e| Error::driver("find", P::COLLECTION, e))?;
        let stored: Vec<BsonDoc> = stored
            .and_then(|d| d.get_array(self.relation().field).ok().cloned())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|b| b.as_document().cloned())
            .collect();
        Ok(stored == expected)
    }
}
