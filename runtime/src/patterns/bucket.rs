//! The bucket pattern: children stored in bucket documents of one parent,
//! in pages of a fixed size (`{blog_entry_id, page, count, comments}`) or
//! by time window (`{sensor, start, count, readings}`). An append is one
//! update of the page it appended to last, or an upsert from the stored last
//! page; a unique index on (parent, page) makes concurrent appends safe.

use super::bucket_opened::Opened;
use crate::bson_compat;
use crate::error::{show_id, Error, Result};
use crate::id::DocId;
use crate::schema::document::{BucketSpec, Document, Relation};
use mongodb::bson::{doc, Bson, DateTime, Document as BsonDoc, RawDocumentBuf};
use mongodb::{Collection, Database};
use serde::{de::DeserializeOwned, Serialize};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Mutex;

/// The bucket array of bucket documents `B` of parent `P`, holding `E`s;
/// from `B::rels().<array>`.
///
/// ```
/// # docrel::testing::doc_test(|db| async move {
/// use docrel::{Document, bson::{oid::ObjectId, DateTime}};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "posts")]
/// struct Post { #[serde(rename = "_id")] id: i32, title: String }
///
/// #[derive(Serialize, Deserialize, Clone)]
/// struct Comment { name: String, created_on: DateTime, comment: String }
///
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "comment_pages")]
/// struct CommentPage {
///     #[serde(rename = "_id")] id: ObjectId,
///     #[parent_ref(to = Post)] blog_entry_id: i32,
///     page: i32,
///     count: i32,
///     #[bucket(size = 2)] comments: Vec<Comment>,
/// }
///
/// CommentPage::repo(&db).ensure_indexes().await?; // unique {blog_entry_id, page}
/// Post::repo(&db).insert(&Post { id: 1, title: "Bucketing".into() }).await?;
/// let comments = CommentPage::rels().comments;
/// for text in ["Awesome blog post", "Not so awesome blog", "Meh"] {
///     let c = Comment { name: "Peter Critic".into(), created_on: DateTime::now(), comment: text.into() };
///     comments.append(&db, &1, &c).await?;
/// }
/// assert_eq!(comments.page(&db, &1, 1).await?.map(|p| p.count), Some(2));
/// assert_eq!(comments.latest(&db, &1).await?.map(|p| p.page), Some(2));
/// assert_eq!(comments.all(&db, &1).await?.len(), 3);
/// # Ok(()) });
/// ```
pub struct Bucket<B, P, E> {
    /// The relationship's index in `B`'s schema (see `RefMany`'s).
    index: usize,
    pub(super) time: Option<fn(&E) -> DateTime>,
    _types: PhantomData<Types<B, P, E>>,
}

/// The bucket document, parent and element types, carried for typing only.
type Types<B, P, E> = fn() -> (B, P, E);

/// The last page each parent appended to in one database, by (collection,
/// parent), so an append usually goes straight to the open page: one round
/// trip. Kept per database ([`crate::kept`]).
#[derive(Default)]
pub(super) struct OpenPages(pub(super) Mutex<HashMap<PageKey, i64>>);

/// A bucket collection and a parent (with the window, for time buckets).
pub(super) type PageKey = (&'static str, String);

impl<B, P, E> Clone for Bucket<B, P, E> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<B, P, E> Copy for Bucket<B, P, E> {}

impl<B: Document, P, E> std::fmt::Debug for Bucket<B, P, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bucket").field("relation", self.relation()).finish()
    }
}

impl<B: Document, P, E> Bucket<B, P, E> {
    /// The static description of the bucket array.
    pub fn relation(&self) -> &'static Relation {
        &B::schema().relations[self.index]
    }
}

impl<B, P, E> Bucket<B, P, E> {
    /// A handle (generated code calls this).
    #[doc(hidden)]
    pub const fn new(index: usize, time: Option<fn(&E) -> DateTime>) -> Self {
        Bucket { index, time, _types: PhantomData }
    }
}

/// Where an append went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    /// The page (count buckets); for time buckets, the spill number (2,
    /// 3, ..) when the window's first bucket was full, else `None`.
    pub page: Option<i64>,
    /// The window start (time buckets).
    pub start: Option<DateTime>,
}

