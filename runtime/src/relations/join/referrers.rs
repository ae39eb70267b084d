//! The reverse load of a reference for many targets at once: the documents
//! whose reference field holds any of the ids, grouped by id.

use super::counts::Held;
use super::related::Related;
use super::request::{IdMap, DEFAULT_CHUNK};
use crate::error::Result;
use crate::id::DocId;
use crate::relations::loaded::Loaded;
use crate::schema::document::{Document, Relation, RelationKind, View};
use crate::store::codec::decode_view;
use crate::store::options::{count, read_setters};
use crate::store::page::pages;
use crate::store::query::Filter;
use mongodb::bson::{self, doc};
use mongodb::Database;
use std::marker::PhantomData;

/// The documents whose reference field holds any of many ids, grouped by id:
/// the reverse load of a reference for many targets at once (all books of
/// each of 50 categories in a one-way N:M). One `find({field: {$in: ids}})`
/// on the field's (multikey) index per chunk of ids ([`DEFAULT_CHUNK`] by
/// default); a document that refers to several of the ids of a chunk is
/// read once and listed under each. From
/// [`crate::relations::handles::RefMany::referrers_of_many`].
#[must_use = "Referrers does nothing until awaited or run"]
pub struct Referrers<'a, P, T: Document, R = P> {
    base: Related<'a, T::Id>,
    per_target: Option<u64>,
    skip_per_target: u64,
    chunk: usize,
    _types: PhantomData<fn() -> (P, R)>,
}

impl<'a, P: Document, T: Document> Referrers<'a, P, T> {
    pub(crate) fn new(db: &'a Database, rel: &'static Relation, targets: Vec<T::Id>) -> Self {
        let base = Related::new(db, rel, targets, None);
        Referrers { base, per_target: None, skip_per_target: 0, chunk: DEFAULT_CHUNK, _types: PhantomData }
    }
}

