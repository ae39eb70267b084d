//! Application-level joins: the related documents of many parents with one
//! `$in` query per target collection, projected on the views' fields, and
//! put back in each parent's order.

use crate::bson_compat;
use crate::error::{Error, Result};
use crate::id::DocId;
use crate::relations::loaded::Loaded;
use crate::schema::document::{Document, Relation, View};
use crate::store::codec::decode;
use crate::store::query::{Filter, Sort};
use crate::store::session::{collect, collect_aggregate};
use mongodb::bson::{self, doc, Bson, RawDocument, RawDocumentBuf};
use mongodb::{ClientSession, Database};
use std::marker::PhantomData;

/// The generated function that yields the ids held in a reference field
/// (an id, an `Option` of one, an array of ids or of `{id, ..}` elements), in order.
pub(crate) type FieldVisit<F, I> = fn(&F, &mut dyn FnMut(&I));

/// The maps of the loaders, keyed by ids that come from the database (the
/// parents' reference fields and the loaded documents' `_id`s), never from a
/// party that could choose keys to collide: a fast non-cryptographic hasher
/// (foldhash, seeded per map) instead of SipHash.
pub(crate) type IdMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// How many ids one `$in` query carries at most; longer lists are split
/// into chunks of this size (each one more round trip).
pub const DEFAULT_CHUNK: usize = 20_000;

/// Asks the server for everything in one batch (it still caps a batch at
/// 16 MiB): a load costs one round trip, not one per 101 documents.
pub(crate) const ONE_BATCH: u32 = i32::MAX as u32;

/// What a load asks of the loaded documents besides their ids: a filter,
/// an order, a total limit, a limit per parent (`load_where`, Mongoose's
/// `match`, `options` and `perDocumentLimit`).
#[derive(Debug, Clone, Default)]
#[doc(hidden)]
pub struct LoadQuery {
    pub(crate) filter: Option<Filter>,
    pub(crate) sort: Option<Sort>,
    pub(crate) limit: Option<i64>,
    pub(crate) per_parent: Option<usize>,
}

impl LoadQuery {
    /// Whether the server query is the plain `$in` (so it can be merged
    /// with other relations into the same collection).
    fn is_plain(&self) -> bool {
        self.filter.is_none() && self.sort.is_none() && self.limit.is_none()
    }
}

/// One relation load waiting to run, as the executor sees it.
#[doc(hidden)]
pub trait Pending: Send {
    /// The collection queried.
    fn collection(&self) -> &'static str;
    /// The field matched with `$in` (`_id`, or the parent field).
    fn key_path(&self) -> &'static str;
    /// The distinct ids to match.
    fn ids(&mut self) -> Vec<Bson>;
    /// The fields to project, `None` for whole documents.
    fn projection(&self) -> Option<&'static [&'static str]>;
    /// Takes one returned document (which may belong to another request of
    /// the same collection).
    fn absorb(&mut self, raw: &RawDocument) -> Result<()>;
    /// The filter, order and limit on the loaded documents, if any.
    fn query(&self) -> Option<&LoadQuery> {
        None
    }
}

/// A relation load that yields a result once run.
pub trait Request: Pending {
    /// What the load yields.
    type Output;
    #[doc(hidden)]
    fn finish(self) -> Self::Output;
}

/// One request, or a tuple of up to four, to run together with [`join`].
pub trait JoinSet {
    /// What the join yields: the outputs of the requests, in order.
    type Output;
    #[doc(hidden)]
    fn pendings(&mut self) -> Vec<&mut dyn Pending>;
    #[doc(hidden)]
    fn finish(self) -> Self::Output;
}

impl<R: Request> JoinSet for R {
    type Output = R::Output;
    fn pendings(&mut self) -> Vec<&mut dyn Pending> {
        vec![self]
    }
    fn finish(self) -> Self::Output {
        Request::finish(self)
    }
}

macro_rules! tuple_join {
    ($($name:ident . $i:tt),+) => {
        impl<$($name: Request),+> JoinSet for ($($name,)+) {
            type Output = ($($name::Output,)+);
            fn pendings(&mut self) -> Vec<&mut dyn Pending> {
                vec![$(&mut self.$i),+]
            }
            fn finish(self) -> Self::Output {
                ($(self.$i.finish(),)+)
            }
        }
    };
}
tuple_join!(A.0, B.1);
tuple_join!(A.0, B.1, C.2);
tuple_join!(A.0, B.1, C.2, D.3);

