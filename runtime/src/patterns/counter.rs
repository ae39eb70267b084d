//! Time buckets as counters: one document per parent and time window,
//! `{page, start, views, seconds}`, counting (and summing) events that are
//! not stored. An event is one upsert with `$inc`; the counts of a range of
//! windows are one read. A unique index on (parent, start) keeps one
//! document per window under any concurrency.

use super::bucket_check::as_i64;
use crate::bson_compat;
use crate::error::{show_id, Error, Misuse, Result};
use crate::id::DocId;
use crate::schema::document::{BucketSpec, Document, Relation};
use mongodb::bson::{doc, Bson, DateTime, Document as BsonDoc};
use mongodb::Database;
use serde::{de::DeserializeOwned, Serialize};
use std::marker::PhantomData;

/// The counts per window kept in counter documents `B` of parent `P`,
/// each adding the events' amounts of type `S` (`()` without a sum); from
/// `B::rels().<count field>` of a `#[bucket(counter, window = ..)]`.
///
/// ```
/// # docrel::testing::doc_test(|db| async move {
/// use docrel::{Document, bson::{oid::ObjectId, DateTime}};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "pages")]
/// struct Page { #[serde(rename = "_id")] id: i32, path: String }
///
/// /// An hour of a page's views, and the seconds spent on it.
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "page_views")]
/// struct PageViews {
///     #[serde(rename = "_id")] id: ObjectId,
///     #[parent_ref(to = Page, on_delete = cascade)] page: i32,
///     start: DateTime,
///     #[bucket(counter, window = "hour", sum = seconds)] views: i64,
///     seconds: f64,
/// }
///
/// PageViews::repo(&db).ensure_indexes().await?; // unique {page, start}
/// Page::repo(&db).insert(&Page { id: 1, path: "/".into() }).await?;
/// let views = PageViews::rels().views;
/// let nine = DateTime::from_millis(1_388_566_800_000); // 2014-01-01T09:00:00Z
/// let at = |minutes: i64| DateTime::from_millis(nine.timestamp_millis() + minutes * 60_000);
/// for (minute, seconds) in [(5, 30.0), (20, 12.0), (70, 3.0)] {
///     views.record(&db, &1, at(minute), seconds).await?; // one `update` with `$inc`
/// }
/// let hours = views.counts(&db, &1, at(0), at(120)).await?; // one `find`
/// assert_eq!(hours.iter().map(|h| (h.count, h.sum)).collect::<Vec<_>>(), [(2, 42.0), (1, 3.0)]);
/// assert_eq!(hours[0].start, nine);
/// # Ok(()) });
/// ```
pub struct Counter<B, P, S> {
    /// The relationship's index in `B`'s schema (see `Bucket`'s).
    index: usize,
    _types: PhantomData<Types<B, P, S>>,
}

/// The counter document, parent and sum types, carried for typing only.
type Types<B, P, S> = fn() -> (B, P, S);

impl<B, P, S> Clone for Counter<B, P, S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<B, P, S> Copy for Counter<B, P, S> {}

impl<B: Document, P, S> std::fmt::Debug for Counter<B, P, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counter").field("relation", self.relation()).finish()
    }
}

impl<B: Document, P, S> Counter<B, P, S> {
    /// The static description of the counter.
    pub fn relation(&self) -> &'static Relation {
        &B::schema().relations[self.index]
    }
}

impl<B, P, S> Counter<B, P, S> {
    /// A handle (generated code calls this).
    #[doc(hidden)]
    pub const fn new(index: usize) -> Self {
        Counter { index, _types: PhantomData }
    }
}

/// One window of a [`Counter`]: where it starts, how many events it
/// counted, and the sum of their amounts.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowCount<S> {
    /// The window's start (its `start` field).
    pub start: DateTime,
    /// The events counted in it.
    pub count: u64,
    /// The sum of their amounts (`()` for a counter without `sum`).
    pub sum: S,
}

