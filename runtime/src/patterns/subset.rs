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
//! same update (pushes commute), then checks the children still exist (a
//! delete racing the insert rebuilds). Editing, moving or deleting a child
//! rebuilds: bump `n` to `e`, read the top N children, and write them only
//! while `n` is still `e`; if another change came in between, the write is
//! skipped and the rebuild retried, unless a rebuild that started later
//! already wrote (`r > e`), since it saw everything this one did. So the
//! last writer always wrote a state read after every earlier change.

use crate::bson_compat;
use crate::error::{Error, Result};
use crate::schema::document::Relation;
use crate::schema::graph::graph;
pub use crate::schema::graph::SubsetTarget;
use crate::store::page::id_pages;
use crate::store::path::lookup;
use crate::store::primary;
use crate::store::session::{collect, in_session, plain, Cx};
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::Database;

/// How many times a rebuild retries when other changes keep coming in
/// between its read and its write.
const REBUILD_ATTEMPTS: u32 = 20;

fn counter_value(doc: &BsonDoc, path: &str) -> i64 {
    lookup(doc, path).and_then(|v| v.as_i64().or_else(|| v.as_i32().map(i64::from))).unwrap_or(0)
}

/// Every subset that summarizes `child` (a collection).
pub fn subsets_of(child: &str) -> &'static [SubsetTarget] {
    graph().subsets_of(child)
}

impl SubsetTarget {
    fn order(&self) -> BsonDoc {
        crate::store::query::Sort::from_pairs(self.spec.sort).into_document()
    }

    /// The summary of a child: its fields of the element view, in order.
    pub(crate) fn summary(&self, child: &BsonDoc) -> Result<BsonDoc> {
        let summary = match self.spec.fields {
            Some(fields) => {
                fields.iter().filter_map(|f| lookup(child, f).map(|v| ((*f).to_owned(), v.clone()))).collect()
            }
            None => child.clone(),
        };
        if let Some(max) = self.spec.max_bytes {
            let bytes = bson_compat::to_vec(&summary).map(|v| v.len()).unwrap_or(usize::MAX);
            if bytes > max as usize {
                return Err(Error::Invalid {
                    what: crate::error::Misuse::SubsetElement,
                    message: format!(
                        "the summary of a `{}` for `{}.{}` is {bytes} bytes, above its `max_bytes = {max}`; nothing \
                         was written. Shorten it, or raise `max_bytes`",
                        self.spec.child_type, self.parent, self.rel.field
                    ),
                });
            }
        }
        Ok(summary)
    }

    /// The bookkeeping path of this subset's change counter.
    fn counter(&self) -> String {
        format!("_docrel.subsets.{}", self.rel.field)
    }

    async fn push(&self, cx: &mut Cx<'_>, parent: &Bson, summaries: Vec<BsonDoc>) -> Result<()> {
        let slice = if self.spec.keep_last { -i64::from(self.max) } else { i64::from(self.max) };
        // A rebuild that ran between the children's insert and this push
        // already took them in: pushing again would keep them twice.
        let keys: Option<Vec<Bson>> =
            self.spec.key.map(|k| summaries.iter().filter_map(|s| lookup(s, k).cloned()).collect());
        let update = doc! {
            "$push": { self.rel.field: {"$each": summaries, "$sort": self.order(), "$slice": slice} },
            "$inc": { format!("{}.n", self.counter()): 1_i64 },
        };
        let mut filter = doc! {"_id": parent.clone()};
        if let (Some(key), Some(keys)) = (self.spec.key, &keys) {
            filter.insert(format!("{}.{key}", self.rel.field), doc! {"$nin": keys.clone()});
        }
        let coll = cx.db.collection::<BsonDoc>(self.parent);
        let r = in_session!(coll.update_one(filter, update), cx.session())
            .map_err(|e| Error::driver("update", self.parent, e))?;
        if r.matched_count == 0 && keys.is_some() {
            // The parent is gone (the rebuild finds none and writes nothing),
            // or one of the summaries is already there: the rebuild writes
            // exactly the top N.
            self.rebuild_in(cx, parent).await?;
        }
        Ok(())
    }