/// Runs several relation loads together: ONE `find` per target collection
/// (relations into the same collection are merged into one `$in` with the
/// union of their projections), so K relations over N parents cost at most
/// 1 + K round trips counting the parents' own query, whatever N is.
///
/// ```
/// # docrel::testing::doc_test(|db| async move {
/// use docrel::{Document, bson::oid::ObjectId};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "people")]
/// struct Person { #[serde(rename = "_id")] id: ObjectId, name: String }
///
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "tasks")]
/// struct Task {
///     #[serde(rename = "_id")] id: ObjectId,
///     description: String,
///     #[reference(to = Person)] owner: ObjectId,
///     #[reference(to = Person)] reviewer: Option<ObjectId>,
/// }
///
/// let kate = Person { id: ObjectId::new(), name: "Kate Monster".into() };
/// Person::repo(&db).insert(&kate).await?;
/// let tasks = vec![Task { id: ObjectId::new(), description: "Write lesson plan".into(), owner: kate.id, reviewer: None }];
///
/// let trips = docrel::testing::round_trips(&db);
/// let mark = trips.mark();
/// let (owners, reviewers) = docrel::join(&db, (
///     Task::rels().owner.of::<Person>(&tasks),
///     Task::rels().reviewer.of::<Person>(&tasks),
/// )).await?;
/// assert_eq!(trips.since(mark), 1); // both relations into `people`: one query
/// assert_eq!(owners.one(0).map(|p| p.name.as_str()), Some("Kate Monster"));
/// assert!(reviewers.one(0).is_none());
/// # Ok(()) });
/// ```
pub fn join<J: JoinSet>(db: &Database, set: J) -> Join<'_, J> {
    Join { db, set, chunk: DEFAULT_CHUNK, session: None }
}

/// Relation loads run together; from [`join`]. Await it.
#[must_use = "a Join does nothing until awaited"]
pub struct Join<'a, J> {
    db: &'a Database,
    set: J,
    chunk: usize,
    session: Option<&'a mut ClientSession>,
}

impl<J> std::fmt::Debug for Join<'_, J> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Join").field("database", &self.db.name()).field("chunk", &self.chunk).finish()
    }
}

impl<'a, J: JoinSet> Join<'a, J> {
    /// Splits `$in` lists into chunks of at most `chunk` ids (by default
    /// [`DEFAULT_CHUNK`]).
    pub fn chunk(mut self, chunk: usize) -> Self {
        self.chunk = chunk;
        self
    }

    /// Reads in `session`, like the driver's `.session(..)`: inside the
    /// caller's transaction it sees the transaction's own writes.
    pub fn session(mut self, session: &'a mut ClientSession) -> Self {
        self.session = Some(session);
        self
    }

    /// Runs the loads (what `.await` does).
    pub async fn run(self) -> Result<J::Output> {
        join_in(self.db, self.set, self.chunk, self.session).await
    }
}

impl<'a, J: JoinSet + Send + 'a> std::future::IntoFuture for Join<'a, J>
where
    J::Output: Send,
{
    type Output = Result<J::Output>;
    type IntoFuture = futures::future::BoxFuture<'a, Self::Output>;
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run())
    }
}

/// [`join`] with `$in` lists split into chunks of at most `chunk` ids
/// (`join(db, set).chunk(chunk)`).
pub async fn join_chunked<J: JoinSet>(db: &Database, set: J, chunk: usize) -> Result<J::Output> {
    join_in(db, set, chunk, None).await
}

/// [`join_chunked`] read in the caller's session, when given.
pub(crate) async fn join_in<J: JoinSet>(
    db: &Database,
    mut set: J,
    chunk: usize,
    session: Option<&mut ClientSession>,
) -> Result<J::Output> {
    // The span names the collections loaded from ("parts,suppliers").
    let mut targets: Vec<&str> = Vec::new();
    for p in set.pendings() {
        if !targets.contains(&p.collection()) {
            targets.push(p.collection());
        }
    }
    let op = crate::client::trace::Op::new("load", &targets.join(","));
    op.run(async move {
        run(db, set.pendings(), chunk.max(1), session).await?;
        Ok(set.finish())
    })
    .await
}

