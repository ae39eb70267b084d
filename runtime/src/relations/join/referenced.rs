//! The load of the documents some parents refer to (`rels().x.of(..)`,
//! `rels().x.load(..)`): each referred id once in the `$in`, each document
//! decoded once into its slot, put back in each parent's order.

use super::request::{FieldVisit, IdMap, LoadQuery, Pending, Request, DEFAULT_CHUNK};
use super::run::join_in;
use crate::error::Result;
use crate::id::DocId;
use crate::relations::loaded::Loaded;
use crate::schema::document::{Document, View};
use crate::store::codec::decode;
use crate::store::options::read_setters;
use mongodb::bson::{Bson, RawDocument};
use mongodb::{ClientSession, Database};
use std::collections::hash_map::Entry;

/// The slot of an id whose document has not arrived (yet).
const EMPTY: u32 = u32::MAX;

/// The documents of a load, each once: the slot of each id is the index of
/// its document in `items` ([`EMPTY`] until it arrives). Both ways of
/// reading referred documents fill it: the `$in` of the wanted ids, and the
/// `$lookup` that brings them inside their parents.
pub(crate) struct Found<I, V> {
    slots: IdMap<I, u32>,
    items: Vec<V>,
}

impl<I, V> Default for Found<I, V> {
    fn default() -> Self {
        Found { slots: IdMap::default(), items: Vec::new() }
    }
}

impl<I: DocId, V: serde::de::DeserializeOwned> Found<I, V> {
    /// Wants the document of `id`; true the first time `id` is wanted.
    fn want(&mut self, id: &I) -> bool {
        if self.slots.contains_key(id) {
            return false;
        }
        self.slots.insert(id.clone(), EMPTY);
        true
    }

    /// Takes a document read from `collection`, decoded the first time its
    /// `_id` comes by: only a wanted one, unless `any` (every id is wanted).
    pub(crate) fn take(&mut self, collection: &str, raw: &RawDocument, any: bool) -> Result<()> {
        let Some(id) = raw.get("_id").ok().flatten().and_then(I::from_raw) else { return Ok(()) };
        let slot = match self.slots.entry(id) {
            Entry::Occupied(e) if *e.get() == EMPTY => e.into_mut(),
            Entry::Vacant(e) if any => e.insert(EMPTY),
            _ => return Ok(()),
        };
        *slot = self.items.len() as u32;
        self.items.push(decode::<V>(collection, raw)?);
        Ok(())
    }

    /// The index in `items` of the document of `id`, if it arrived.
    fn slot(&self, id: &I) -> Option<u32> {
        self.slots.get(id).copied().filter(|&s| s != EMPTY)
    }
}

/// The load of the documents some parents refer to (from `rels().x.of(..)`
/// or `rels().x.load(..)`): the parents are the documents themselves or any
/// view of them that carries the reference field.
#[must_use = "a load does nothing until awaited or run with join"]
pub struct Referenced<'p, T: Document, V> {
    parents: Box<dyn ParentIds<T::Id> + 'p>,
    query: LoadQuery,
    /// Each referred id, once, and the documents found, in the order the
    /// server returned them.
    found: Found<T::Id, V>,
    /// How many references the parents hold (counted while collecting ids).
    refs: usize,
}

/// The parents of a load, whatever their type: how many, and the ids each
/// refers to.
trait ParentIds<I>: Send + Sync {
    fn len(&self) -> usize;
    fn visit(&self, parent: usize, f: &mut dyn FnMut(&I));
}

struct Parents<'p, Q, F, I> {
    parents: &'p [Q],
    field: fn(&Q) -> &F,
    visit: FieldVisit<F, I>,
}

impl<Q: Sync, F, I> ParentIds<I> for Parents<'_, Q, F, I> {
    fn len(&self) -> usize {
        self.parents.len()
    }
    #[inline]
    fn visit(&self, parent: usize, f: &mut dyn FnMut(&I)) {
        (self.visit)((self.field)(&self.parents[parent]), f)
    }
}

/// Parents whose embedded array's elements each hold a reference
/// (`comments[].author`): the ids of every element, in the array's order.
struct ElementParents<'p, Q, F, E, I> {
    parents: &'p [Q],
    field: fn(&Q) -> &F,
    elements: fn(&F) -> &[E],
    visit: FieldVisit<E, I>,
}