    /// Rebuilds one parent's subset from the full collection: its N first
    /// (or last) children in order, replacing the array. Returns how many
    /// summaries it holds.
    pub async fn rebuild(&self, db: &Database, parent: &Bson) -> Result<usize> {
        crate::client::trace::Op::new("subset_rebuild", self.parent)
            .run(self.rebuild_in(&mut Cx::new(db, None), parent))
            .await
    }

    /// [`Self::rebuild`] in the caller's session, when given.
    pub(crate) async fn rebuild_in(&self, cx: &mut Cx<'_>, parent: &Bson) -> Result<usize> {
        let parents = cx.db.collection::<BsonDoc>(self.parent);
        let counter = self.counter();
        for attempt in 1..=REBUILD_ATTEMPTS {
            if attempt > 1 {
                crate::client::trace::retry("subset rebuild", attempt);
            }
            let bumped = in_session!(
                parents
                    .find_one_and_update(doc! {"_id": parent.clone()}, doc! {"$inc": { format!("{counter}.n"): 1_i64 }})
                    .return_document(mongodb::options::ReturnDocument::After)
                    .projection(doc! { counter.clone(): 1 }),
                cx.session()
            )
            .map_err(|e| Error::driver("findAndModify", self.parent, e))?;
            // No parent: nothing holds the subset.
            let Some(bumped) = bumped else { return Ok(0) };
            let epoch = counter_value(&bumped, &format!("{counter}.n"));
            let summaries = self.expected_in(cx, parent).await?;
            let n = summaries.len();
            let written = in_session!(
                parents.update_one(
                    doc! {"_id": parent.clone(), format!("{counter}.n"): epoch},
                    doc! {"$set": { self.rel.field: summaries, format!("{counter}.r"): epoch }},
                ),
                cx.session()
            )
            .map_err(|e| Error::driver("update", self.parent, e))?;
            if written.matched_count == 1 {
                return Ok(n);
            }
            let now = in_session!(
                parents
                    .find_one(doc! {"_id": parent.clone()})
                    .projection(doc! { counter.clone(): 1 })
                    .selection_criteria(primary()),
                cx.session()
            )
            .map_err(|e| Error::driver("find", self.parent, e))?;
            match now {
                // A rebuild that began after this one's bump was written: it saw all this one saw.
                Some(now) if counter_value(&now, &format!("{counter}.r")) > epoch => return Ok(n),
                Some(_) => continue,
                None => return Ok(0),
            }
        }
        Err(Error::SubsetContended {
            parent: self.parent,
            id: crate::error::show_id(parent),
            field: self.rel.field,
            attempts: REBUILD_ATTEMPTS,
        })
    }

    /// What the parent's subset should hold, read from the full collection.
    pub async fn expected(&self, db: &Database, parent: &Bson) -> Result<Vec<BsonDoc>> {
        self.expected_in(&mut Cx::new(db, None), parent).await
    }