async fn run(
    db: &Database,
    mut pendings: Vec<&mut dyn Pending>,
    chunk: usize,
    mut session: Option<&mut ClientSession>,
) -> Result<()> {
    // Group the plain requests by (collection, key): one query per group. A
    // request with its own filter, order or limit is a query of its own.
    let mut groups: Vec<(&'static str, &'static str, Vec<usize>)> = Vec::new();
    for (i, p) in pendings.iter().enumerate() {
        let (c, k) = (p.collection(), p.key_path());
        let plain = p.query().is_none_or(LoadQuery::is_plain);
        match groups
            .iter_mut()
            .find(|(gc, gk, m)| plain && *gc == c && *gk == k && pendings[m[0]].query().is_none_or(LoadQuery::is_plain))
        {
            Some(g) => g.2.push(i),
            None => groups.push((c, k, vec![i])),
        }
    }
    for (collection, key, members) in groups {
        let ids = union_ids(members.iter().map(|&i| pendings[i].ids()).collect());
        if ids.is_empty() {
            continue;
        }
        let projection = union_projection(members.iter().map(|&i| pendings[i].projection()), key);
        let query = pendings[members[0]].query().cloned().unwrap_or_default();
        let extra = query.filter.map(Filter::into_document).transpose()?;
        let coll = db.collection::<RawDocumentBuf>(collection);
        let mut remaining = query.limit;
        // The id list moves into the command; split (and copied) only when
        // it is longer than a chunk.
        let parts: Vec<Vec<Bson>> =
            if ids.len() <= chunk { vec![ids] } else { ids.chunks(chunk).map(<[Bson]>::to_vec).collect() };
        for part in parts {
            if remaining.is_some_and(|r| r <= 0) {
                break;
            }
            let mut filter = doc! { key: {"$in": part} };
            if let Some(extra) = &extra {
                filter = doc! {"$and": [filter, extra.clone()]};
            }
            let mut find = coll.find(filter).batch_size(ONE_BATCH);
            if let Some(p) = &projection {
                find = find.projection(p.clone());
            }
            if let Some(s) = &query.sort {
                find = find.sort(s.as_document().clone());
            }
            if let Some(r) = remaining {
                find = find.limit(r);
            }
            collect(find, session.as_deref_mut(), collection, |raw| {
                if let Some(r) = &mut remaining {
                    *r -= 1;
                }
                for &i in &members {
                    pendings[i].absorb(raw)?;
                }
                Ok(())
            })
            .await?;
        }
    }
    Ok(())
}

fn union_ids(mut lists: Vec<Vec<Bson>>) -> Vec<Bson> {
    if lists.len() == 1 {
        return lists.pop().unwrap_or_default();
    }
    // Merged relations: deduplicate across them by the ids' BSON bytes.
    let mut seen = std::collections::HashSet::<_, foldhash::fast::RandomState>::default();
    let mut out = Vec::new();
    for id in lists.into_iter().flatten() {
        let bytes = bson_compat::to_vec(&doc! {"": &id}).unwrap_or_default();
        if seen.insert(bytes) {
            out.push(id);
        }
    }
    out
}

fn union_projection<'a>(projections: impl Iterator<Item = Option<&'a [&'a str]>>, key: &str) -> Option<bson::Document> {
    let mut out = bson::Document::new();
    for p in projections {
        for f in p? {
            out.insert(*f, 1);
        }
    }
    out.insert(key, 1);
    Some(out)
}

/// The load of the documents some parents refer to (from `rels().x.of(..)`
/// or `rels().x.load(..)`): the parents are the documents themselves or any
/// view of them that carries the reference field.
#[must_use = "a load does nothing until awaited or run with join"]
pub struct Referenced<'p, T: Document, V> {
    parents: Box<dyn ParentIds<T::Id> + 'p>,
    query: LoadQuery,
    /// Each referred id, once, with the index of its document in `items`
    /// (`u32::MAX` until the document arrives).
    slots: IdMap<T::Id, u32>,
    /// The documents found, in the order the server returned them.
    items: Vec<V>,
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

