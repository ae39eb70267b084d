//! Parents and one relation of theirs read together, by one of two
//! strategies chosen per call: the find of the parents, then one `$in` for
//! the relation (two round trips, each document once), or ONE aggregate
//! whose `$lookup` joins on the server (one round trip, but a document
//! referred to by several parents travels once per parent). Which wins
//! depends on the deployment (the latency of a round trip against the bytes
//! and the server's join); the benchmark measures both.

use crate::error::Result;
use crate::relations::join::{join_in, FieldVisit, Found, Referenced, Request, DEFAULT_CHUNK};
use crate::relations::loaded::Loaded;
use crate::schema::document::{Document, Relation, View};
use crate::store::codec::{decode_view, element_range};
use crate::store::find::Find;
use crate::store::options::ONE_BATCH;
use crate::store::session::collect_aggregate;
use mongodb::bson::{doc, Document as BsonDoc, RawDocumentBuf};
use mongodb::ClientSession;
use std::marker::PhantomData;

/// How [`WithParents`] reads parents and their related documents.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Strategy {
    /// The parents' find, then one `find({_id: {$in}})` for the relation:
    /// two round trips, each related document once.
    #[default]
    Separate,
    /// One `aggregate` of the parents' find with a `$lookup` into the
    /// related collection (`localField`/`foreignField` on its `_id`, with the
    /// view's `$project` as the lookup's pipeline: MongoDB 5.0 or later):
    /// one round trip; a related document travels once per parent that
    /// refers to it.
    Lookup,
}

/// The field the `$lookup` strategy puts the joined documents in.
/// docrel's own bookkeeping field, which no parent read here carries (a
/// view does not name it, whole documents are read without it).
const JOINED: &str = "_docrel";
/// The field the ids of an array of `{id, ..}` elements are gathered in.
const IDS: &str = "__docrel_ids";

/// Parents (a [`Find`], read as the view `V`) and their related documents
/// (as `W`), by the [`Strategy`] chosen; from `rels().x.with_parents(find)`.
/// Await it for `(parents, loaded)`.
#[must_use = "WithParents does nothing until awaited"]
pub struct WithParents<P, V, T: Document, F, W = T> {
    find: Find<P, V>,
    rel: &'static Relation,
    field: fn(&V) -> &F,
    visit: FieldVisit<F, T::Id>,
    strategy: Strategy,
    _view: PhantomData<fn() -> W>,
}

impl<P: Document, V: View + Sync, T: Document, F: 'static> WithParents<P, V, T, F> {
    pub(crate) fn new(
        find: Find<P, V>,
        rel: &'static Relation,
        field: fn(&V) -> &F,
        visit: FieldVisit<F, T::Id>,
    ) -> Self {
        WithParents { find, rel, field, visit, strategy: Strategy::Separate, _view: PhantomData }
    }
}