impl<Q: Sync, F, E, I> ParentIds<I> for ElementParents<'_, Q, F, E, I> {
    fn len(&self) -> usize {
        self.parents.len()
    }
    #[inline]
    fn visit(&self, parent: usize, f: &mut dyn FnMut(&I)) {
        for element in (self.elements)((self.field)(&self.parents[parent])) {
            (self.visit)(element, f)
        }
    }
}

impl<'p, T: Document, V: View<Of = T>> Referenced<'p, T, V> {
    /// The load of the documents the elements of `parents`' embedded arrays refer to.
    pub(crate) fn in_elements<Q: Sync, F: 'p, E: 'p>(
        field: fn(&Q) -> &F,
        elements: fn(&F) -> &[E],
        visit: FieldVisit<E, T::Id>,
        parents: &'p [Q],
    ) -> Self {
        let parents = Box::new(ElementParents { parents, field, elements, visit });
        Referenced { parents, query: LoadQuery::default(), found: Found::default(), refs: 0 }
    }

    pub(crate) fn new<Q: Sync, F: 'p>(field: fn(&Q) -> &F, visit: FieldVisit<F, T::Id>, parents: &'p [Q]) -> Self {
        Referenced::found(field, visit, parents, Found::default())
    }

    /// The load of `parents` whose documents were already read (by a
    /// `$lookup`) into `found`.
    pub(crate) fn found<Q: Sync, F: 'p>(
        field: fn(&Q) -> &F,
        visit: FieldVisit<F, T::Id>,
        parents: &'p [Q],
        found: Found<T::Id, V>,
    ) -> Self {
        Referenced { parents: Box::new(Parents { parents, field, visit }), query: LoadQuery::default(), found, refs: 0 }
    }

    read_setters! {
        /// Only the referred documents that also match `filter` (Mongoose's
        /// `populate({match})`). An id whose document does not match is left
        /// out of its parent's list and reported by [`Loaded::missing`], like a
        /// dangling one. The query is then one of its own, not merged with
        /// other relations into the same collection.
        filter => query.read;
        /// Each parent's documents in this order instead of the order of its
        /// references (the server sorts; duplicates stay side by side).
        sort => query.read;
        /// At most `n` documents loaded in all (the server's `limit`; with a
        /// [`Self::sort`], the first `n` in that order). Parents whose documents
        /// fall past the limit find them missing.
        limit => query.read;
    }

    /// At most `n` documents per parent: the first `n` of its references
    /// that have a (matching) document, in the parent's order or in
    /// [`Self::sort`]'s. Every referred document still travels once (one
    /// `$in` for all parents); the limit is applied as they are put back.
    pub fn limit_per_parent(mut self, n: u64) -> Self {
        self.query.per_parent = Some(n);
        self
    }

    /// Skips the first `k` documents of each parent (counted like
    /// [`Self::limit_per_parent`]'s): with it, the page `k..k + n` of every
    /// parent (`$slice: [k, n]` of its references), from the same one `$in`.
    ///
    /// ```
    /// # docrel::testing::doc_test(|db| async move {
    /// use docrel::{Document, bson::oid::ObjectId};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "parts")]
    /// struct Part { #[serde(rename = "_id")] id: ObjectId, name: String }
    ///
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "products")]
    /// struct Product { #[serde(rename = "_id")] id: ObjectId, #[reference(many, to = Part, max = 100)] parts: Vec<ObjectId> }
    ///
    /// let parts: Vec<Part> = ["a", "b", "c", "d"].map(|n| Part { id: ObjectId::new(), name: n.into() }).into();
    /// Part::repo(&db).insert_many(&parts).await?;
    /// let products = vec![Product { id: ObjectId::new(), parts: parts.iter().map(|p| p.id).collect() }];
    ///
    /// let page = Product::rels().parts.load::<Part>(&db, &products).skip_per_parent(1).limit_per_parent(2).await?;
    /// assert_eq!(page.of(0).map(|p| p.name.as_str()).collect::<Vec<_>>(), ["b", "c"]);
    /// # Ok(()) });
    /// ```
    pub fn skip_per_parent(mut self, k: u64) -> Self {
        self.query.skip_per_parent = k;
        self
    }
}