impl<'p, T: Document, V: View<Of = T>> Referenced<'p, T, V> {
    pub(crate) fn new<Q: Sync, F: 'p>(field: fn(&Q) -> &F, visit: FieldVisit<F, T::Id>, parents: &'p [Q]) -> Self {
        Referenced {
            parents: Box::new(Parents { parents, field, visit }),
            query: LoadQuery::default(),
            slots: IdMap::default(),
            items: Vec::new(),
            refs: 0,
        }
    }

    /// The load of `parents` whose documents were already read (by a
    /// `$lookup`): `slots` maps each id found to its index in `items`.
    pub(crate) fn found<Q: Sync, F: 'p>(
        field: fn(&Q) -> &F,
        visit: FieldVisit<F, T::Id>,
        parents: &'p [Q],
        slots: IdMap<T::Id, u32>,
        items: Vec<V>,
    ) -> Self {
        Referenced {
            parents: Box::new(Parents { parents, field, visit }),
            query: LoadQuery::default(),
            slots,
            items,
            refs: 0,
        }
    }

    /// Only the referred documents that also match `filter` (Mongoose's
    /// `populate({match})`). An id whose document does not match is left
    /// out of its parent's list and reported by [`Loaded::missing`], like a
    /// dangling one. The query is then one of its own, not merged with
    /// other relations into the same collection.
    pub fn filter(mut self, filter: impl Into<Filter>) -> Self {
        let filter = filter.into();
        self.query.filter = Some(match self.query.filter.take() {
            Some(f) => f.and(filter),
            None => filter,
        });
        self
    }

    /// Each parent's documents in this order instead of the order of its
    /// references (the server sorts; duplicates stay side by side).
    pub fn sort(mut self, sort: Sort) -> Self {
        self.query.sort = Some(sort);
        self
    }

    /// At most `n` documents loaded in all (the server's `limit`; with a
    /// [`Self::sort`], the first `n` in that order). Parents whose documents
    /// fall past the limit find them missing.
    pub fn limit(mut self, n: i64) -> Self {
        self.query.limit = Some(n);
        self
    }

    /// At most `n` documents per parent: the first `n` of its references
    /// that have a (matching) document, in the parent's order or in
    /// [`Self::sort`]'s. Every referred document still travels once (one
    /// `$in` for all parents); the limit is applied as they are put back.
    pub fn limit_per_parent(mut self, n: usize) -> Self {
        self.query.per_parent = Some(n);
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
        let (slots, refs) = (&mut self.slots, &mut self.refs);
        let mut ids = Vec::new();
        for p in 0..self.parents.len() {
            self.parents.visit(p, &mut |id: &T::Id| {
                *refs += 1;
                if !slots.contains_key(id) {
                    slots.insert(id.clone(), u32::MAX);
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
        let Some(id) = raw.get("_id").ok().flatten().and_then(T::Id::from_raw) else { return Ok(()) };
        if let Some(slot) = self.slots.get_mut(&id) {
            if *slot == u32::MAX {
                *slot = self.items.len() as u32;
                self.items.push(decode::<V>(T::COLLECTION, raw)?);
            }
        }
        Ok(())
    }
    fn query(&self) -> Option<&LoadQuery> {
        Some(&self.query)
    }
}

impl<T: Document, V: View<Of = T>> Request for Referenced<'_, T, V> {
    type Output = Loaded<V, T::Id>;
    fn finish(self) -> Loaded<V, T::Id> {
        let n = self.parents.len();
        let mut out = Loaded {
            items: self.items,
            offsets: Vec::with_capacity(n + 1),
            slots: Vec::with_capacity(self.refs.max(self.slots.len())),
            missing_offsets: Vec::with_capacity(n + 1),
            missing: Vec::new(),
        };
        out.offsets.push(0);
        out.missing_offsets.push(0);
        let (slots, sorted, per_parent) = (&self.slots, self.query.sort.is_some(), self.query.per_parent);
        for p in 0..n {
            let start = out.slots.len();
            self.parents.visit(p, &mut |id: &T::Id| match slots.get(id) {
                Some(&item) if item != u32::MAX => out.slots.push(item),
                _ => out.missing.push(id.clone()),
            });
            if sorted {
                // Items are in the server's order: sort this parent's by it.
                out.slots[start..].sort_unstable();
            }
            if let Some(k) = per_parent {
                out.slots.truncate(start + k.min(out.slots.len() - start));
            }
            out.offsets.push(out.slots.len());
            out.missing_offsets.push(out.missing.len());
        }
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
    /// See [`Referenced::filter`].
    pub fn filter(mut self, filter: impl Into<Filter>) -> Self {
        self.request = self.request.filter(filter);
        self
    }
    /// See [`Referenced::sort`].
    pub fn sort(mut self, sort: Sort) -> Self {
        self.request = self.request.sort(sort);
        self
    }
    /// See [`Referenced::limit`].
    pub fn limit(mut self, n: i64) -> Self {
        self.request = self.request.limit(n);
        self
    }
    /// See [`Referenced::limit_per_parent`].
    pub fn limit_per_parent(mut self, n: usize) -> Self {
        self.request = self.request.limit_per_parent(n);
        self
    }
    /// Splits the `$in` list into chunks of at most `n` ids (one round trip each).
    pub fn chunk(mut self, n: usize) -> Self {
        self.chunk = n;
        self
    }
    /// Reads in `session`, like the driver's `.session(..)`: inside the
    /// caller's transaction the load sees the transaction's writes.
    pub fn session(mut self, session: &'a mut ClientSession) -> Self {
        self.session = Some(session);
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

/// The children of one or many parents through a parent reference; from
/// [`crate::relations::handles::ParentRef::children_of`].
///
/// Await it for the children as `R` (whole documents unless
/// [`Children::view`] names a view), in the requested order; or run it
/// with [`Children::to_vec`] / [`Children::load`] (grouped by parent).
#[must_use = "Children does nothing until awaited or run with to_vec or load"]
pub struct Children<'a, C, P: Document, R = C> {
    db: &'a Database,
    rel: &'static Relation,
    parents: Vec<P::Id>,
    filter: Filter,
    sort: Option<Sort>,
    limit: Option<i64>,
    session: Option<&'a mut ClientSession>,
    _child: PhantomData<fn() -> (C, R)>,
}

impl<'a, C: Document, P: Document> Children<'a, C, P> {
    pub(crate) fn new(db: &'a Database, rel: &'static Relation, parents: Vec<P::Id>) -> Self {
        let sort = Sort::declared(rel.order);
        Children { db, rel, parents, filter: Filter::all(), sort, limit: None, session: None, _child: PhantomData }
    }
}

impl<'a, C: Document, P: Document, R: View<Of = C>> std::future::IntoFuture for Children<'a, C, P, R> {
    type Output = Result<Vec<R>>;
    type IntoFuture = futures::future::BoxFuture<'a, Self::Output>;
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.to_vec::<R>())
    }
}

impl<'a, C: Document, P: Document, R: View<Of = C>> Children<'a, C, P, R> {
    /// Reads the children as the view `W` when awaited: only its fields travel.
    pub fn view<W: View<Of = C>>(self) -> Children<'a, C, P, W> {
        let Children { db, rel, parents, filter, sort, limit, session, .. } = self;
        Children { db, rel, parents, filter, sort, limit, session, _child: PhantomData }
    }
    /// Reads in `session`, like the driver's `.session(..)`: inside the
    /// caller's transaction it sees the transaction's writes.
    pub fn session(mut self, session: &'a mut ClientSession) -> Self {
        self.session = Some(session);
        self
    }
    /// Only the children matching `filter` too.
    pub fn filter(mut self, filter: impl Into<Filter>) -> Self {
        self.filter = self.filter.and(filter.into());
        self
    }
    /// Orders them (replacing the declared order).
    pub fn sort(mut self, sort: Sort) -> Self {
        self.sort = Some(sort);
        self
    }
    /// At most `n` children in all (for a limit per parent, see
    /// [`crate::relations::handles::ParentRef::latest_per_parent`]).
    pub fn limit(mut self, n: i64) -> Self {
        self.limit = Some(n);
        self
    }

    fn parents_filter(&self) -> Filter {
        let ids: Vec<Bson> = self.parents.iter().map(DocId::to_bson).collect();
        let key = self.rel.field;
        match ids.as_slice() {
            [one] => Filter::new(doc! { key: one.clone() }),
            _ => Filter::new(doc! { key: {"$in": ids} }),
        }
    }

    /// Runs the find (in the session, if any) and reads each child through `each`.
    async fn read<V: View<Of = C>, U>(&mut self, each: impl FnMut(&RawDocument) -> Result<U>) -> Result<Vec<U>> {
        crate::client::trace::Op::new("children_of", C::COLLECTION)
            .run_counted(
                async move {
                    let filter = self.parents_filter().and(self.filter.clone()).into_document()?;
                    let coll = self.db.collection::<RawDocumentBuf>(C::COLLECTION);
                    let mut find = coll.find(filter).batch_size(ONE_BATCH);
                    if let Some(p) = union_projection(std::iter::once(V::PROJECTION), self.rel.field) {
                        find = find.projection(p);
                    }
                    if let Some(s) = &self.sort {
                        find = find.sort(s.as_document().clone());
                    }
                    if let Some(l) = self.limit {
                        find = find.limit(l);
                    }
                    collect(find, self.session.as_deref_mut(), C::COLLECTION, each).await
                },
                |v| Some(v.len()),
            )
            .await
    }

    /// The children, in the requested order. One round trip while they fit
    /// in 16 MiB.
    pub async fn to_vec<V: View<Of = C>>(mut self) -> Result<Vec<V>> {
        self.read::<V, V>(|raw| decode::<V>(C::COLLECTION, raw)).await
    }

    /// The children grouped by parent, in the order of the parents given.
    pub async fn load<V: View<Of = C>>(mut self) -> Result<Loaded<V, P::Id>> {
        let field = self.rel.field;
        let read = self
            .read::<V, _>(|raw| {
                let Some(parent) = raw.get(field).ok().flatten().and_then(P::Id::from_raw) else { return Ok(None) };
                Ok(Some((parent, decode::<V>(C::COLLECTION, raw)?)))
            })
            .await?;
        let mut groups: IdMap<P::Id, Vec<u32>> = IdMap::default();
        let mut items = Vec::new();
        for (parent, item) in read.into_iter().flatten() {
            groups.entry(parent).or_default().push(items.len() as u32);
            items.push(item);
        }
        Ok(grouped(items, &self.parents, |p| groups.get(p).map(Vec::as_slice).unwrap_or(&[])))
    }
}

fn grouped<'g, V, I: DocId>(items: Vec<V>, parents: &[I], group: impl Fn(&I) -> &'g [u32]) -> Loaded<V, I> {
    let mut out = Loaded {
        items,
        offsets: vec![0],
        slots: Vec::new(),
        missing_offsets: vec![0; parents.len() + 1],
        missing: Vec::new(),
    };
    for p in parents {
        out.slots.extend_from_slice(group(p));
        out.offsets.push(out.slots.len());
    }
    out
}

