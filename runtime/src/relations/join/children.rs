//! The children of parents through a parent reference: all of them with
//! one `find` ([`Children`]), or the latest `n` of each parent with one
//! `$lookup` ([`Latest`]).

use super::counts::Held;
use super::related::Related;
use super::request::{union_projection, IdMap};
use crate::error::{Error, Result};
use crate::id::DocId;
use crate::relations::loaded::Loaded;
use crate::schema::document::{Document, Relation, View};
use crate::store::codec::decode;
use crate::store::options::{count, read_setters, ONE_BATCH};
use crate::store::query::{Filter, Sort};
use crate::store::session::collect_aggregate;
use mongodb::bson::{doc, Bson, Document as BsonDoc, RawDocument, RawDocumentBuf};
use mongodb::Database;
use std::marker::PhantomData;

/// The children of one or many parents through a parent reference; from
/// [`crate::relations::handles::ParentRef::children_of`].
///
/// Await it for the children as `R` (whole documents unless
/// [`Children::view`] names a view), in the requested order; or run it
/// with [`Children::to_vec`] / [`Children::load`] (grouped by parent).
#[must_use = "Children does nothing until awaited or run with to_vec or load"]
pub struct Children<'a, C, P: Document, R = C> {
    base: Related<'a, P::Id>,
    _child: PhantomData<fn() -> (C, R)>,
}

impl<'a, C: Document, P: Document> Children<'a, C, P> {
    pub(crate) fn new(db: &'a Database, rel: &'static Relation, parents: Vec<P::Id>) -> Self {
        Children { base: Related::new(db, rel, parents, Sort::declared(rel.order)), _child: PhantomData }
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
        Children { base: self.base, _child: PhantomData }
    }
    read_setters! {
        /// Reads in `session`, like the driver's `.session(..)`: inside the
        /// caller's transaction it sees the transaction's writes.
        session<'a> => base.session;
        /// Only the children matching `filter` too.
        filter => base.read;
        /// Orders them (replacing the declared order).
        sort => base.read;
        /// At most `n` children in all (for a limit per parent, see
        /// [`crate::relations::handles::ParentRef::latest_per_parent`]).
        limit => base.read;
        /// Skips the first `n` children in the order asked: with
        /// [`Self::limit`], a page of one parent's children.
        skip => base.read;
    }

    /// How many children each parent has (matching [`Self::filter`], if
    /// set), without reading them: Mongoose's virtual `count`. Every
    /// parent asked is a key, 0 when it has no child. One `aggregate`
    /// (`$match` on the parent ids, `$group` by parent) for any number of
    /// parents, none for none; the order, limit and skip do not apply.
    ///
    /// ```
    /// # docrel::testing::doc_test(|db| async move {
    /// use docrel::{Document, bson::oid::ObjectId};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "hosts")]
    /// struct Host { #[serde(rename = "_id")] id: ObjectId }
    ///
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "logs")]
    /// struct LogMsg { #[serde(rename = "_id")] id: ObjectId, level: String, #[parent_ref(to = Host)] host: ObjectId }
    ///
    /// let (web, db1) = (ObjectId::new(), ObjectId::new());
    /// let msg = |level: &str| LogMsg { id: ObjectId::new(), level: level.into(), host: web };
    /// LogMsg::repo(&db).insert_many(&[msg("info"), msg("error"), msg("error")]).await?;
    ///
    /// let trips = docrel::testing::round_trips(&db);
    /// let mark = trips.mark();
    /// let counts = LogMsg::rels().host.children_of_many(&db, &[web, db1]).count().await?;
    /// assert_eq!(trips.since(mark), 1);
    /// assert_eq!((counts[&web], counts[&db1]), (3, 0));
    /// let errors = LogMsg::rels().host.children_of_many(&db, &[web]).filter(LogMsg::fields().level.eq("error"));
    /// assert_eq!(errors.count().await?[&web], 2);
    /// # Ok(()) });
    /// ```
    pub async fn count(self) -> Result<std::collections::HashMap<P::Id, u64>> {
        let count = self.base.count(C::COLLECTION, Held::Value, usize::MAX);
        crate::client::trace::Op::new("children_count", C::COLLECTION).run(count).await
    }

    /// Runs the find (in the session, if any) and reads each child through `each`.
    async fn read<V: View<Of = C>, U>(&mut self, each: impl FnMut(&RawDocument) -> Result<U>) -> Result<Vec<U>> {
        let ids: Vec<Bson> = self.base.ids.iter().map(DocId::to_bson).collect();
        let key = self.base.rel.field;
        let parents = match ids.as_slice() {
            [one] => Filter::new(doc! { key: one.clone() }),
            _ => Filter::new(doc! { key: {"$in": ids} }),
        };
        let find = self.base.find::<V, U>(C::COLLECTION, parents, each);
        crate::client::trace::Op::new("children_of", C::COLLECTION).run_counted(find, |v| Some(v.len())).await
    }

    /// The children, in the requested order. One round trip while they fit
    /// in 16 MiB.
    pub async fn to_vec<V: View<Of = C>>(mut self) -> Result<Vec<V>> {
        self.read::<V, V>(|raw| decode::<V>(C::COLLECTION, raw)).await
    }

    /// The children grouped by parent, in the order of the parents given.
    pub async fn load<V: View<Of = C>>(mut self) -> Result<Loaded<V, P::Id>> {
        let field = self.base.rel.field;
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
        Ok(Loaded::grouped(items, &self.base.ids, |p| groups.get(p).map(Vec::as_slice).unwrap_or(&[])))
    }
}

