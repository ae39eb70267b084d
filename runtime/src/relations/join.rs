//! Application-level joins: the related documents of many parents with one
//! `$in` query per target collection, projected on the views' fields, and
//! put back in each parent's order.

use crate::error::{Error, Result};
use crate::id::DocId;
use crate::relations::loaded::Loaded;
use crate::schema::document::{Document, Relation, View};
use crate::store::codec::decode;
use crate::store::query::{Filter, Sort};
use bson::{doc, Bson, RawDocument, RawDocumentBuf};
use mongodb::Database;
use std::collections::HashMap;
use std::marker::PhantomData;

/// The generated function that yields the ids a parent refers to, in order.
pub(crate) type Visit<P, I> = fn(&P, &mut dyn FnMut(&I));

/// How many ids one `$in` query carries at most; longer lists are split
/// into chunks of this size (each one more round trip).
pub const DEFAULT_CHUNK: usize = 20_000;

/// Asks the server for everything in one batch (it still caps a batch at
/// 16 MiB): a load costs one round trip, not one per 101 documents.
const ONE_BATCH: u32 = i32::MAX as u32;

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
pub async fn join<J: JoinSet>(db: &Database, set: J) -> Result<J::Output> {
    join_chunked(db, set, DEFAULT_CHUNK).await
}

/// [`join`] with `$in` lists split into chunks of at most `chunk` ids.
pub async fn join_chunked<J: JoinSet>(db: &Database, mut set: J, chunk: usize) -> Result<J::Output> {
    run(db, set.pendings(), chunk.max(1)).await?;
    Ok(set.finish())
}

async fn run(db: &Database, mut pendings: Vec<&mut dyn Pending>, chunk: usize) -> Result<()> {
    // Group the requests by (collection, key): one query per group.
    let mut groups: Vec<(&'static str, &'static str, Vec<usize>)> = Vec::new();
    for (i, p) in pendings.iter().enumerate() {
        let (c, k) = (p.collection(), p.key_path());
        match groups.iter_mut().find(|(gc, gk, _)| *gc == c && *gk == k) {
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
        let coll = db.collection::<RawDocumentBuf>(collection);
        for part in ids.chunks(chunk) {
            let mut find = coll.find(doc! { key: {"$in": part} }).batch_size(ONE_BATCH);
            if let Some(p) = &projection {
                find = find.projection(p.clone());
            }
            let mut cursor = find.await.map_err(|e| Error::driver("find", collection, e))?;
            while cursor.advance().await.map_err(|e| Error::driver("find", collection, e))? {
                for &i in &members {
                    pendings[i].absorb(cursor.current())?;
                }
            }
        }
    }
    Ok(())
}

fn union_ids(mut lists: Vec<Vec<Bson>>) -> Vec<Bson> {
    if lists.len() == 1 {
        return lists.pop().unwrap_or_default();
    }
    // Merged relations: deduplicate across them by the ids' BSON bytes.
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for id in lists.into_iter().flatten() {
        let bytes = bson::to_vec(&doc! {"": &id}).unwrap_or_default();
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

/// The load of the documents some parents refer to (from `rels().x.of(..)`).
pub struct Referenced<'p, P, T: Document, V> {
    rel: &'static Relation,
    visit: Visit<P, T::Id>,
    parents: &'p [P],
    slots: HashMap<T::Id, u32>,
    unique: Vec<T::Id>,
    found: Vec<Option<V>>,
}

impl<'p, P: Document, T: Document, V: View<Of = T>> Referenced<'p, P, T, V> {
    pub(crate) fn new(rel: &'static Relation, visit: Visit<P, T::Id>, parents: &'p [P]) -> Self {
        Referenced { rel, visit, parents, slots: HashMap::new(), unique: Vec::new(), found: Vec::new() }
    }
}

impl<P: Document, T: Document, V: View<Of = T>> Pending for Referenced<'_, P, T, V> {
    fn collection(&self) -> &'static str {
        T::COLLECTION
    }
    fn key_path(&self) -> &'static str {
        "_id"
    }
    fn ids(&mut self) -> Vec<Bson> {
        let (slots, unique) = (&mut self.slots, &mut self.unique);
        for parent in self.parents {
            (self.visit)(parent, &mut |id: &T::Id| {
                if !slots.contains_key(id) {
                    slots.insert(id.clone(), unique.len() as u32);
                    unique.push(id.clone());
                }
            });
        }
        self.found = std::iter::repeat_with(|| None).take(self.unique.len()).collect();
        self.unique.iter().map(DocId::to_bson).collect()
    }
    fn projection(&self) -> Option<&'static [&'static str]> {
        V::PROJECTION
    }
    fn absorb(&mut self, raw: &RawDocument) -> Result<()> {
        let Some(id) = raw.get("_id").ok().flatten().and_then(T::Id::from_raw) else { return Ok(()) };
        if let Some(&slot) = self.slots.get(&id) {
            let place = &mut self.found[slot as usize];
            if place.is_none() {
                *place = Some(decode::<V>(T::COLLECTION, raw)?);
            }
        }
        Ok(())
    }
}