/// The latest `n` children of each of many parents, in one round trip; from
/// [`crate::relations::handles::ParentRef::latest_per_parent`].
/// Await it for the children as `R` (whole documents unless
/// [`Latest::view`] names a view), grouped by parent; or run it with [`Latest::load`].
#[must_use = "Latest does nothing until awaited or run with load"]
pub struct Latest<'a, C, P: Document, R = C> {
    db: &'a Database,
    rel: &'static Relation,
    parents: Vec<P::Id>,
    n: u32,
    filter: Filter,
    sort: Option<Sort>,
    _child: PhantomData<fn() -> (C, R)>,
    session: Option<&'a mut ClientSession>,
}

impl<'a, C: Document, P: Document> Latest<'a, C, P> {
    pub(crate) fn new(db: &'a Database, rel: &'static Relation, parents: Vec<P::Id>, n: u32) -> Self {
        let sort = Sort::declared(rel.order);
        Latest { db, rel, parents, n, filter: Filter::all(), sort, session: None, _child: PhantomData }
    }
}

impl<'a, C: Document, P: Document, R: View<Of = C>> std::future::IntoFuture for Latest<'a, C, P, R> {
    type Output = Result<Loaded<R, P::Id>>;
    type IntoFuture = futures::future::BoxFuture<'a, Self::Output>;
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.load::<R>())
    }
}

