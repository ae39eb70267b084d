//! The find builder every read goes through: a collection, a filter and
//! options, decoded into a document type or one of its views.

use crate::error::{Error, Result};
use crate::schema::document::{Document, View};
use crate::store::codec::decode;
use crate::store::field::Field;
use crate::store::options::{batch, count, read_setters, ReadOptions, ONE_BATCH};
use crate::store::query::{Filter, Sort};
use futures::{Stream, StreamExt, TryStreamExt};
use mongodb::bson::{self, RawDocumentBuf};
use mongodb::options::FindOptions;
use mongodb::{ClientSession, Collection};
use std::marker::PhantomData;

/// The bookkeeping field docrel keeps on sources and holders of copies
/// (versions); never part of a Rust type, so never read by a find.
pub(crate) const BOOKKEEPING: &str = "_docrel";

/// A find being built: options, then `.await` (all results, like
/// [`Find::to_vec`]), [`Find::one`] or [`Find::stream`].
///
/// Round trips: awaiting it (or `to_vec`) asks for everything in one batch,
/// so a result set that fits in 16 MiB is ONE round trip; with a
/// [`Find::limit`] the batch is the limit; a [`Find::stream`] reads the
/// server's default batches (101 documents, then 16 MiB) unless
/// [`Find::batch_size`] says otherwise.
///
/// ```
/// # docrel::testing::doc_test(|db| async move {
/// use docrel::{Document, bson::oid::ObjectId};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "parts")]
/// struct Part { #[serde(rename = "_id")] id: ObjectId, name: String, price: f64 }
///
/// let parts: Vec<Part> = (0..500).map(|i| Part { id: ObjectId::new(), name: format!("p{i}"), price: 1.0 }).collect();
/// Part::repo(&db).insert_many(&parts).await?;
///
/// let trips = docrel::testing::round_trips(&db);
/// let mark = trips.mark();
/// let all = Part::repo(&db).find(Part::fields().price.lt(2.0)).await?;
/// assert_eq!((all.len(), trips.since(mark)), (500, 1)); // no getMore
/// # Ok(()) });
/// ```
#[must_use = "a Find does nothing until awaited or run with to_vec, one or stream"]
pub struct Find<T, V> {
    coll: Collection<RawDocumentBuf>,
    read: ReadOptions,
    exclude: Vec<&'static str>,
    _view: PhantomData<fn() -> (T, V)>,
}

impl<T: Document> Find<T, T> {
    /// A find over `coll` (the collection of `T`), reading whole documents.
    pub fn new(coll: Collection<RawDocumentBuf>, filter: impl Into<Filter>) -> Self {
        Find { coll, read: ReadOptions::filtered(filter.into()), exclude: Vec::new(), _view: PhantomData }
    }

    /// A find over the collection of `T` in `db`.
    pub fn on(db: &mongodb::Database, filter: impl Into<Filter>) -> Self {
        Find::new(db.collection(T::COLLECTION), filter)
    }
}

impl<T: Document, V: View> Find<T, V> {
    read_setters! {
        /// Orders the results.
        sort => read;
        /// Returns at most `n` documents (`0`: no limit, as in MongoDB).
        /// Every count is a `u64`; one above `i64::MAX` is an
        /// [`Error::Invalid`] when the find runs.
        limit => read;
        /// Skips the first `n` documents.
        skip => read;
        /// Asks for `n` documents per batch (one round trip each); the
        /// server's largest batch is `i32::MAX` documents, so a larger `n`
        /// asks for that.
        batch_size => read;
    }
    /// Leaves `field` out of what travels: everything but this big array.
    /// The type read must not need it (`#[serde(default)]` on the field of
    /// a document, or a view without it); otherwise decoding fails and the
    /// error names the field.
    ///
    /// ```
    /// # docrel::testing::doc_test(|db| async move {
    /// use docrel::{Document, bson::oid::ObjectId};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "hosts")]
    /// struct Host {
    ///     #[serde(rename = "_id")] id: ObjectId,
    ///     name: String,
    ///     #[serde(default)]
    ///     #[embed(max = 100)]
    ///     log: Vec<String>,
    /// }
    ///
    /// let host = Host { id: ObjectId::new(), name: "goofy".into(), log: vec!["up".into(); 100] };
    /// Host::repo(&db).insert(&host).await?;
    /// let light = Host::repo(&db).find(Host::fields().name.eq("goofy")).exclude(Host::fields().log).await?;
    /// assert!(light[0].log.is_empty());
    /// # Ok(()) });
    /// ```
    pub fn exclude<X>(mut self, field: Field<T, X>) -> Self {
        self.exclude.push(field.path());
        self
    }
    /// Reads the results as the view `W`: only its fields travel.
    pub fn view<W: View<Of = T>>(self) -> Find<T, W> {
        Find { coll: self.coll, read: self.read, exclude: self.exclude, _view: PhantomData }
    }

    /// The collection read.
    pub(crate) fn collection(&self) -> &Collection<RawDocumentBuf> {
        &self.coll
    }

    /// What the find was built with, for a strategy that runs it as an
    /// aggregate instead (`$match`, `$sort`, `$skip`, `$limit`, `$project`).
    pub(crate) fn parts(self) -> FindParts {
        let projection = self.projection();
        FindParts { coll: self.coll, read: self.read, projection }
    }

    /// The projection: the view's fields, less the excluded ones; for whole
    /// documents, everything but the excluded fields and docrel's bookkeeping.
    fn projection(&self) -> bson::Document {
        match V::PROJECTION {
            Some(fields) => fields
                .iter()
                .filter(|f| !self.exclude.contains(f))
                .map(|f| ((*f).to_owned(), bson::Bson::Int32(1)))
                .collect(),
            None => std::iter::once(BOOKKEEPING)
                .chain(self.exclude.iter().copied())
                .map(|f| (f.to_owned(), bson::Bson::Int32(0)))
                .collect(),
        }
    }