impl<'a, P: Document, T: Document, R: View<Of = P>> Referrers<'a, P, T, R> {
    /// Reads the referrers as the view `W`: only its fields (and the
    /// reference field, to group them) travel.
    pub fn view<W: View<Of = P>>(self) -> Referrers<'a, P, T, W> {
        let Referrers { base, per_target, skip_per_target, chunk, .. } = self;
        Referrers { base, per_target, skip_per_target, chunk, _types: PhantomData }
    }
    read_setters! {
        /// Reads in `session`, like the driver's `.session(..)`: inside the
        /// caller's transaction it sees the transaction's writes.
        session<'a> => base.session;
        /// Only the referrers matching `filter` too.
        filter => base.read;
        /// Each target's referrers in this order (the server sorts).
        sort => base.read;
        /// Splits the `$in` list into chunks of at most `n` targets (one
        /// round trip each; [`DEFAULT_CHUNK`] unless set).
        chunk => chunk;
    }
    /// At most `n` referrers listed per target (all matching ones travel).
    pub fn limit_per_target(mut self, n: u64) -> Self {
        self.per_target = Some(n);
        self
    }

    /// Skips the first `k` referrers of each target (in [`Self::sort`]'s
    /// order): with [`Self::limit_per_target`], the page `k..k + n` of
    /// every target (`$slice: [k, n]`), in the same one query.
    pub fn skip_per_target(mut self, k: u64) -> Self {
        self.skip_per_target = k;
        self
    }

    /// How many documents refer to each target (matching
    /// [`Self::filter`], if set), without reading them: every target
    /// asked is a key, 0 when none refers to it; a document that lists a
    /// target twice counts once. One `aggregate` (`$match` on the field's
    /// index, `$group` by target) per chunk of targets, for any number of
    /// targets; the order and the per-target page do not apply.
    ///
    /// ```
    /// # docrel::testing::doc_test(|db| async move {
    /// use docrel::{Document, bson::oid::ObjectId};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "categories")]
    /// struct Category { #[serde(rename = "_id")] id: ObjectId }
    ///
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "books")]
    /// struct Book { #[serde(rename = "_id")] id: ObjectId, #[reference(many, to = Category, max = 10)] categories: Vec<ObjectId> }
    ///
    /// let (novels, poems) = (ObjectId::new(), ObjectId::new());
    /// let book = |categories: Vec<ObjectId>| Book { id: ObjectId::new(), categories };
    /// Book::repo(&db).insert_many(&[book(vec![novels]), book(vec![novels, poems]), book(vec![])]).await?;
    ///
    /// let trips = docrel::testing::round_trips(&db);
    /// let mark = trips.mark();
    /// let counts = Book::rels().categories.referrers_of_many(&db, &[novels, poems, ObjectId::new()]).count().await?;
    /// assert_eq!(trips.since(mark), 1);
    /// assert_eq!((counts[&novels], counts[&poems], counts.len()), (2, 1, 3));
    /// # Ok(()) });
    /// ```
    pub async fn count(self) -> Result<std::collections::HashMap<T::Id, u64>> {
        let count = self.base.count(P::COLLECTION, Held::Ids, self.chunk);
        crate::client::trace::Op::new("referrers_count", P::COLLECTION).run(count).await
    }

    /// Runs the query (what `.await` does).
    pub async fn run(self) -> Result<Loaded<R, T::Id>> {
        crate::client::trace::Op::new("referrers_of_many", P::COLLECTION).run(self.find()).await
    }

    async fn find(mut self) -> Result<Loaded<R, T::Id>> {
        let per_target = match self.per_target {
            Some(n) => Some(usize::try_from(count("limit_per_target", n)?).unwrap_or(usize::MAX)),
            None => None,
        };
        // Each target, with the chunk it is read in and its referrers.
        let n = self.base.ids.len();
        let mut wanted: IdMap<T::Id, (usize, Vec<u32>)> = IdMap::with_capacity_and_hasher(n, Default::default());
        let mut ids = Vec::with_capacity(n);
        let size = self.chunk.max(1);
        for t in &self.base.ids {
            if !wanted.contains_key(t) {
                wanted.insert(t.clone(), (ids.len() / size, Vec::new()));
                ids.push(t.to_bson());
            }
        }
        if ids.is_empty() {
            return Ok(Loaded::grouped(Vec::new(), &self.base.ids, |_| &[]));
        }
        let rel = self.base.rel;
        let key = match rel.kind {
            RelationKind::RefMany { key, .. } => key,
            _ => None,
        };
        let mut items = Vec::new();
        let mut buf = Vec::new();
        // A target's referrers all come from its chunk, in the order asked;
        // a document read in several chunks is listed under each target once.
        for (chunk, page) in pages(&ids, size).enumerate() {
            let base = Filter::new(doc! { rel.id_path(): {"$in": page} });
            self.base
                .find::<R, ()>(P::COLLECTION, base, |raw| {
                    let item = items.len() as u32;
                    let mut listed = false;
                    if let Some(value) = raw.get(rel.field).ok().flatten() {
                        each_raw_id::<T::Id>(value, key, &mut |id| {
                            if let Some((_, group)) = wanted.get_mut(&id).filter(|(c, _)| *c == chunk) {
                                if group.last() != Some(&item) {
                                    group.push(item);
                                    listed = true;
                                }
                            }
                        });
                    }
                    if listed {
                        items.push(decode_view::<R>(P::COLLECTION, raw, R::PROJECTION, None, &mut buf)?);
                    }
                    Ok(())
                })
                .await?;
        }
        let skip = usize::try_from(count("skip_per_target", self.skip_per_target)?).unwrap_or(usize::MAX);
        if skip > 0 || per_target.is_some() {
            wanted.values_mut().for_each(|(_, g)| page(g, skip, per_target));
        }
        Ok(Loaded::grouped(items, &self.base.ids, |t| wanted.get(t).map(|(_, g)| g.as_slice()).unwrap_or(&[])))
    }
}

impl<'a, P: Document, T: Document, R: View<Of = P>> std::future::IntoFuture for Referrers<'a, P, T, R> {
    type Output = Result<Loaded<R, T::Id>>;
    type IntoFuture = futures::future::BoxFuture<'a, Self::Output>;
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run())
    }
}

/// Keeps the page `skip..skip + limit` of `group` (`$slice: [skip, limit]`).
fn page<T>(group: &mut Vec<T>, skip: usize, limit: Option<usize>) {
    group.drain(..skip.min(group.len()));
    if let Some(n) = limit {
        group.truncate(n);
    }
}