impl<'a, C: Document, P: Document, R: View<Of = C>> Latest<'a, C, P, R> {
    /// Reads the children as the view `W` when awaited: only its fields travel.
    pub fn view<W: View<Of = C>>(self) -> Latest<'a, C, P, W> {
        let Latest { db, rel, parents, n, filter, sort, session, .. } = self;
        Latest { db, rel, parents, n, filter, sort, session, _child: PhantomData }
    }
    /// Reads in `session`, like the driver's `.session(..)`: inside the
    /// caller's transaction it sees the transaction's own writes.
    pub fn session(mut self, session: &'a mut ClientSession) -> Self {
        self.session = Some(session);
        self
    }
    /// Only the children matching `filter` too.
    pub fn filter(mut self, filter: impl Into<Filter>) -> Self {
        self.filter = self.filter.and(filter.into());
        self
    }
    /// Orders each parent's children (replacing the declared order).
    pub fn sort(mut self, sort: Sort) -> Self {
        self.sort = Some(sort);
        self
    }

    /// Runs the load: one `aggregate` of `$documents` (the distinct parent
    /// ids) and a `$lookup` on `{parent field: id}` with `$sort`/`$limit`,
    /// so each parent's lookup reads only its first `n` index entries.
    pub async fn load<V: View<Of = C>>(self) -> Result<Loaded<V, P::Id>> {
        crate::client::trace::Op::new("latest_per_parent", C::COLLECTION).run(async move {
        crate::client::deployment::require(crate::client::deployment::DOCUMENTS_STAGE)?;
        let mut seen = std::collections::HashSet::<_, foldhash::fast::RandomState>::default();
        let distinct: Vec<&P::Id> = self.parents.iter().filter(|p| seen.insert(*p)).collect();
        if distinct.is_empty() {
            return Ok(grouped(Vec::new(), &self.parents, |_| &[]));
        }
        let Some(sort) = self.sort.clone() else {
            return Err(Error::Invalid {
                what: crate::error::Misuse::LatestPerParent,
                message: format!(
                    "\"latest\" needs an order: declare one with `#[parent_ref(.., sort = \"-time\")]` on `{}` or call `.sort(..)`",
                    self.rel.rust_field
                ),
            });
        };
        let mut pipeline = Vec::new();
        let filter = self.filter.clone().into_document()?;
        if !filter.is_empty() {
            pipeline.push(doc! {"$match": filter});
        }
        pipeline.push(doc! {"$sort": sort.into_document()});
        pipeline.push(doc! {"$limit": i64::from(self.n)});
        if let Some(p) = union_projection(std::iter::once(V::PROJECTION), self.rel.field) {
            pipeline.push(doc! {"$project": p});
        }
        let stages = vec![
            doc! {"$documents": distinct.iter().map(|id| doc! {"_id": id.to_bson()}).collect::<Vec<_>>()},
            doc! {"$lookup": {
                "from": C::COLLECTION,
                "localField": "_id",
                "foreignField": self.rel.field,
                "pipeline": pipeline,
                "as": "children",
            }},
        ];
        let aggregate = self.db.aggregate(stages).batch_size(ONE_BATCH).with_type::<RawDocumentBuf>();
        let mut groups: IdMap<P::Id, Vec<u32>> = IdMap::default();
        let mut items = Vec::new();
        collect_aggregate(aggregate, self.session, C::COLLECTION, |raw| {
            let Some(parent) = raw.get("_id").ok().flatten().and_then(P::Id::from_raw) else { return Ok(()) };
            let Ok(children) = raw.get_array("children") else { return Ok(()) };
            let group = groups.entry(parent).or_default();
            for child in children.into_iter().filter_map(|c| c.ok()).filter_map(|c| c.as_document()) {
                group.push(items.len() as u32);
                items.push(decode::<V>(C::COLLECTION, child)?);
            }
            Ok(())
        })
        .await?;
        Ok(grouped(items, &self.parents, |p| groups.get(p).map(Vec::as_slice).unwrap_or(&[])))
        }).await
    }
}

