//! After an append opened a bucket (a count page, or a time window's
//! bucket): its parent must be there, and the buckets below it too.
//!
//! A parent can be deleted, and inserted again with the same id, while an
//! append runs. An append that opened a bucket for a parent that is gone
//! removes the parent's buckets again, as its cascade would have, and is
//! refused; but only buckets no append has written since it read them
//! (a compare-and-set on each one's `count`, which only grows): an append
//! made after the parent came back lands either before that read, and the
//! parent check that follows the read sees the parent, or after it, and
//! changes the count. An append that opened page `k` of a parent that is
//! there, with a page below it gone (deleted with the parent's earlier
//! life), moves the parent's pages down until they are 1..=n again, so the
//! parent never has page 2 without page 1.

use crate::error::{show_id, Error, Result};
use crate::schema::document::BucketSpec;
use crate::store::primary;
use mongodb::bson::{doc, Bson, DateTime, Document as BsonDoc};
use mongodb::{Collection, Database};

/// Rounds of clean-up or renumbering before giving up: each one is lost
/// only to another append landing at the same moment.
const ROUNDS: usize = 10;

/// A bucket an append just opened.
pub(super) struct Opened<'a> {
    pub(super) db: &'a Database,
    pub(super) spec: &'static BucketSpec,
    /// The parent's collection and the buckets'.
    pub(super) collections: (&'static str, &'static str),
    pub(super) parent: Bson,
    /// The window's start, for a time bucket (its numbers count within it).
    pub(super) window: Option<DateTime>,
    /// The opened bucket's `_id` and number (1 for a window's first).
    pub(super) id: Bson,
    pub(super) number: i64,
}

impl Opened<'_> {
    fn buckets(&self) -> Collection<BsonDoc> {
        self.db.collection(self.collections.1)
    }

    fn err(&self, op: &'static str) -> impl FnOnce(mongodb::error::Error) -> Error {
        let collection = self.collections.1;
        move |e| Error::driver(op, collection, e)
    }

    /// The parent's buckets (of the window, for a time bucket).
    fn of_parent(&self) -> BsonDoc {
        let mut filter = doc! { self.spec.parent: self.parent.clone() };
        if let Some(start) = self.window {
            filter.insert(self.spec.start, start);
        }
        filter
    }

    /// The number the opened bucket has once the parent is known to be
    /// there; [`Error::NotFound`] (and its buckets removed) when it is not.
    pub(super) async fn confirm(&self) -> Result<i64> {
        for _ in 0..ROUNDS {
            if self.parent_exists().await? {
                return self.below_filled().await;
            }
            // Read before the parent is checked again: see the module's note.
            let seen = self.counts().await?;
            if self.parent_exists().await? {
                return self.below_filled().await;
            }
            if self.remove(&seen).await? {
                return Err(self.gone());
            }
        }
        Err(self.gone())
    }

    fn gone(&self) -> Error {
        Error::NotFound { collection: self.collections.0, id: show_id(&self.parent) }
    }

    async fn parent_exists(&self) -> Result<bool> {
        let n = self
            .db
            .collection::<BsonDoc>(self.collections.0)
            .count_documents(doc! {"_id": self.parent.clone()})
            .limit(1)
            .selection_criteria(primary())
            .await
            .map_err(|e| Error::driver("count", self.collections.0, e))?;
        Ok(n > 0)
    }

    /// Every bucket of the parent (all windows) with its count.
    async fn counts(&self) -> Result<Vec<BsonDoc>> {
        use futures::TryStreamExt;
        let filter = doc! { self.spec.parent: self.parent.clone() };
        let buckets = self.buckets();
        let found = buckets.find(filter).projection(doc! {"_id": 1, self.spec.count: 1});
        let cursor = found.selection_criteria(primary()).await.map_err(self.err("find"))?;
        cursor.try_collect().await.map_err(self.err("find"))
    }

    /// Removes the buckets `seen` that still hold what they held then;
    /// whether all of them were.
    async fn remove(&self, seen: &[BsonDoc]) -> Result<bool> {
        if seen.is_empty() {
            return Ok(true);
        }
        let field = |b: &BsonDoc, f: &str| b.get(f).cloned().unwrap_or(Bson::Null);
        let unchanged: Vec<BsonDoc> =
            seen.iter().map(|b| doc! {"_id": field(b, "_id"), self.spec.count: field(b, self.spec.count)}).collect();
        let r = self.buckets().delete_many(doc! {"$or": unchanged}).await.map_err(self.err("delete"))?;
        Ok(r.deleted_count as usize == seen.len())
    }

    /// The opened bucket's number once every number below it is taken:
    /// one count when they are; otherwise the parent's buckets are moved
    /// down to 1..=n (in order) and the opened one's new number returned.
    async fn below_filled(&self) -> Result<i64> {
        if self.number <= 1 {
            return Ok(self.number);
        }
        let mut below = self.of_parent();
        below.insert("$or", vec![doc! { self.spec.page: {"$lt": self.number} }, self.first()]);
        let n = self.buckets().count_documents(below).selection_criteria(primary()).await.map_err(self.err("count"))?;
        if n as i64 == self.number - 1 {
            return Ok(self.number);
        }
        for _ in 0..ROUNDS {
            if let Some(number) = self.renumber().await? {
                return Ok(number);
            }
        }
        Ok(self.number)
    }

    /// How a window's first bucket is found: it has no number (count pages
    /// always have one, so this matches none of them).
    fn first(&self) -> BsonDoc {
        match self.window {
            Some(_) => doc! { self.spec.page: {"$exists": false} },
            None => doc! { self.spec.page: {"$lt": 1} },
        }
    }

    /// One pass moving the parent's buckets down to 1..=n: the opened
    /// bucket's number after it, or `None` when another append took a
    /// number meanwhile (the pass is run again).
    async fn renumber(&self) -> Result<Option<i64>> {
        use futures::TryStreamExt;
        let buckets = self.buckets();
        let found = buckets.find(self.of_parent()).sort(doc! { self.spec.page: 1 });
        let cursor = found.projection(doc! {"_id": 1, self.spec.page: 1}).selection_criteria(primary());
        let all: Vec<BsonDoc> =
            cursor.await.map_err(self.err("find"))?.try_collect().await.map_err(self.err("find"))?;
        let mut ours = self.number;
        for (i, bucket) in all.iter().enumerate() {
            let want = i as i64 + 1;
            let at = bucket.get(self.spec.page).and_then(|p| p.as_i64().or_else(|| p.as_i32().map(i64::from)));
            let id = bucket.get("_id").cloned().unwrap_or(Bson::Null);
            if at.unwrap_or(1) != want {
                let to = match (self.window, want) {
                    (Some(_), 1) => doc! {"$unset": { self.spec.page: "" }},
                    _ => doc! {"$set": { self.spec.page: i32::try_from(want).unwrap_or(i32::MAX) }},
                };
                let filter = doc! {"_id": id.clone(), self.spec.page: at.map_or(Bson::Null, Bson::Int64)};
                match self.buckets().update_one(filter, to).await.map_err(self.err("update")) {
                    Ok(r) if r.matched_count == 1 => {}
                    // Moved or taken by another append meanwhile: read again.
                    Ok(_) => return Ok(None),
                    Err(e) if e.is_duplicate_key() => return Ok(None),
                    Err(e) => return Err(e),
                }
            }
            if id == self.id {
                ours = want;
            }
        }
        Ok(Some(ours))
    }
}