/// Calls `f` with each id a stored reference field holds: an id, or an
/// array of ids or of `{key: id, ..}` elements.
fn each_raw_id<I: DocId>(value: bson::RawBsonRef<'_>, key: Option<&str>, f: &mut dyn FnMut(I)) {
    let one = |v: bson::RawBsonRef<'_>, f: &mut dyn FnMut(I)| {
        let v = match (key, v) {
            (Some(k), bson::RawBsonRef::Document(d)) => d.get(k).ok().flatten(),
            (_, v) => Some(v),
        };
        if let Some(id) = v.and_then(I::from_raw) {
            f(id)
        }
    };
    match value {
        bson::RawBsonRef::Array(arr) => {
            // This runs for every id of every referrer read: an array of
            // ObjectIds is walked on its bytes, bson's iterator (which checks
            // each index key as UTF-8 and builds an element) only past them.
            let read = match key {
                None => leading_object_ids(arr.as_bytes(), &mut |id| one(bson::RawBsonRef::ObjectId(id), f)),
                Some(_) => Walked::Partly(0),
            };
            if let Walked::Partly(n) = read {
                arr.into_iter().skip(n).filter_map(|e| e.ok()).for_each(|e| one(e, f));
            }
        }
        v => one(v, f),
    }
}

/// How far [`leading_object_ids`] read an array.
#[derive(Debug, PartialEq)]
enum Walked {
    /// To its end: every element was an ObjectId.
    All,
    /// Its first `n` elements, then one of another type (or bytes it does
    /// not read).
    Partly(usize),
}

/// Calls `f` with the ObjectIds that open the BSON array `bytes` (its
/// length, then elements of a type byte, a decimal index and a value, then
/// a 0), stopping at the first element that is not an ObjectId under a
/// decimal index.
fn leading_object_ids(bytes: &[u8], f: &mut dyn FnMut(bson::oid::ObjectId)) -> Walked {
    const OBJECT_ID: u8 = 0x07;
    let (mut at, mut n) = (4, 0);
    loop {
        match bytes.get(at) {
            Some(0) if at + 1 == bytes.len() => return Walked::All,
            Some(&OBJECT_ID) => {}
            _ => return Walked::Partly(n),
        }
        let index = bytes.get(at + 1..).unwrap_or_default();
        let Some(len) = index.iter().position(|&b| b == 0) else { return Walked::Partly(n) };
        if len == 0 || !index[..len].iter().all(u8::is_ascii_digit) {
            return Walked::Partly(n);
        }
        let value = at + 1 + len + 1;
        let Some(Ok(id)) = bytes.get(value..value + 12).map(<[u8; 12]>::try_from) else { return Walked::Partly(n) };
        f(bson::oid::ObjectId::from_bytes(id));
        (at, n) = (value + 12, n + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::{oid::ObjectId, rawdoc, Bson, RawArrayBuf};

    fn ids(arr: &RawArrayBuf) -> Vec<Bson> {
        let mut out = Vec::new();
        each_raw_id::<ObjectId>(bson::RawBsonRef::Array(arr), None, &mut |id| out.push(Bson::ObjectId(id)));
        out
    }

    #[test]
    fn an_array_of_object_ids_is_read_whole_on_its_bytes() {
        let (a, b) = (ObjectId::new(), ObjectId::new());
        let arr: RawArrayBuf = [a, b, a].into_iter().map(bson::RawBson::ObjectId).collect();
        let mut seen = Vec::new();
        assert_eq!(leading_object_ids(arr.as_bytes(), &mut |id| seen.push(id)), Walked::All);
        assert_eq!(seen, [a, b, a]);
        assert_eq!(ids(&arr), [Bson::ObjectId(a), Bson::ObjectId(b), Bson::ObjectId(a)]);
        let empty = RawArrayBuf::new();
        assert_eq!(leading_object_ids(empty.as_bytes(), &mut |_| panic!("no id")), Walked::All);
    }

    #[test]
    fn past_another_type_the_array_is_read_by_bson() {
        let (a, b) = (ObjectId::new(), ObjectId::new());
        let arr: RawArrayBuf =
            [bson::RawBson::ObjectId(a), bson::RawBson::Int32(7), bson::RawBson::ObjectId(b)].into_iter().collect();
        assert_eq!(leading_object_ids(arr.as_bytes(), &mut |_| {}), Walked::Partly(1));
        assert_eq!(ids(&arr), [Bson::ObjectId(a), Bson::ObjectId(b)]);
        let doc = rawdoc! {"k": a};
        let mut seen = Vec::new();
        each_raw_id::<ObjectId>(bson::RawBsonRef::Document(&doc), Some("k"), &mut |id| seen.push(id));
        assert_eq!(seen, [a]);
    }
}