/// The documents whose reference field holds any of many ids, grouped by id:
/// the reverse load of a reference for many targets at once (all books of
/// each of 50 categories in a one-way N:M). One `find({field: {$in: ids}})`
/// on the field's (multikey) index; a document that refers to several of
/// the ids is read once and listed under each. From
/// [`crate::relations::handles::RefMany::referrers_of_many`].
#[must_use = "Referrers does nothing until awaited or run"]
pub struct Referrers<'a, P, T: Document, R = P> {
    db: &'a Database,
    rel: &'static Relation,
    targets: Vec<T::Id>,
    filter: Filter,
    sort: Option<Sort>,
    per_target: Option<usize>,
    session: Option<&'a mut ClientSession>,
    _types: PhantomData<fn() -> (P, R)>,
}

impl<'a, P: Document, T: Document> Referrers<'a, P, T> {
    pub(crate) fn new(db: &'a Database, rel: &'static Relation, targets: Vec<T::Id>) -> Self {
        let (filter, sort, per_target, session) = (Filter::all(), None, None, None);
        Referrers { db, rel, targets, filter, sort, per_target, session, _types: PhantomData }
    }
}

impl<'a, P: Document, T: Document, R: View<Of = P>> Referrers<'a, P, T, R> {
    /// Reads the referrers as the view `W`: only its fields (and the
    /// reference field, to group them) travel.
    pub fn view<W: View<Of = P>>(self) -> Referrers<'a, P, T, W> {
        let Referrers { db, rel, targets, filter, sort, per_target, session, .. } = self;
        Referrers { db, rel, targets, filter, sort, per_target, session, _types: PhantomData }
    }
    /// Reads in `session`, like the driver's `.session(..)`: inside the
    /// caller's transaction it sees the transaction's writes.
    pub fn session(mut self, session: &'a mut ClientSession) -> Self {
        self.session = Some(session);
        self
    }
    /// Only the referrers matching `filter` too.
    pub fn filter(mut self, filter: impl Into<Filter>) -> Self {
        self.filter = self.filter.and(filter.into());
        self
    }
    /// Each target's referrers in this order (the server sorts).
    pub fn sort(mut self, sort: Sort) -> Self {
        self.sort = Some(sort);
        self
    }
    /// At most `n` referrers listed per target (all matching ones travel).
    pub fn limit_per_target(mut self, n: usize) -> Self {
        self.per_target = Some(n);
        self
    }

    /// Runs the query (what `.await` does).
    pub async fn run(self) -> Result<Loaded<R, T::Id>> {
        crate::client::trace::Op::new("referrers_of_many", P::COLLECTION)
            .run(async move {
                let mut wanted: IdMap<T::Id, Vec<u32>> = IdMap::default();
                let mut ids = Vec::new();
                for t in &self.targets {
                    if !wanted.contains_key(t) {
                        wanted.insert(t.clone(), Vec::new());
                        ids.push(t.to_bson());
                    }
                }
                if ids.is_empty() {
                    return Ok(grouped(Vec::new(), &self.targets, |_| &[]));
                }
                let path = self.rel.id_path();
                let filter = Filter::new(doc! { &path: {"$in": ids} }).and(self.filter).into_document()?;
                let coll = self.db.collection::<RawDocumentBuf>(P::COLLECTION);
                let mut find = coll.find(filter).batch_size(ONE_BATCH);
                if let Some(p) = union_projection(std::iter::once(R::PROJECTION), self.rel.field) {
                    find = find.projection(p);
                }
                if let Some(s) = self.sort {
                    find = find.sort(s.into_document());
                }
                let key = match self.rel.kind {
                    crate::schema::document::RelationKind::RefMany { key, .. } => key,
                    _ => None,
                };
                let mut items = Vec::new();
                collect(find, self.session, P::COLLECTION, |raw| {
                    let item = items.len() as u32;
                    let mut listed = false;
                    if let Some(value) = raw.get(self.rel.field).ok().flatten() {
                        each_raw_id::<T::Id>(value, key, &mut |id| {
                            if let Some(group) = wanted.get_mut(&id) {
                                if group.last() != Some(&item) {
                                    group.push(item);
                                    listed = true;
                                }
                            }
                        });
                    }
                    if listed {
                        items.push(decode::<R>(P::COLLECTION, raw)?);
                    }
                    Ok(())
                })
                .await?;
                if let Some(n) = self.per_target {
                    wanted.values_mut().for_each(|g| g.truncate(n));
                }
                Ok(grouped(items, &self.targets, |t| wanted.get(t).map(Vec::as_slice).unwrap_or(&[])))
            })
            .await
    }
}

impl<'a, P: Document, T: Document, R: View<Of = P>> std::future::IntoFuture for Referrers<'a, P, T, R> {
    type Output = Result<Loaded<R, T::Id>>;
    type IntoFuture = futures::future::BoxFuture<'a, Self::Output>;
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run())
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
        bson::RawBsonRef::Array(arr) => arr.into_iter().filter_map(|e| e.ok()).for_each(|e| one(e, f)),
        v => one(v, f),
    }
}