impl<B: Document, P: Document, S: Serialize + DeserializeOwned + Send + Sync> Counter<B, P, S> {
    pub(super) fn spec(&self) -> Result<&'static BucketSpec> {
        match self.relation().bucket.as_ref() {
            Some(spec) if spec.counter && spec.window_ms.is_some() => Ok(spec),
            _ => Err(Error::Invalid {
                what: Misuse::Bucket,
                message: format!("`{}` is not declared with `#[bucket(counter, window = ..)]`", self.relation().field),
            }),
        }
    }

    /// The start of the window holding `at`.
    pub(super) fn window_of(spec: &BucketSpec, at: DateTime) -> DateTime {
        let window = spec.window_ms.unwrap_or(1).max(1);
        DateTime::from_millis(at.timestamp_millis().div_euclid(window) * window)
    }

    /// Counts one event at `at` with its `amount` in the parent's window
    /// holding `at`: one upsert with `$inc`, creating the window's document
    /// at its first event. Returns the window's start. An amount that is
    /// not a finite number is refused before any write. The parent is not
    /// read (the point is one round trip per event): verify reports windows
    /// whose parent is gone, and a parent reference with `on_delete =
    /// cascade` deletes them with the parent.
    pub async fn record(&self, db: &Database, parent: &P::Id, at: DateTime, amount: S) -> Result<DateTime> {
        self.add(db, parent, at, 1, amount).await
    }

    /// Counts `events` events at once, their amounts adding up to `amount`:
    /// one upsert, as [`Counter::record`].
    pub async fn add(&self, db: &Database, parent: &P::Id, at: DateTime, events: u64, amount: S) -> Result<DateTime> {
        crate::client::trace::Op::new("record", B::COLLECTION)
            .documents(1)
            .run(async move {
                let spec = self.spec()?;
                let events = crate::store::options::count("add", events)?;
                let mut inc = doc! { spec.count: events };
                if let Some(sum) = spec.sum {
                    inc.insert(sum, self.amount(&amount)?);
                }
                let start = Self::window_of(spec, at);
                let filter = doc! { spec.parent: parent.to_bson(), spec.start: start };
                let coll = db.collection::<BsonDoc>(B::COLLECTION);
                let update = doc! {"$inc": inc};
                // Two first events of a window may race to create it: the unique
                // index refuses one upsert, which then finds the window made.
                for attempt in 0..2 {
                    match coll.update_one(filter.clone(), update.clone()).upsert(true).await {
                        Ok(_) => return Ok(start),
                        Err(e) => {
                            let e = Error::driver("update", B::COLLECTION, e);
                            if attempt == 1 || !e.is_duplicate_key() {
                                return Err(e);
                            }
                        }
                    }
                }
                Ok(start)
            })
            .await
    }

    /// The amount as the number `$inc` adds; refused when it is none.
    pub(super) fn amount(&self, amount: &S) -> Result<Bson> {
        let refused = |what: String| Error::Invalid {
            what: Misuse::Bucket,
            message: format!(
                "the amount of an event for `{}.{}` is {what}, which a sum cannot add; nothing was written",
                B::COLLECTION,
                self.relation().field
            ),
        };
        match bson_compat::to_bson(amount) {
            Ok(Bson::Double(d)) if !d.is_finite() => Err(refused(d.to_string())),
            Ok(n @ (Bson::Double(_) | Bson::Int32(_) | Bson::Int64(_))) => Ok(n),
            Ok(other) => Err(refused(format!("`{other}`"))),
            Err(e) => Err(refused(e.to_string())),
        }
    }

    /// The parent's windows overlapping `[from, to)` that counted anything,
    /// oldest first: one read, of the window documents only. The window
    /// holding `from` counts whole (a counter cannot split a window).
    pub async fn counts(
        &self,
        db: &Database,
        parent: &P::Id,
        from: DateTime,
        to: DateTime,
    ) -> Result<Vec<WindowCount<S>>> {
        let spec = self.spec()?;
        let first = Self::window_of(spec, from);
        if to <= first {
            return Ok(Vec::new());
        }
        let mut projection = doc! {"_id": 0, spec.start: 1, spec.count: 1};
        if let Some(sum) = spec.sum {
            projection.insert(sum, 1);
        }
        let filter = doc! { spec.parent: parent.to_bson(), spec.start: {"$gte": first, "$lt": to} };
        let found = db
            .collection::<BsonDoc>(B::COLLECTION)
            .find(filter)
            .sort(doc! { spec.start: 1 })
            .projection(projection)
            .batch_size(crate::store::options::batch(u64::MAX))
            .await
            .map_err(|e| Error::driver("find", B::COLLECTION, e))?;
        let stored: Vec<BsonDoc> =
            futures::TryStreamExt::try_collect(found).await.map_err(|e| Error::driver("find", B::COLLECTION, e))?;
        let mut windows: Vec<(DateTime, i64, Bson)> = Vec::new();
        for d in stored {
            let Ok(start) = d.get_datetime(spec.start).copied() else { continue };
            let count = as_i64(d.get(spec.count)).unwrap_or(0);
            let sum = spec.sum.and_then(|s| d.get(s).cloned()).unwrap_or(Bson::Int32(0));
            // A window stored twice (written without the unique index) counts once, added up.
            match windows.last_mut() {
                Some((s, c, total)) if *s == start => {
                    *c += count;
                    *total = add(total, &sum);
                }
                _ => windows.push((start, count, sum)),
            }
        }
        windows.into_iter().map(|(start, count, sum)| self.window(parent, start, count, sum)).collect()
    }

    fn window(&self, parent: &P::Id, start: DateTime, count: i64, sum: Bson) -> Result<WindowCount<S>> {
        let field = self.spec()?.sum;
        let sum = if field.is_some() { sum } else { Bson::Null };
        let sum = bson_compat::from_bson(sum).map_err(|e| Error::Decode {
            collection: B::COLLECTION.into(),
            id: format!("{} at {start}", show_id(&parent.to_bson())),
            rust_type: std::any::type_name::<S>(),
            path: field.unwrap_or_default().into(),
            message: e.to_string(),
        })?;
        Ok(WindowCount { start, count: u64::try_from(count).unwrap_or(0), sum })
    }
}

impl<B: Document, P: Document> Counter<B, P, ()> {
    /// Counts one event at `at`, for a counter without a sum: one upsert.
    pub async fn hit(&self, db: &Database, parent: &P::Id, at: DateTime) -> Result<DateTime> {
        self.add(db, parent, at, 1, ()).await
    }
}

/// Two stored sums added, as `$inc` would.
fn add(a: &Bson, b: &Bson) -> Bson {
    match (a, b) {
        (Bson::Int32(x), Bson::Int32(y)) => Bson::Int64(i64::from(*x) + i64::from(*y)),
        (Bson::Int32(_) | Bson::Int64(_), Bson::Int32(_) | Bson::Int64(_)) => {
            Bson::Int64(as_i64(Some(a)).unwrap_or(0).saturating_add(as_i64(Some(b)).unwrap_or(0)))
        }
        _ => Bson::Double(float(a) + float(b)),
    }
}

fn float(v: &Bson) -> f64 {
    match v {
        Bson::Double(d) => *d,
        Bson::Int32(i) => f64::from(*i),
        Bson::Int64(i) => *i as f64,
        _ => 0.0,
    }
}
