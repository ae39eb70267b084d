//! The find builder every read goes through: a collection, a filter and
//! options, decoded into a document type or one of its views.

use crate::error::{Error, Result};
use crate::schema::document::{Document, View};
use crate::store::codec::decode;
use crate::store::query::{Filter, Sort};
use bson::RawDocumentBuf;
use futures::{Stream, StreamExt, TryStreamExt};
use mongodb::Collection;
use std::marker::PhantomData;

/// A find being built: options, then [`Find::to_vec`], [`Find::one`] or [`Find::stream`].
#[must_use = "a Find does nothing until run with to_vec, one or stream"]
pub struct Find<T, V> {
    coll: Collection<RawDocumentBuf>,
    filter: Filter,
    sort: Option<Sort>,
    limit: Option<i64>,
    skip: Option<u64>,
    batch_size: Option<u32>,
    _view: PhantomData<fn() -> (T, V)>,
}

impl<T: Document> Find<T, T> {
    /// A find over `coll` (the collection of `T`), reading whole documents.
    pub fn new(coll: Collection<RawDocumentBuf>, filter: impl Into<Filter>) -> Self {
        Find { coll, filter: filter.into(), sort: None, limit: None, skip: None, batch_size: None, _view: PhantomData }
    }

    /// A find over the collection of `T` in `db`.
    pub fn on(db: &mongodb::Database, filter: impl Into<Filter>) -> Self {
        Find::new(db.collection(T::COLLECTION), filter)
    }
}

impl<T: Document, V: View> Find<T, V> {
    /// Orders the results.
    pub fn sort(mut self, sort: Sort) -> Self {
        self.sort = Some(sort);
        self
    }
    /// Returns at most `n` documents.
    pub fn limit(mut self, n: i64) -> Self {
        self.limit = Some(n);
        self
    }
    /// Skips the first `n` documents.
    pub fn skip(mut self, n: u64) -> Self {
        self.skip = Some(n);
        self
    }
    /// Asks for `n` documents per batch (one round trip each).
    pub fn batch_size(mut self, n: u32) -> Self {
        self.batch_size = Some(n);
        self
    }
    /// Reads the results as the view `W`: only its fields travel.
    pub fn view<W: View<Of = T>>(self) -> Find<T, W> {
        Find {
            coll: self.coll,
            filter: self.filter,
            sort: self.sort,
            limit: self.limit,
            skip: self.skip,
            batch_size: self.batch_size,
            _view: PhantomData,
        }
    }

    async fn cursor(self) -> Result<mongodb::Cursor<RawDocumentBuf>> {
        let err = |e| Error::driver("find", T::COLLECTION, e);
        let filter = self.filter.into_document()?;
        let mut find = self.coll.find(filter);
        if let Some(p) = V::projection() {
            find = find.projection(p);
        }
        if let Some(s) = self.sort {
            find = find.sort(s.into_document());
        }
        if let Some(l) = self.limit {
            find = find.limit(l);
            // Everything in one batch when it fits: one round trip, no getMore.
            if self.batch_size.is_none() && l > 0 {
                find = find.batch_size(u32::try_from(l).unwrap_or(u32::MAX));
            }
        }
        if let Some(s) = self.skip {
            find = find.skip(s);
        }
        if let Some(b) = self.batch_size {
            find = find.batch_size(b);
        }
        find.await.map_err(err)
    }

    /// All results.
    pub async fn to_vec(self) -> Result<Vec<V>> {
        let mut cursor = self.cursor().await?;
        let mut out = Vec::new();
        while cursor.advance().await.map_err(|e| Error::driver("find", T::COLLECTION, e))? {
            out.push(decode::<V>(T::COLLECTION, cursor.current())?);
        }
        Ok(out)
    }

    /// The first result, if any.
    pub async fn one(mut self) -> Result<Option<V>> {
        self.limit = Some(1);
        Ok(self.to_vec().await?.pop())
    }

    /// The results as a stream, batch by batch.
    pub async fn stream(self) -> Result<impl Stream<Item = Result<V>> + Send> {
        let cursor = self.cursor().await?;
        Ok(cursor
            .map_err(|e| Error::driver("find", T::COLLECTION, e))
            .map(|r| r.and_then(|raw| decode::<V>(T::COLLECTION, &raw))))
    }
}