/// The most parents whose open page is remembered. The cache is only a
/// hint (a wrong or missing page costs a read, never a wrong write), so a
/// service appending for millions of parents keeps this many, not all.
pub const OPEN_PAGES_LIMIT: usize = 10_000;

/// Remembers `page` as the open page of `key`, within [`OPEN_PAGES_LIMIT`].
pub(super) fn remember_page(pages: &OpenPages, key: PageKey, page: i64) {
    let Ok(mut m) = pages.0.lock() else { return };
    if m.len() >= OPEN_PAGES_LIMIT && !m.contains_key(&key) {
        // Any entry will do: a parent forgotten reads its last page once.
        if let Some(evicted) = m.keys().next().cloned() {
            m.remove(&evicted);
        }
    }
    m.insert(key, page);
}

/// The page remembered for `key`, if it still has room: `push` applied
/// to it with one round trip, and never a new page (the cache may be
/// stale). `None` when nothing is remembered or the page is full.
async fn append_to_remembered(
    pages: &OpenPages,
    coll: &Collection<BsonDoc>,
    key: &PageKey,
    open: impl Fn(i64) -> BsonDoc,
    push: &[BsonDoc],
) -> Result<Option<i64>> {
    let Some(page) = pages.0.lock().ok().and_then(|m| m.get(key).copied()) else { return Ok(None) };
    let r = coll
        .update_one(open(page), push.to_vec())
        .await
        .map_err(|e| Error::driver("update", coll.name().to_owned(), e))?;
    Ok((r.matched_count == 1).then_some(page))
}

fn is_duplicate_key(e: &mongodb::error::Error) -> bool {
    match &*e.kind {
        mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteError(w)) => w.code == 11000,
        mongodb::error::ErrorKind::Command(c) => c.code == 11000,
        _ => false,
    }
}

/// The first number inside `value` that is NaN or infinite.
fn not_finite(value: &Bson) -> Option<f64> {
    match value {
        Bson::Double(d) if !d.is_finite() => Some(*d),
        Bson::Document(d) => d.values().find_map(not_finite),
        Bson::Array(a) => a.iter().find_map(not_finite),
        _ => None,
    }
}