    /// [`Self::expected`] read in the caller's session, when given.
    async fn expected_in(&self, cx: &mut Cx<'_>, parent: &Bson) -> Result<Vec<BsonDoc>> {
        let mut sort = self.order();
        if self.spec.keep_last {
            for (_, d) in sort.iter_mut() {
                if let Bson::Int32(v) = d {
                    *v = -*v;
                }
            }
        }
        let coll = cx.db.collection::<BsonDoc>(self.spec.child);
        let mut find = coll
            .find(doc! { self.parent_field: parent.clone() })
            .selection_criteria(primary())
            .sort(sort)
            .limit(i64::from(self.max))
            .batch_size(self.max);
        if let Some(fields) = self.spec.fields {
            let p: BsonDoc = fields.iter().map(|f| ((*f).to_owned(), Bson::Int32(1))).collect();
            find = find.projection(p);
        }
        let child = self.spec.child;
        let mut out = collect(find, cx.session(), child, |raw| self.summary(&plain(child, raw)?)).await?;
        if self.spec.keep_last {
            out.reverse();
        }
        Ok(out)
    }
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
pub(crate) fn check(child: &str, docs: &[BsonDoc]) -> Result<()> {
    for target in subsets_of(child) {
        for d in docs {
            target.summary(d)?;
        }
    }
    Ok(())
}

/// After children were inserted: one push per parent and subset (per page
/// of children).
pub(crate) async fn after_insert(cx: &mut Cx<'_>, child: &str, docs: &[BsonDoc]) -> Result<()> {
    for target in subsets_of(child) {
        let mut by_parent: Vec<(Bson, Vec<BsonDoc>)> = Vec::new();
        let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for d in docs {
            let Some(parent) = d.get(target.parent_field).filter(|p| **p != Bson::Null) else { continue };
            let summary = target.summary(d)?;
            let i = *at.entry(crate::store::path::id_key(parent)).or_insert_with(|| {
                by_parent.push((parent.clone(), Vec::new()));
                by_parent.len() - 1
            });
            by_parent[i].1.push(summary);
        }
        for (parent, summaries) in by_parent {
            for page in id_pages(&summaries) {
                target.push(cx, &parent, page.to_vec()).await?;
            }
        }
    }
    // A delete that ran between the insert and the push rebuilt before the
    // push landed: the push brought a deleted child's summary back.
    if !subsets_of(child).is_empty() && !docs.is_empty() {
        let ids: Vec<Bson> = docs.iter().filter_map(|d| d.get("_id").cloned()).collect();
        let coll = cx.db.collection::<BsonDoc>(child);
        let mut found = 0;
        for page in id_pages(&ids) {
            found += in_session!(
                coll.count_documents(doc! {"_id": {"$in": page}}).selection_criteria(primary()),
                cx.session()
            )
            .map_err(|e| Error::driver("count", child, e))?;
        }
        if found < ids.len() as u64 {
            for target in subsets_of(child) {
                let mut parents: Vec<&Bson> = docs.iter().filter_map(|d| d.get(target.parent_field)).collect();
                parents.sort_by_key(|p| crate::store::path::id_key(p));
                parents.dedup();
                for parent in parents {
                    target.rebuild_in(cx, parent).await?;
                }
            }
        }
    }
    Ok(())
}

/// After a child changed: `before` holds its previous values (`None` when
/// it was just created), `after` its new ones. Rebuilds the subsets whose
/// summaries it touched, in its new parent and, when it moved, its old one.
pub(crate) async fn after_change(
    cx: &mut Cx<'_>,
    child: &str,
    before: Option<&BsonDoc>,
    after: &BsonDoc,
    touched: Option<&[String]>,
) -> Result<()> {
    for target in subsets_of(child) {
        if let Some(t) = touched {
            if !touched_by(target, t) {
                continue;
            }
        }
        let new_parent = after.get(target.parent_field).filter(|p| **p != Bson::Null);
        let old_parent = before.and_then(|b| b.get(target.parent_field)).filter(|p| **p != Bson::Null);
        if let Some(parent) = new_parent {
            target.rebuild_in(cx, parent).await?;
        }
        if let Some(old) = old_parent {
            if Some(old) != new_parent {
                target.rebuild_in(cx, old).await?;
            }
        } else if let (None, Some(key), true) = (before, target.spec.key, moved(target, touched)) {
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
    Ok(())
}

/// After children were deleted: rebuild their parents' subsets.
pub(crate) async fn after_delete(cx: &mut Cx<'_>, child: &str, parents: Vec<(usize, Bson)>) -> Result<()> {
    let targets = subsets_of(child);
    for (i, parent) in parents {
        if let Some(target) = targets.get(i) {
            target.rebuild_in(cx, &parent).await?;
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
    fn target(&self) -> Result<&'static SubsetTarget> {
        subsets_of(C::COLLECTION).iter().find(|t| t.is_kept_in(P::COLLECTION, self.relation())).ok_or_else(|| {
            Error::Invalid {
                what: crate::error::Misuse::Subset,
                message: format!(
                "`{}` summarizes `{}`, but no field of `{}` refers back to `{}`: add `#[parent_ref(to = ..)]` on it",
                self.relation().field,
                C::COLLECTION,
                C::COLLECTION,
                P::COLLECTION
            ),
            }
        })
    }

    /// Rebuilds the parent's subset from the full collection (one read, one
    /// write); returns how many summaries it holds.
    pub async fn rebuild(&self, db: &Database, parent: &P::Id) -> Result<usize> {
        self.target()?.rebuild(db, &crate::id::DocId::to_bson(parent)).await
    }

    /// Whether the parent's subset holds exactly what the full collection says.
    pub async fn check(&self, db: &Database, parent: &P::Id) -> Result<bool> {
        let target = self.target()?;
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
