//! The subset pattern: a parent keeps summaries of its N newest (or
//! highest) children in an embedded array, while the full set lives in the
//! children's own collection. Inserting a child through docrel pushes its
//! summary with `$each`/`$sort`/`$slice`; editing one rewrites its summary;
//! deleting one rebuilds the parent's subset from the full collection.

use crate::error::{Error, Result};
use crate::schema::document::Relation;
use crate::schema::graph::graph;
pub use crate::schema::graph::SubsetTarget;
use crate::store::path::lookup;
use bson::{doc, Bson, Document as BsonDoc};
use mongodb::Database;

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
            let bytes = bson::to_vec(&summary).map(|v| v.len()).unwrap_or(usize::MAX);
            if bytes > max as usize {
                return Err(Error::Invalid {
                    what: "subset element",
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

    async fn push(&self, db: &Database, parent: &Bson, summaries: Vec<BsonDoc>) -> Result<()> {
        let slice = if self.spec.keep_last { -i64::from(self.max) } else { i64::from(self.max) };
        let update = doc! {"$push": { self.rel.field: {"$each": summaries, "$sort": self.order(), "$slice": slice} }};
        db.collection::<BsonDoc>(self.parent)
            .update_one(doc! {"_id": parent.clone()}, update)
            .await
            .map_err(|e| Error::driver("update", self.parent, e))?;
        Ok(())
    }

    /// Rebuilds one parent's subset from the full collection: its N first
    /// (or last) children in order, replacing the array. Returns how many
    /// summaries it holds.
    pub async fn rebuild(&self, db: &Database, parent: &Bson) -> Result<usize> {
        let summaries = self.expected(db, parent).await?;
        let n = summaries.len();
        db.collection::<BsonDoc>(self.parent)
            .update_one(doc! {"_id": parent.clone()}, doc! {"$set": { self.rel.field: summaries }})
            .await
            .map_err(|e| Error::driver("update", self.parent, e))?;
        Ok(n)
    }

    /// What the parent's subset should hold, read from the full collection.
    pub async fn expected(&self, db: &Database, parent: &Bson) -> Result<Vec<BsonDoc>> {
        let mut sort = self.order();
        if self.spec.keep_last {
            for (_, d) in sort.iter_mut() {
                if let Bson::Int32(v) = d {
                    *v = -*v;
                }
            }
        }
        let coll = db.collection::<BsonDoc>(self.spec.child);
        let mut find = coll
            .find(doc! { self.parent_field: parent.clone() })
            .sort(sort)
            .limit(i64::from(self.max))
            .batch_size(self.max);
        if let Some(fields) = self.spec.fields {
            let p: BsonDoc = fields.iter().map(|f| ((*f).to_owned(), Bson::Int32(1))).collect();
            find = find.projection(p);
        }
        let mut cursor = find.await.map_err(|e| Error::driver("find", self.spec.child, e))?;
        let mut out = Vec::new();
        while cursor.advance().await.map_err(|e| Error::driver("find", self.spec.child, e))? {
            let child: BsonDoc = cursor.deserialize_current().map_err(|e| Error::driver("find", self.spec.child, e))?;
            out.push(self.summary(&child)?);
        }
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

/// After children were inserted: one push per parent and subset.
pub(crate) async fn after_insert(db: &Database, child: &str, docs: &[BsonDoc]) -> Result<()> {
    for target in subsets_of(child) {
        let mut by_parent: Vec<(Bson, Vec<BsonDoc>)> = Vec::new();
        for d in docs {
            let Some(parent) = d.get(target.parent_field).filter(|p| **p != Bson::Null) else { continue };
            let summary = target.summary(d)?;
            match by_parent.iter_mut().find(|(p, _)| p == parent) {
                Some((_, list)) => list.push(summary),
                None => by_parent.push((parent.clone(), vec![summary])),
            }
        }
        for (parent, summaries) in by_parent {
            target.push(db, &parent, summaries).await?;
        }
    }
    Ok(())
}

/// After a child changed (`after` holds its new values): rewrite its
/// summary in place, or rebuild the subset when the order may have changed.
pub(crate) async fn after_change(
    db: &Database,
    child: &str,
    after: &BsonDoc,
    touched: Option<&[String]>,
) -> Result<()> {
    for target in subsets_of(child) {
        if let Some(t) = touched {
            if !touched_by(target, t) {
                continue;
            }
        }
        let Some(parent) = after.get(target.parent_field).cloned() else { continue };
        let reorders = touched.is_none_or(|t| target.spec.sort.iter().any(|(f, _)| t.iter().any(|x| x == f)));
        match (target.spec.key, reorders) {
            (Some(key), false) => {
                let Some(key_value) = lookup(after, key).cloned() else { continue };
                let summary = target.summary(after)?;
                let set: BsonDoc =
                    summary.into_iter().map(|(k, v)| (format!("{}.$[e].{k}", target.rel.field), v)).collect();
                db.collection::<BsonDoc>(target.parent)
                    .update_one(
                        doc! {"_id": parent, format!("{}.{key}", target.rel.field): key_value.clone()},
                        doc! {"$set": set},
                    )
                    .array_filters(vec![doc! { format!("e.{key}"): key_value }])
                    .await
                    .map_err(|e| Error::driver("update", target.parent, e))?;
            }
            _ => {
                target.rebuild(db, &parent).await?;
            }
        }
    }
    Ok(())
}

/// The parents whose subsets may hold the children about to be deleted.
pub(crate) async fn parents_of(db: &Database, child: &'static str, filter: &BsonDoc) -> Result<Vec<(usize, Bson)>> {
    let mut out = Vec::new();
    for (i, target) in subsets_of(child).iter().enumerate() {
        let parents = db
            .collection::<BsonDoc>(child)
            .distinct(target.parent_field, filter.clone())
            .await
            .map_err(|e| Error::driver("distinct", child, e))?;
        out.extend(parents.into_iter().filter(|p| *p != Bson::Null).map(|p| (i, p)));
    }
    Ok(out)
}

/// After children were deleted: rebuild their parents' subsets.
pub(crate) async fn after_delete(db: &Database, child: &str, parents: Vec<(usize, Bson)>) -> Result<()> {
    let targets = subsets_of(child);
    for (i, parent) in parents {
        if let Some(target) = targets.get(i) {
            target.rebuild(db, &parent).await?;
        }
    }
    Ok(())
}

/// The subset array of parent `P` summarizing children `C`; from
/// `P::rels().<array>`.
pub struct Subset<P, C> {
    rel: &'static Relation,
    _types: std::marker::PhantomData<fn() -> (P, C)>,
}

impl<P, C> Clone for Subset<P, C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P, C> Copy for Subset<P, C> {}

impl<P, C> std::fmt::Debug for Subset<P, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subset").field("relation", self.rel).finish()
    }
}

impl<P: crate::schema::document::Document, C: crate::schema::document::Document> Subset<P, C> {
    /// A handle (generated code calls this).
    #[doc(hidden)]
    pub fn new(rel: &'static Relation) -> Self {
        Subset { rel, _types: std::marker::PhantomData }
    }

    fn target(&self) -> Result<&'static SubsetTarget> {
        subsets_of(C::COLLECTION).iter().find(|t| std::ptr::eq(t.rel, self.rel)).ok_or_else(|| Error::Invalid {
            what: "subset",
            message: format!(
                "`{}` summarizes `{}`, but no field of `{}` refers back to `{}`: add `#[parent_ref(to = ..)]` on it",
                self.rel.field,
                C::COLLECTION,
                C::COLLECTION,
                P::COLLECTION
            ),
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
            .projection(doc! { self.rel.field: 1 })
            .await
            .map_err(|e| Error::driver("find", P::COLLECTION, e))?;
        let stored: Vec<BsonDoc> = stored
            .and_then(|d| d.get_array(self.rel.field).ok().cloned())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|b| b.as_document().cloned())
            .collect();
        Ok(stored == expected)
    }
}