impl<B: Document, P: Document, E: Serialize + DeserializeOwned> Bucket<B, P, E> {
    pub(super) fn spec(&self) -> Result<&'static BucketSpec> {
        self.relation().bucket.as_ref().ok_or_else(|| Error::Invalid {
            what: crate::error::Misuse::Bucket,
            message: format!("`{}` is not declared with `#[bucket(..)]`", self.relation().field),
        })
    }

    pub(crate) fn element(&self, element: &E) -> Result<Bson> {
        let spec = self.spec()?;
        let field = self.relation().field;
        let value = crate::store::field::stored_value(field, element)?;
        // A number that is none (NaN) or unbounded poisons every count and
        // sum made of the elements: refused here as a counter's `add` refuses it.
        if let Some(bad) = not_finite(&value) {
            return Err(Error::Invalid {
                what: crate::error::Misuse::BucketElement,
                message: format!(
                    "an element of `{}.{field}` holds {bad}, which is not a finite number; nothing was written",
                    B::COLLECTION
                ),
            });
        }
        if let Some(max) = spec.max_bytes {
            let bytes =
                bson_compat::to_vec(&doc! {"e": &value}).map(|v| v.len().saturating_sub(8)).unwrap_or(usize::MAX);
            if bytes > max as usize {
                return Err(Error::Invalid {
                    what: crate::error::Misuse::BucketElement,
                    message: format!(
                        "an element of `{}.{}` is {bytes} bytes, above its `max_bytes = {max}`; nothing was written",
                        B::COLLECTION,
                        self.relation().field
                    ),
                });
            }
        }
        Ok(value)
    }

    /// [`Bucket::append`] as the bucket pattern does it, with no move
    /// filling the buckets.
    pub(crate) async fn append_unmoved(&self, db: &Database, parent: &P::Id, element: &E) -> Result<Appended> {
        crate::client::trace::Op::new("append", B::COLLECTION).documents(1).run(async move {
        crate::schema::stored::hold(db).await?;
        let spec = self.spec()?;
        let value = self.element(element)?;
        let coll = db.collection::<BsonDoc>(B::COLLECTION);
        // A pipeline update rather than `$inc`/`$push`: it creates `count`
        // before the array in a new bucket, the order of the reference text
        // (operators add new fields in lexicographic order).
        let push = vec![doc! {"$set": {
            spec.count: {"$add": [{"$ifNull": [format!("${}", spec.count), 0]}, 1]},
            self.relation().field: {"$concatArrays": [{"$ifNull": [format!("${}", self.relation().field), []]}, {"$literal": [value]}]},
        }}];
        if let (Some(window), Some(time)) = (spec.window_ms, self.time) {
            let t = time(element).timestamp_millis();
            let start = DateTime::from_millis(t.div_euclid(window) * window);
            return self.append_in_window(db, parent, start, push).await;
        }
        let size = spec.size.unwrap_or(u32::MAX);
        let pages = crate::kept::of_database::<OpenPages>(db);
        let key = (B::COLLECTION, show_id(&parent.to_bson()));
        // Pages are stored as 32-bit integers, like the reference text's.
        let open = |page: i64| {
            let stored_page = Bson::Int32(i32::try_from(page).unwrap_or(i32::MAX));
            doc! { spec.parent: parent.to_bson(), spec.page: stored_page, spec.count: {"$lt": size as i64} }
        };
        // The page this process appended to last, if it still has room.
        if let Some(page) = append_to_remembered(&pages, &coll, &key, &open, &push).await? {
            return Ok(Appended { page: Some(page), start: None });
        }
        // Otherwise from the stored last page, so no page is ever skipped.
        let mut page = self.last_page(db, parent).await?.unwrap_or(1);
        for _ in 0..1_000 {
            match coll.update_one(open(page), push.clone()).upsert(true).await {
                Ok(r) => {
                    if let Some(id) = r.upserted_id {
                        page = self.confirm_opened(db, parent.to_bson(), None, id, page).await?;
                    }
                    remember_page(&pages, key, page);
                    return Ok(Appended { page: Some(page), start: None });
                }
                // The page is full (the upsert collided with it): the next one.
                Err(e) if is_duplicate_key(&e) => page += 1,
                Err(e) => return Err(Error::driver("update", B::COLLECTION, e)),
            }
        }
        Err(Error::Invalid {
            what: crate::error::Misuse::Bucket,
            message: format!(
                "no page of `{}` with room found after 1000 tries for parent {}; run `ensure_indexes` (the unique \
                 index on parent and page is what makes a full page refuse the upsert)",
                B::COLLECTION,
                show_id(&parent.to_bson())
            ),
        })
        }).await
    }

    /// A time bucket's append: to the window's open bucket, at most
    /// [`BucketSpec::bound`] elements each. The window's first bucket has
    /// no spill number (the reference text's `{sensor, start, count,
    /// readings}`); when it is full the window goes on in buckets numbered
    /// 2, 3, .. in the `page` field, found the way count pages are.
    async fn append_in_window(
        &self,
        db: &Database,
        parent: &P::Id,
        start: DateTime,
        push: Vec<BsonDoc>,
    ) -> Result<Appended> {
        let spec = self.spec()?;
        let size = spec.bound().unwrap_or(crate::schema::document::TIME_BUCKET_SIZE);
        let coll = db.collection::<BsonDoc>(B::COLLECTION);
        let at = |spill: i64| Appended { page: (spill > 1).then_some(spill), start: Some(start) };
        let open = |spill: i64| {
            let number = match spill {
                // Not an equality, so the upsert of a window's first bucket stores no spill number.
                ..=1 => Bson::Document(doc! {"$exists": false}),
                n => Bson::Int32(i32::try_from(n).unwrap_or(i32::MAX)),
            };
            doc! { spec.parent: parent.to_bson(), spec.start: start, spec.page: number, spec.count: {"$lt": size as i64} }
        };
        // Only spills are remembered: a quiet window is one upsert of its first bucket.
        let pages = crate::kept::of_database::<OpenPages>(db);
        let key = (B::COLLECTION, format!("{}@{}", show_id(&parent.to_bson()), start.timestamp_millis()));
        if let Some(spill) = append_to_remembered(&pages, &coll, &key, &open, &push).await? {
            return Ok(at(spill));
        }
        let mut spill = 1;
        for _ in 0..1_000 {
            match coll.update_one(open(spill), push.clone()).upsert(true).await {
                Ok(r) => {
                    if let Some(id) = r.upserted_id {
                        spill = self.confirm_opened(db, parent.to_bson(), Some(start), id, spill).await?;
                    }
                    if spill > 1 {
                        remember_page(&pages, key, spill);
                    }
                    return Ok(at(spill));
                }
                // The first bucket is full: on from the window's last spill,
                // so a busy window is not walked from its start.
                Err(e) if is_duplicate_key(&e) && spill == 1 => {
                    spill = self.last_spill(db, parent, start).await?.max(2);
                }
                Err(e) if is_duplicate_key(&e) => spill += 1,
                Err(e) => return Err(Error::driver("update", B::COLLECTION, e)),
            }
        }
        Err(Error::Invalid {
            what: crate::error::Misuse::Bucket,
            message: format!(
                "no bucket of `{}` with room found after 1000 tries for parent {} in the window at {start}; run \
                 `ensure_indexes` and drop a unique index on {{{}: 1, {}: 1}} alone, if an older docrel made one \
                 (the unique index on parent, window and `{}` is what makes a full bucket refuse the upsert)",
                B::COLLECTION,
                show_id(&parent.to_bson()),
                spec.parent,
                spec.start,
                spec.page,
            ),
        })
    }

    /// The highest spill number of a window (1 when it has only its first bucket).
    async fn last_spill(&self, db: &Database, parent: &P::Id, start: DateTime) -> Result<i64> {
        let spec = self.spec()?;
        let last = db
            .collection::<BsonDoc>(B::COLLECTION)
            .find_one(doc! { spec.parent: parent.to_bson(), spec.start: start })
            .sort(doc! { spec.page: -1 })
            .projection(doc! { spec.page: 1 })
            .selection_criteria(crate::store::primary())
            .await
            .map_err(|e| Error::driver("find", B::COLLECTION, e))?;
        Ok(last
            .and_then(|d| d.get(spec.page).and_then(|p| p.as_i64().or_else(|| p.as_i32().map(i64::from))))
            .unwrap_or(1))
    }

    /// After this append opened a bucket (`id`, numbered `number` within
    /// the parent's pages or its `window`): the parent must still exist,
    /// and so must the buckets below it (see [`super::bucket_opened`]).
    /// Returns the bucket's number then; [`Error::NotFound`] when the
    /// parent is gone (its buckets removed, the append refused).
    pub(super) async fn confirm_opened(
        &self,
        db: &Database,
        parent: Bson,
        window: Option<DateTime>,
        id: Bson,
        number: i64,
    ) -> Result<i64> {
        let spec = self.spec()?;
        let collections = (P::COLLECTION, B::COLLECTION);
        let key = (B::COLLECTION, show_id(&parent));
        let opened = Opened { db, spec, collections, parent, window, id, number };
        let confirmed = opened.confirm().await;
        if confirmed.is_err() {
            if let Ok(mut m) = crate::kept::of_database::<OpenPages>(db).0.lock() {
                m.remove(&key);
            }
        }
        confirmed
    }

    async fn last_page(&self, db: &Database, parent: &P::Id) -> Result<Option<i64>> {
        let spec = self.spec()?;
        let last = db
            .collection::<BsonDoc>(B::COLLECTION)
            .find_one(doc! { spec.parent: parent.to_bson() })
            .sort(doc! { spec.page: -1 })
            .projection(doc! { spec.page: 1 })
            .selection_criteria(crate::store::primary())
            .await
            .map_err(|e| Error::driver("find", B::COLLECTION, e))?;
        Ok(last.and_then(|d| d.get(spec.page).and_then(|p| p.as_i64().or_else(|| p.as_i32().map(i64::from)))))
    }

    /// Page `k` (from 1) of the parent's buckets; a `k` above `i64::MAX`
    /// is an [`Error::Invalid`].
    pub async fn page(&self, db: &Database, parent: &P::Id, k: u64) -> Result<Option<B>> {
        let spec = self.spec()?;
        self.readable(db)?;
        let k = crate::store::options::count("page", k)?;
        let k = i32::try_from(k).map_or(Bson::Int64(k), Bson::Int32);
        crate::store::find::Find::<B, B>::on(db, doc! { spec.parent: parent.to_bson(), spec.page: k }).one().await
    }

    /// The parent's latest bucket (highest page, or latest window).
    pub async fn latest(&self, db: &Database, parent: &P::Id) -> Result<Option<B>> {
        let spec = self.spec()?;
        let order = match spec.window_ms {
            Some(_) => doc! { spec.start: -1, spec.page: -1 },
            None => doc! { spec.page: -1 },
        };
        crate::store::find::Find::<B, B>::on(db, doc! { spec.parent: parent.to_bson() })
            .sort(crate::store::query::Sort::new(order))
            .one()
            .await
    }

    /// Every element of the parent, bucket by bucket, in order.
    pub async fn all(&self, db: &Database, parent: &P::Id) -> Result<Vec<E>> {
        let spec = self.spec()?;
        self.elements(db, doc! { spec.parent: parent.to_bson() }, |_| true).await
    }

    /// The elements of a time-bucketed parent whose time is in `[from, to)`,
    /// reading only the buckets whose window overlaps it.
    pub async fn range(&self, db: &Database, parent: &P::Id, from: DateTime, to: DateTime) -> Result<Vec<E>> {
        let spec = self.spec()?;
        let (Some(window), Some(time)) = (spec.window_ms, self.time) else {
            return Err(Error::Invalid {
                what: crate::error::Misuse::BucketRange,
                message: format!(
                    "`{}` is bucketed by count: a range read needs `#[bucket(by = .., window = ..)]`",
                    self.relation().field
                ),
            });
        };
        let first = DateTime::from_millis(from.timestamp_millis().div_euclid(window) * window);
        let filter = doc! { spec.parent: parent.to_bson(), spec.start: {"$gte": first, "$lt": to} };
        self.elements(db, filter, |e| {
            let t = time(e);
            t >= from && t < to
        })
        .await
    }

    async fn elements(&self, db: &Database, filter: BsonDoc, keep: impl Fn(&E) -> bool) -> Result<Vec<E>> {
        let spec = self.spec()?;
        self.readable(db)?;
        // A window's first bucket has no spill number, which sorts first.
        let order = match spec.window_ms {
            Some(_) => doc! { spec.start: 1, spec.page: 1 },
            None => doc! { spec.page: 1 },
        };
        let mut cursor = db
            .collection::<RawDocumentBuf>(B::COLLECTION)
            .find(filter)
            .sort(order)
            .projection(doc! { self.relation().field: 1 })
            .batch_size(i32::MAX as u32)
            .await
            .map_err(|e| Error::driver("find", B::COLLECTION, e))?;
        let mut out = Vec::new();
        while cursor.advance().await.map_err(|e| Error::driver("find", B::COLLECTION, e))? {
            let raw = cursor.current();
            let Ok(array) = raw.get_array(self.relation().field) else { continue };
            for item in array.into_iter().filter_map(|i| i.ok()) {
                let element: E = match item.as_document() {
                    Some(d) => crate::store::codec::decode(B::COLLECTION, d)?,
                    None => bson_compat::from_bson(Bson::try_from(item).unwrap_or(Bson::Null)).map_err(|e| {
                        Error::Encode {
                            what: format!("an element of `{}`", self.relation().field),
                            message: e.to_string(),
                        }
                    })?,
                };
                if keep(&element) {
                    out.push(element);
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod cache_tests {
    use super::{remember_page, OpenPages, OPEN_PAGES_LIMIT};

    #[test]
    fn the_open_page_cache_stays_within_its_limit() {
        let pages = OpenPages::default();
        for i in 0..OPEN_PAGES_LIMIT + 50 {
            remember_page(&pages, ("pages_test", i.to_string()), 1);
        }
        let len = pages.0.lock().map(|m| m.len()).unwrap_or(usize::MAX);
        assert_eq!(len, OPEN_PAGES_LIMIT);
        remember_page(&pages, ("pages_test", "0-again".into()), 2);
        assert_eq!(pages.0.lock().map(|m| m.len()).unwrap_or(usize::MAX), OPEN_PAGES_LIMIT);
    }
}