impl<P: Document, V: View + Sync, T: Document, F: 'static, W: View<Of = T>> WithParents<P, V, T, F, W> {
    /// Reads the related documents as the view `W`: only its fields travel.
    pub fn view<X: View<Of = T>>(self) -> WithParents<P, V, T, F, X> {
        let WithParents { find, rel, field, visit, strategy, .. } = self;
        WithParents { find, rel, field, visit, strategy, _view: PhantomData }
    }

    /// Chooses the strategy (by default [`Strategy::Separate`]).
    pub fn strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Runs it (what `.await` does).
    pub async fn run(self) -> Result<(Vec<V>, Loaded<W, T::Id>)> {
        self.run_in(None).await
    }

    /// Runs it in `session`, like the driver's `.session(..)`: inside the
    /// caller's transaction the parents and the related documents are read
    /// with the transaction's own writes. Await it.
    pub fn session(self, session: &mut ClientSession) -> WithParentsIn<'_, P, V, T, F, W> {
        WithParentsIn { query: self, session }
    }

    async fn run_in(self, session: Option<&mut ClientSession>) -> Result<(Vec<V>, Loaded<W, T::Id>)> {
        let op = crate::client::trace::Op::new("find_with_parents", P::COLLECTION);
        op.run(async move {
            match self.strategy {
                Strategy::Separate => {
                    let db = {
                        let coll = self.find.collection();
                        coll.client().database(&coll.namespace().db)
                    };
                    let mut session = session;
                    let parents = self.find.all_in(session.as_deref_mut()).await?;
                    let request = Referenced::<T, W>::new(self.field, self.visit, &parents);
                    let loaded = join_in(&db, request, DEFAULT_CHUNK, session).await?;
                    Ok((parents, loaded))
                }
                Strategy::Lookup => self.lookup(session).await,
            }
        })
        .await
    }

    async fn lookup(self, session: Option<&mut ClientSession>) -> Result<(Vec<V>, Loaded<W, T::Id>)> {
        use crate::client::deployment::{require, require_when_sharded, LOOKUP_PIPELINE, LOOKUP_SHARDED};
        if W::projection().is_some() {
            require(self.find.collection().client(), LOOKUP_PIPELINE)?;
        }
        require_when_sharded(self.find.collection().client(), LOOKUP_SHARDED)?;
        let parts = self.find.parts();
        let batch_size = parts.read.batch_size.map_or(ONE_BATCH, crate::store::options::batch);
        // Either side may be the collection a move fills, read through
        // the old shape until the move's reads are switched.
        let db = crate::store::moving::database_of(&parts.coll);
        let (on, mut pipeline) =
            crate::store::moving::aggregate(&db, P::COLLECTION, parts.read.stages(parts.projection)?).await?;
        for mut stage in Self::joined(self.rel) {
            if let Ok(lookup) = stage.get_document("$lookup") {
                stage = doc! {"$lookup": crate::store::moving::lookup(&db, lookup.clone()).await?};
            }
            pipeline.push(stage);
        }
        let name = P::COLLECTION;
        let coll = db.collection::<RawDocumentBuf>(&on);
        let aggregate = coll.aggregate(pipeline).batch_size(batch_size).with_type::<RawDocumentBuf>();
        // One pass: each parent decoded, each joined document decoded the
        // first time its id comes by (a document several parents refer to
        // travels once per parent but is decoded once).
        let mut parents = Vec::new();
        let mut found = Found::default();
        // A parent is decoded without the joined documents, most of its
        // bytes: they are read below, each once.
        let mut own = Vec::new();
        collect_aggregate(aggregate, session, name, |raw| {
            let docs = raw.get_array(JOINED).ok();
            let cut = docs.and_then(|d| element_range(raw, JOINED, d.as_bytes()));
            parents.push(decode_view::<V>(name, raw, V::PROJECTION, cut, &mut own)?);
            let Some(docs) = docs else { return Ok(()) };
            for d in docs.into_iter().filter_map(|d| d.ok()).filter_map(|d| d.as_document()) {
                found.take(T::COLLECTION, d, true)?;
            }
            Ok(())
        })
        .await?;
        let loaded = Referenced::<T, W>::found(self.field, self.visit, &parents, found).finish();
        Ok((parents, loaded))
    }

    /// The stages after the parents' own: the `$lookup` of the related
    /// documents into [`JOINED`].
    fn joined(rel: &Relation) -> Vec<BsonDoc> {
        // An array of `{id, ..}` elements: its ids are first gathered into a
        // top-level array with `$map`, and the `$lookup` joins on that. A
        // `localField` of `parts.id` would do on MongoDB, but the embedded
        // server resolves no path through an array there; this form is
        // correct on both and stays on the `_id` index.
        let key = match rel.kind {
            crate::schema::document::RelationKind::RefMany { key: Some(key), .. } => Some(key),
            _ => None,
        };
        let mut stages = Vec::new();
        let local = match key {
            Some(key) => {
                let field = format!("${}", rel.field);
                let each = format!("$$this.{key}");
                stages.push(doc! {"$addFields": {IDS: {"$map": {"input": {"$ifNull": [field, []]}, "in": each}}}});
                IDS.to_owned()
            }
            None => rel.field.to_owned(),
        };
        let mut lookup = doc! {
            "from": T::COLLECTION,
            "localField": local,
            "foreignField": "_id",
            "as": JOINED,
        };
        if let Some(p) = W::projection() {
            lookup.insert("pipeline", vec![doc! {"$project": p}]);
        }
        stages.push(doc! {"$lookup": lookup});
        if key.is_some() {
            stages.push(doc! {"$project": {IDS: 0}});
        }
        stages
    }
}

impl<P: Document, V: View + Sync, T: Document, F: 'static, W: View<Of = T>> std::future::IntoFuture
    for WithParents<P, V, T, F, W>
{
    type Output = Result<(Vec<V>, Loaded<W, T::Id>)>;
    type IntoFuture = futures::future::BoxFuture<'static, Self::Output>;
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run())
    }
}

/// A [`WithParents`] that runs in the caller's session ([`WithParents::session`]).
#[must_use = "WithParentsIn does nothing until awaited"]
pub struct WithParentsIn<'s, P, V, T: Document, F, W = T> {
    query: WithParents<P, V, T, F, W>,
    session: &'s mut ClientSession,
}

impl<P, V, T: Document, F, W> std::fmt::Debug for WithParentsIn<'_, P, V, T, F, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WithParentsIn").field("relation", &self.query.rel.rust_field).finish()
    }
}

impl<'s, P: Document, V: View + Sync, T: Document, F: 'static, W: View<Of = T>> std::future::IntoFuture
    for WithParentsIn<'s, P, V, T, F, W>
{
    type Output = Result<(Vec<V>, Loaded<W, T::Id>)>;
    type IntoFuture = futures::future::BoxFuture<'s, Self::Output>;
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.query.run_in(Some(self.session)))
    }
}