impl<T: Document, V: View<Of = T>> Pending for Referenced<'_, T, V> {
    fn collection(&self) -> &'static str {
        T::COLLECTION
    }
    fn key_path(&self) -> &'static str {
        "_id"
    }
    fn ids(&mut self) -> Vec<Bson> {
        // Each reference visited once: one lookup, and an insert (with the
        // id's only clone) the first time an id is seen; the `$in` list is
        // built in the same pass.
        let (found, refs) = (&mut self.found, &mut self.refs);
        let mut ids = Vec::new();
        for p in 0..self.parents.len() {
            self.parents.visit(p, &mut |id: &T::Id| {
                *refs += 1;
                if found.want(id) {
                    ids.push(id.to_bson());
                }
            });
        }
        ids
    }
    fn projection(&self) -> Option<&'static [&'static str]> {
        V::PROJECTION
    }
    fn absorb(&mut self, raw: &RawDocument) -> Result<()> {
        self.found.take(T::COLLECTION, raw, false)
    }
    fn query(&self) -> Option<&LoadQuery> {
        Some(&self.query)
    }
}

impl<T: Document, V: View<Of = T>> Request for Referenced<'_, T, V> {
    type Output = Loaded<V, T::Id>;
    fn finish(self) -> Loaded<V, T::Id> {
        let n = self.parents.len();
        let found = self.found;
        let mut out = Loaded {
            offsets: Vec::with_capacity(n + 1),
            slots: Vec::with_capacity(self.refs.max(found.slots.len())),
            missing_offsets: Vec::with_capacity(n + 1),
            missing: Vec::new(),
            items: Vec::new(),
        };
        out.offsets.push(0);
        out.missing_offsets.push(0);
        let sorted = self.query.read.sort.is_some();
        let as_usize = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        let (skip, limit) = (as_usize(self.query.skip_per_parent), self.query.per_parent.map(as_usize));
        for p in 0..n {
            let start = out.slots.len();
            self.parents.visit(p, &mut |id: &T::Id| match found.slot(id) {
                Some(item) => out.slots.push(item),
                None => out.missing.push(id.clone()),
            });
            if sorted {
                // Items are in the server's order: sort this parent's by it.
                out.slots[start..].sort_unstable();
            }
            // The page of this parent: `$slice: [skip, limit]` of its slots.
            out.slots.drain(start..start.saturating_add(skip).min(out.slots.len()));
            if let Some(n) = limit {
                out.slots.truncate(start + n.min(out.slots.len() - start));
            }
            out.offsets.push(out.slots.len());
            out.missing_offsets.push(out.missing.len());
        }
        out.items = found.items;
        out
    }
}

/// A relation load bound to a database: await it (or call [`Load::run`]).
/// Built by `rels().x.load(&db, &parents)` and `load_where`; set a
/// [`filter`](Load::filter), [`sort`](Load::sort), [`limit`](Load::limit)
/// or [`limit_per_parent`](Load::limit_per_parent) first if needed.
#[must_use = "a load does nothing until awaited"]
pub struct Load<'a, 'p, T: Document, V> {
    db: &'a Database,
    request: Referenced<'p, T, V>,
    chunk: usize,
    session: Option<&'a mut ClientSession>,
}

impl<'a, 'p, T: Document, V: View<Of = T>> Load<'a, 'p, T, V> {
    pub(crate) fn new(db: &'a Database, request: Referenced<'p, T, V>) -> Self {
        Load { db, request, chunk: DEFAULT_CHUNK, session: None }
    }
    read_setters! {
        /// See [`Referenced::filter`].
        filter => request.query.read;
        /// See [`Referenced::sort`].
        sort => request.query.read;
        /// See [`Referenced::limit`].
        limit => request.query.read;
        /// Splits the `$in` list into chunks of at most `n` ids (one round trip each).
        chunk => chunk;
        /// Reads in `session`, like the driver's `.session(..)`: inside the
        /// caller's transaction the load sees the transaction's writes.
        session<'a> => session;
    }
    /// See [`Referenced::limit_per_parent`].
    pub fn limit_per_parent(mut self, n: u64) -> Self {
        self.request = self.request.limit_per_parent(n);
        self
    }
    /// See [`Referenced::skip_per_parent`].
    pub fn skip_per_parent(mut self, k: u64) -> Self {
        self.request = self.request.skip_per_parent(k);
        self
    }
    /// Runs the load (what `.await` does).
    pub async fn run(self) -> Result<Loaded<V, T::Id>> {
        join_in(self.db, self.request, self.chunk, self.session).await
    }
}

impl<'a, 'p, T: Document, V: View<Of = T>> std::future::IntoFuture for Load<'a, 'p, T, V>
where
    'p: 'a,
{
    type Output = Result<Loaded<V, T::Id>>;
    type IntoFuture = futures::future::BoxFuture<'a, Self::Output>;
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run())
    }
}