    /// The collection, filter and options of the find. `all`: the caller
    /// reads every result (to_vec), so one batch is best.
    fn prepared(self, all: bool) -> Result<(Collection<RawDocumentBuf>, bson::Document, FindOptions)> {
        let mut options = FindOptions::default();
        options.projection = Some(self.projection());
        let read = self.read;
        if all && read.limit.is_none() && read.batch_size.is_none() {
            options.batch_size = Some(ONE_BATCH);
        }
        options.sort = read.sort.map(Sort::into_document);
        if let Some(l) = read.limit {
            options.limit = Some(count("limit", l)?);
            // Everything in one batch when it fits: one round trip, no getMore.
            if read.batch_size.is_none() && l > 0 {
                options.batch_size = Some(batch(l));
            }
        }
        if let Some(s) = read.skip {
            count("skip", s)?;
            options.skip = Some(s);
        }
        if let Some(b) = read.batch_size {
            options.batch_size = Some(batch(b));
        }
        Ok((self.coll, read.filter.unwrap_or_default().into_document()?, options))
    }

    async fn cursor(self, all: bool) -> Result<mongodb::Cursor<RawDocumentBuf>> {
        let (coll, filter, options) = self.prepared(all)?;
        crate::store::moving::cursor(&coll, filter, options).await
    }

    /// All results, read in `session` when given.
    pub(crate) async fn all_in(self, session: Option<&mut ClientSession>) -> Result<Vec<V>> {
        crate::client::trace::Op::new("find", T::COLLECTION)
            .run_counted(
                async move {
                    let (coll, filter, options) = self.prepared(true)?;
                    let each = |raw: &bson::RawDocument| decode::<V>(T::COLLECTION, raw);
                    crate::store::moving::collect_find(&coll, filter, options, session, each).await
                },
                |v| Some(v.len()),
            )
            .await
    }

    /// All results.
    pub async fn to_vec(self) -> Result<Vec<V>> {
        self.all_in(None).await
    }

    /// Runs the find in `session`, like the driver's `.session(..)`: inside
    /// the caller's transaction it reads the transaction's own writes.
    /// Await it (all results) or call [`FindIn::one`].
    ///
    /// ```
    /// # docrel::testing::doc_test(|db| async move {
    /// use docrel::{Document, bson::oid::ObjectId};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "parts")]
    /// struct Part { #[serde(rename = "_id")] id: ObjectId, qty: i32 }
    ///
    /// let driver = |e| docrel::Error::driver("session", "", e);
    /// let mut s = db.client().start_session().await.map_err(driver)?;
    /// s.start_transaction().await.map_err(driver)?;
    /// Part::repo(&db).insert(&Part { id: ObjectId::new(), qty: 3 }).session(&mut s).await?;
    /// let low = Part::repo(&db).find(Part::fields().qty.lt(5)).limit(10).session(&mut s).await?;
    /// assert_eq!(low.len(), 1); // the transaction's own insert
    /// assert!(Part::repo(&db).find(Part::fields().qty.lt(5)).await?.is_empty()); // not committed
    /// s.abort_transaction().await.map_err(driver)?;
    /// # Ok(()) });
    /// ```
    pub fn session(self, session: &mut ClientSession) -> FindIn<'_, T, V> {
        FindIn { find: self, session }
    }

    /// The first result, if any.
    pub async fn one(mut self) -> Result<Option<V>> {
        self.read.limit = Some(1);
        Ok(self.to_vec().await?.pop())
    }

    /// The results as a stream, batch by batch.
    pub async fn stream(self) -> Result<impl Stream<Item = Result<V>> + Send> {
        // The span covers opening the cursor; later batches come as the
        // caller polls the stream.
        let cursor = crate::client::trace::Op::new("find_stream", T::COLLECTION).run(self.cursor(false)).await?;
        Ok(cursor
            .map_err(|e| Error::driver("find", T::COLLECTION, e))
            .map(|r| r.and_then(|raw| decode::<V>(T::COLLECTION, &raw))))
    }
}

/// The pieces of a [`Find`], taken apart by [`Find::parts`].
pub(crate) struct FindParts {
    pub coll: Collection<RawDocumentBuf>,
    pub read: ReadOptions,
    pub projection: bson::Document,
}

impl<T: Document, V: View> std::future::IntoFuture for Find<T, V> {
    type Output = Result<Vec<V>>;
    type IntoFuture = futures::future::BoxFuture<'static, Self::Output>;
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.to_vec())
    }
}

/// A [`Find`] that runs in the caller's session ([`Find::session`]).
#[must_use = "a FindIn does nothing until awaited or run with to_vec or one"]
pub struct FindIn<'s, T, V> {
    find: Find<T, V>,
    session: &'s mut ClientSession,
}

impl<T, V> std::fmt::Debug for FindIn<'_, T, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FindIn").field("collection", &self.find.coll.namespace()).finish()
    }
}

impl<T: Document, V: View> FindIn<'_, T, V> {
    /// All results.
    pub async fn to_vec(self) -> Result<Vec<V>> {
        self.find.all_in(Some(self.session)).await
    }

    /// The first result, if any.
    pub async fn one(mut self) -> Result<Option<V>> {
        self.find.read.limit = Some(1);
        Ok(self.to_vec().await?.pop())
    }
}

impl<'s, T: Document, V: View> std::future::IntoFuture for FindIn<'s, T, V> {
    type Output = Result<Vec<V>>;
    type IntoFuture = futures::future::BoxFuture<'s, Self::Output>;
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.to_vec())
    }
}