/// The latest `n` children of each of many parents, in one round trip; from
/// [`crate::relations::handles::ParentRef::latest_per_parent`].
/// Await it for the children as `R` (whole documents unless
/// [`Latest::view`] names a view), grouped by parent; or run it with [`Latest::load`].
#[must_use = "Latest does nothing until awaited or run with load"]
pub struct Latest<'a, C, P: Document, R = C> {
    base: Related<'a, P::Id>,
    n: u64,
    _child: PhantomData<fn() -> (C, R)>,
}

impl<'a, C: Document, P: Document> Latest<'a, C, P> {
    pub(crate) fn new(db: &'a Database, rel: &'static Relation, parents: Vec<P::Id>, n: u64) -> Self {
        Latest { base: Related::new(db, rel, parents, Sort::declared(rel.order)), n, _child: PhantomData }
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
        Latest { base: self.base, n: self.n, _child: PhantomData }
    }
    read_setters! {
        /// Reads in `session`, like the driver's `.session(..)`: inside the
        /// caller's transaction it sees the transaction's own writes.
        session<'a> => base.session;
        /// Only the children matching `filter` too.
        filter => base.read;
        /// Orders each parent's children (replacing the declared order).
        sort => base.read;
        /// Skips the first `k` children of each parent: the page `k..k + n`
        /// of every parent (`$slice: [k, n]`), still one round trip.
        skip => base.read;
    }

    /// Runs the load: one `aggregate` of `$documents` (the distinct parent
    /// ids) and a `$lookup` on `{parent field: id}` with `$sort`/`$limit`,
    /// so each parent's lookup reads only its first `n` index entries.
    pub async fn load<V: View<Of = C>>(self) -> Result<Loaded<V, P::Id>> {
        crate::client::trace::Op::new("latest_per_parent", C::COLLECTION).run(self.lookup::<V>()).await
    }

    async fn lookup<V: View<Of = C>>(self) -> Result<Loaded<V, P::Id>> {
        crate::client::deployment::require(self.base.db.client(), crate::client::deployment::DOCUMENTS_STAGE)?;
        let mut seen = std::collections::HashSet::<_, foldhash::fast::RandomState>::default();
        let distinct: Vec<&P::Id> = self.base.ids.iter().filter(|p| seen.insert(*p)).collect();
        if distinct.is_empty() {
            return Ok(Loaded::grouped(Vec::new(), &self.base.ids, |_| &[]));
        }
        let (documents, lookup) = self.stages::<V>(&distinct)?;
        let lookup = crate::store::moving::lookup(self.base.db, lookup).await?;
        let stages = [documents, doc! {"$lookup": lookup}];
        let aggregate = self.base.db.aggregate(stages).batch_size(ONE_BATCH).with_type::<RawDocumentBuf>();
        let mut groups: IdMap<P::Id, Vec<u32>> = IdMap::default();
        let mut items = Vec::new();
        collect_aggregate(aggregate, self.base.session, C::COLLECTION, |raw| {
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
        Ok(Loaded::grouped(items, &self.base.ids, |p| groups.get(p).map(Vec::as_slice).unwrap_or(&[])))
    }

    /// The stages: the `$documents` of the `distinct` parent ids, and the
    /// `$lookup` of each one's first `n` children in the order asked.
    fn stages<V: View<Of = C>>(&self, distinct: &[&P::Id]) -> Result<(BsonDoc, BsonDoc)> {
        let (rel, read) = (self.base.rel, &self.base.read);
        let Some(sort) = read.sort.clone() else {
            return Err(Error::Invalid {
                what: crate::error::Misuse::LatestPerParent,
                message: format!(
                    "\"latest\" needs an order: declare one with `#[parent_ref(.., sort = \"-time\")]` on `{}` or call `.sort(..)`",
                    rel.rust_field
                ),
            });
        };
        let mut pipeline = Vec::new();
        let filter = read.within(Filter::all()).into_document()?;
        if !filter.is_empty() {
            pipeline.push(doc! {"$match": filter});
        }
        pipeline.push(doc! {"$sort": sort.into_document()});
        if let Some(k) = read.skip.filter(|&k| k > 0) {
            pipeline.push(doc! {"$skip": count("skip", k)?});
        }
        pipeline.push(doc! {"$limit": count("latest_per_parent", self.n)?});
        if let Some(p) = union_projection(std::iter::once(V::PROJECTION), rel.field) {
            pipeline.push(doc! {"$project": p});
        }
        Ok((
            // `$documents` evaluates what it is given: `$literal` keeps an id
            // such as "$name" a value instead of a field path.
            doc! {"$documents": distinct.iter().map(|id| doc! {"_id": {"$literal": id.to_bson()}}).collect::<Vec<_>>()},
            doc! {
                "from": C::COLLECTION,
                "localField": "_id",
                "foreignField": rel.field,
                "pipeline": pipeline,
                "as": "children",
            },
        ))
    }
}