impl<P: Document, T: Document, V: View<Of = T>> Request for Referenced<'_, P, T, V> {
    type Output = Loaded<V, T::Id>;
    fn finish(self) -> Loaded<V, T::Id> {
        let _ = self.rel;
        // Compact the found documents; slot -> item index.
        let mut item_of = vec![u32::MAX; self.found.len()];
        let mut items = Vec::with_capacity(self.found.len());
        for (slot, v) in self.found.into_iter().enumerate() {
            if let Some(v) = v {
                item_of[slot] = items.len() as u32;
                items.push(v);
            }
        }
        let mut out = Loaded {
            items,
            offsets: Vec::with_capacity(self.parents.len() + 1),
            slots: Vec::new(),
            missing_offsets: Vec::with_capacity(self.parents.len() + 1),
            missing: Vec::new(),
        };
        out.offsets.push(0);
        out.missing_offsets.push(0);
        for parent in self.parents {
            (self.visit)(parent, &mut |id: &T::Id| match self.slots.get(id).map(|&s| item_of[s as usize]) {
                Some(item) if item != u32::MAX => out.slots.push(item),
                _ => out.missing.push(id.clone()),
            });
            out.offsets.push(out.slots.len());
            out.missing_offsets.push(out.missing.len());
        }
        out
    }
}

/// The children of one or many parents through a parent reference; from
/// [`crate::relations::handles::ParentRef::children_of`].
#[must_use = "Children does nothing until run with to_vec or load"]
pub struct Children<'a, C, P: Document> {
    db: &'a Database,
    rel: &'static Relation,
    parents: Vec<P::Id>,
    filter: Filter,
    sort: Option<Sort>,
    limit: Option<i64>,
    _child: PhantomData<fn() -> C>,
}

impl<'a, C: Document, P: Document> Children<'a, C, P> {
    pub(crate) fn new(db: &'a Database, rel: &'static Relation, parents: Vec<P::Id>) -> Self {
        let sort = Sort::declared(rel.order);
        Children { db, rel, parents, filter: Filter::all(), sort, limit: None, _child: PhantomData }
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

    async fn cursor<V: View<Of = C>>(&self) -> Result<mongodb::Cursor<RawDocumentBuf>> {
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
        find.await.map_err(|e| Error::driver("find", C::COLLECTION, e))
    }

    /// The children, in the requested order. One round trip while they fit
    /// in 16 MiB.
    pub async fn to_vec<V: View<Of = C>>(self) -> Result<Vec<V>> {
        let mut cursor = self.cursor::<V>().await?;
        let mut out = Vec::new();
        while cursor.advance().await.map_err(|e| Error::driver("find", C::COLLECTION, e))? {
            out.push(decode::<V>(C::COLLECTION, cursor.current())?);
        }
        Ok(out)
    }

    /// The children grouped by parent, in the order of the parents given.
    pub async fn load<V: View<Of = C>>(self) -> Result<Loaded<V, P::Id>> {
        let mut cursor = self.cursor::<V>().await?;
        let mut groups: HashMap<P::Id, Vec<u32>> = HashMap::new();
        let mut items = Vec::new();
        while cursor.advance().await.map_err(|e| Error::driver("find", C::COLLECTION, e))? {
            let raw = cursor.current();
            let Some(parent) = raw.get(self.rel.field).ok().flatten().and_then(P::Id::from_raw) else { continue };
            groups.entry(parent).or_default().push(items.len() as u32);
            items.push(decode::<V>(C::COLLECTION, raw)?);
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
#[must_use = "Latest does nothing until run with load"]
pub struct Latest<'a, C, P: Document> {
    db: &'a Database,
    rel: &'static Relation,
    parents: Vec<P::Id>,
    n: u32,
    filter: Filter,
    sort: Option<Sort>,
    _child: PhantomData<fn() -> C>,
}

impl<'a, C: Document, P: Document> Latest<'a, C, P> {
    pub(crate) fn new(db: &'a Database, rel: &'static Relation, parents: Vec<P::Id>, n: u32) -> Self {
        let sort = Sort::declared(rel.order);
        Latest { db, rel, parents, n, filter: Filter::all(), sort, _child: PhantomData }
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
        let mut seen = std::collections::HashSet::new();
        let distinct: Vec<&P::Id> = self.parents.iter().filter(|p| seen.insert(*p)).collect();
        if distinct.is_empty() {
            return Ok(grouped(Vec::new(), &self.parents, |_| &[]));
        }
        let Some(sort) = self.sort.clone() else {
            return Err(Error::Invalid {
                what: "latest_per_parent",
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
        let mut cursor = self
            .db
            .aggregate(stages)
            .batch_size(ONE_BATCH)
            .with_type::<RawDocumentBuf>()
            .await
            .map_err(|e| Error::driver("aggregate", C::COLLECTION, e))?;
        let mut groups: HashMap<P::Id, Vec<u32>> = HashMap::new();
        let mut items = Vec::new();
        while cursor.advance().await.map_err(|e| Error::driver("aggregate", C::COLLECTION, e))? {
            let raw = cursor.current();
            let Some(parent) = raw.get("_id").ok().flatten().and_then(P::Id::from_raw) else { continue };
            let Ok(children) = raw.get_array("children") else { continue };
            let group = groups.entry(parent).or_default();
            for child in children.into_iter().filter_map(|c| c.ok()).filter_map(|c| c.as_document()) {
                group.push(items.len() as u32);
                items.push(decode::<V>(C::COLLECTION, child)?);
            }
        }
        Ok(grouped(items, &self.parents, |p| groups.get(p).map(Vec::as_slice).unwrap_or(&[])))
    }
}
