//! The typed repository of a document type: insert, get, find, update,
//! replace, delete, count and ensure_indexes.

use crate::bson_compat;
use crate::client::trace::Op;
use crate::denormalize::fanout;
use crate::denormalize::fill::Sources;
use crate::error::{Error, Result};
use crate::id::{show, DocId};
use crate::schema::document::Document;
use crate::schema::graph::graph;
use crate::store::codec::encode;
use crate::store::find::Find;
use crate::store::path::lookup;
use crate::store::query::{Filter, Update};
use crate::store::session::{collect, in_session};
use futures::future::BoxFuture;
use mongodb::bson::{self, doc, RawDocumentBuf};
use mongodb::options::ReturnDocument;
use mongodb::{ClientSession, Collection, Database};
use std::marker::PhantomData;

mod session;
pub use session::InSession;

/// The typed repository of document type `T` in one database.
///
/// ```
/// # docrel::testing::doc_test(|db| async move {
/// use docrel::{Document, Repository, bson::oid::ObjectId};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Document, Serialize, Deserialize, Debug, PartialEq)]
/// #[document(collection = "parts")]
/// struct Part { #[serde(rename = "_id")] id: ObjectId, name: String, qty: i32 }
///
/// let parts = Part::repo(&db);
/// let grommet = Part { id: ObjectId::new(), name: "#4 grommet".into(), qty: 94 };
/// parts.insert(&grommet).await?;
/// assert_eq!(parts.get(&grommet.id).await?, Some(grommet));
/// let low = parts.find(Part::fields().qty.lt(100)).to_vec().await?;
/// assert_eq!(low.len(), 1);
/// # Ok(()) });
/// ```
pub struct Repository<T> {
    db: Database,
    raw: Collection<RawDocumentBuf>,
    deferred: bool,
    transactional: bool,
    _doc: PhantomData<fn() -> T>,
}

impl<T> Clone for Repository<T> {
    fn clone(&self) -> Self {
        Repository {
            db: self.db.clone(),
            raw: self.raw.clone(),
            deferred: self.deferred,
            transactional: self.transactional,
            _doc: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for Repository<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repository").field("collection", &self.raw.namespace()).finish()
    }
}

/// What an update did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UpdateOutcome {
    /// Documents the filter matched (with room for any bounded push).
    pub matched: u64,
    /// Documents actually changed.
    pub modified: u64,
}

impl<T: Document> Repository<T> {
    /// The repository of `T` in `db`.
    pub fn new(db: &Database) -> Self {
        Repository {
            db: db.clone(),
            raw: db.collection(T::COLLECTION),
            deferred: false,
            transactional: false,
            _doc: PhantomData,
        }
    }

    /// This repository in deferred mode: writes of copied fields still
    /// version the source, but leave the fan-out to a
    /// [`crate::denormalize::fanout::SyncWorker`] following the change stream (the write
    /// costs no extra round trip; the copies follow shortly after).
    pub fn deferred_fan_out(mut self) -> Self {
        self.deferred = true;
        self
    }

    /// This repository with transactional fan-out: an update by id of a
    /// copied field and the rewrite of all its copies commit together, or
    /// not at all (on replica sets and sharded clusters; elsewhere the
    /// update is refused with [`Error::Invalid`]). It costs one more round
    /// trip (`commitTransaction`), and a large fan-out makes a large transaction.
    pub fn transactional_fan_out(mut self) -> Self {
        self.transactional = true;
        self
    }

    /// The database.
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// The driver's typed collection, for anything docrel does not cover.
    pub fn collection(&self) -> Collection<T> {
        self.raw.clone_with_type()
    }

    /// The driver's raw collection.
    pub fn raw(&self) -> &Collection<RawDocumentBuf> {
        &self.raw
    }

    fn err(&self, operation: &'static str) -> impl FnOnce(mongodb::error::Error) -> Error {
        move |e| Error::driver(operation, T::COLLECTION, e)
    }

    /// Inserts one document, after checking its bounds and its size. Its
    /// denormalized copies are filled from their sources first.
    pub async fn insert(&self, doc: &T) -> Result<()> {
        self.insert_many_in(std::slice::from_ref(doc), None).await
    }

    /// Encodes documents for a write: bounds, copies filled from their
    /// sources (one read per source collection for the batch), a source's
    /// first version when `inserting`, size. When something is derived from
    /// or held by them the BSON documents come back too, so they are built once.
    async fn encode_all(&self, docs: &[T], inserting: bool, session: Option<&mut ClientSession>) -> Result<Encoded> {
        for d in docs {
            d.check_bounds()?;
        }
        let g = graph();
        let fills = g.holds_copies(T::schema());
        let versioned = inserting && !g.targets_of(T::COLLECTION).is_empty();
        // A new document owes something to the documents around it (see
        // `after_insert`) when it is a source, a subset child, the holder of
        // a two-way reference or the keeper of a subset.
        let owes = versioned
            || !g.subsets_of(T::COLLECTION).is_empty()
            || !g.two_way_of(T::schema()).is_empty()
            || !g.subsets_kept_by(T::schema()).is_empty();
        if !fills && !owes {
            let raws = docs.iter().map(|d| encode(T::COLLECTION, d)).collect::<Result<_>>()?;
            return Ok(Encoded { raws, plain: Vec::new(), filled: None });
        }
        let mut plain = docs
            .iter()
            .map(|d| {
                bson_compat::to_document(d).map_err(|e| Error::Encode {
                    what: format!("a document of `{}`", T::COLLECTION),
                    message: e.to_string(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let filled = if fills {
            Some(crate::denormalize::fill::fill(&self.db, T::schema(), &mut plain, session).await?)
        } else {
            None
        };
        if versioned {
            let v = crate::denormalize::fanout::first_version();
            for d in &mut plain {
                match d.get_mut("_docrel") {
                    Some(bson::Bson::Document(b)) => {
                        b.insert("v", v);
                    }
                    _ => {
                        d.insert("_docrel", doc! {"v": v});
                    }
                }
            }
        }
        crate::patterns::subset::check(T::COLLECTION, &plain)?;
        let raws = plain.iter().map(|d| encode(T::COLLECTION, d)).collect::<Result<_>>()?;
        Ok(Encoded { raws, plain, filled })
    }

    /// What depends on documents just written (all of `written`): their
    /// copies confirmed, holders already referring to them filled, their
    /// summaries pushed into their parents' subsets.
    async fn after_insert(
        &self,
        written: &[bson::Document],
        filled: Option<Sources>,
        mut session: Option<&mut ClientSession>,
    ) -> Result<()> {
        if written.is_empty() {
            return Ok(());
        }
        if let Some(filled) = filled {
            crate::denormalize::fill::confirm(&self.db, T::schema(), written, filled, session.as_deref_mut()).await?;
        }
        crate::denormalize::fanout::fan_out_inserted(&self.db, T::COLLECTION, written, session.as_deref_mut()).await?;
        self.after_new(written, session.as_deref_mut()).await?;
        if !graph().subsets_of(T::COLLECTION).is_empty() {
            // The summaries in the parents' subsets: one push per parent.
            crate::patterns::subset::after_insert(&self.db, T::COLLECTION, written, session).await?;
        }
        Ok(())
    }

    /// Inserts many documents, in order. Every one is checked first: if any
    /// breaks a bound or the size limit, nothing is written. If the server
    /// refuses one (a duplicate key, say), the ones before it are written
    /// and the rest are not, as with the driver's ordered insert; what is
    /// derived from the ones written (copies, subset summaries) is kept
    /// for exactly those, and the error names the first one refused.
    pub async fn insert_many(&self, docs: &[T]) -> Result<()> {
        self.insert_many_in(docs, None).await
    }

    async fn insert_many_in(&self, docs: &[T], mut session: Option<&mut ClientSession>) -> Result<()> {
        Op::new(if docs.len() == 1 { "insert" } else { "insert_many" }, T::COLLECTION)
            .documents(docs.len())
            .run(async move {
                if docs.is_empty() {
                    return Ok(());
                }
                let Encoded { mut raws, plain, filled } = self.encode_all(docs, true, session.as_deref_mut()).await?;
                let result = if raws.len() == 1 {
                    let raw = raws.pop().ok_or_else(|| Error::Invalid {
                        what: crate::error::Misuse::Insert,
                        message: "nothing encoded".into(),
                    })?;
                    in_session!(self.raw.insert_one(raw), session.as_deref_mut())
                        .map(|_| ())
                        .map_err(self.err("insert"))
                } else {
                    in_session!(self.raw.insert_many(raws), session.as_deref_mut())
                        .map(|_| ())
                        .map_err(self.err("insert_many"))
                };
                match result {
                    Ok(()) => self.after_insert(&plain, filled, session).await,
                    Err(e) => {
                        if !plain.is_empty() {
                            let landed = self.landed(&e, &plain, session.as_deref_mut()).await?;
                            self.after_insert(&plain[..landed], filled, session).await?;
                        }
                        Err(e)
                    }
                }
            })
            .await
    }

    /// How many of `plain` an ordered insert that failed with `e` wrote:
    /// those before the first write error; after an error without one (a
    /// connection lost), those found on the server.
    async fn landed(&self, e: &Error, plain: &[bson::Document], session: Option<&mut ClientSession>) -> Result<usize> {
        if let Error::Driver { source, .. } = e {
            match &*source.kind {
                mongodb::error::ErrorKind::InsertMany(m) => {
                    if let Some(first) = m.write_errors.as_ref().and_then(|w| w.iter().map(|w| w.index).min()) {
                        return Ok(first.min(plain.len()));
                    }
                }
                // The server answered with an error for the whole command
                // (a fail point, a lost election): it wrote nothing.
                mongodb::error::ErrorKind::Write(_) | mongodb::error::ErrorKind::Command(_) => return Ok(0),
                _ => {}
            }
        }
        // No answer: what is stored says. A document with one of the ids
        // that is not the one sent (it was there before) did not land.
        let ids: Vec<bson::Bson> = plain.iter().filter_map(|d| d.get("_id").cloned()).collect();
        let find = self
            .raw
            .find(doc! {"_id": {"$in": ids}})
            .batch_size(plain.len().try_into().unwrap_or(u32::MAX))
            .selection_criteria(crate::denormalize::fill::primary());
        let mut stored = std::collections::HashMap::new();
        for d in collect(find, session, T::COLLECTION, |raw| crate::store::session::plain(T::COLLECTION, raw)).await? {
            if let Some(key) = d.get("_id").map(crate::store::path::id_key) {
                stored.insert(key, d);
            }
        }
        let sent = |d: &bson::Document| {
            let Some(found) = d.get("_id").and_then(|id| stored.get(&crate::store::path::id_key(id))) else {
                return false;
            };
            // docrel's bookkeeping is what the write stamped (a source's
            // first version tells it apart); the fields are the caller's.
            d.iter().all(|(k, v)| found.get(k) == Some(v))
        };
        // An ordered insert writes a prefix.
        Ok(plain.iter().take_while(|d| sent(d)).count())
    }

    /// The document with this id, if any.
    pub async fn get(&self, id: &T::Id) -> Result<Option<T>> {
        self.find(doc! {"_id": id.to_bson()}).one().await
    }

    /// The document with this id, or [`Error::NotFound`].
    pub async fn require(&self, id: &T::Id) -> Result<T> {
        self.get(id).await?.ok_or_else(|| Error::NotFound { collection: T::COLLECTION, id: show(id) })
    }

    /// The documents matching a filter; set options, then run it with
    /// [`Find::to_vec`], [`Find::one`] or [`Find::stream`].
    pub fn find(&self, filter: impl Into<Filter>) -> Find<T, T> {
        Find::new(self.raw.clone(), filter)
    }

    /// How many documents match.
    pub async fn count(&self, filter: impl Into<Filter>) -> Result<u64> {
        self.count_in(filter, None).await
    }

    async fn count_in(&self, filter: impl Into<Filter>, session: Option<&mut ClientSession>) -> Result<u64> {
        Op::new("count", T::COLLECTION)
            .run_counted(
                async move {
                    let filter = filter.into().into_document()?;
                    in_session!(self.raw.count_documents(filter), session).map_err(self.err("count"))
                },
                |n| Some(*n as usize),
            )
            .await
    }

    /// Applies an update to the document with this id. A push into a bounded
    /// array happens only while the array has room for every pushed element,
    /// atomically (the filter requires index `max - n` to be absent), so
    /// concurrent pushes never pass the bound; otherwise the result is
    /// [`Error::EmbedFull`] and nothing is written. A missing document is
    /// [`Error::NotFound`].
    ///
    /// A type sharded on more than `_id` updates one document with
    /// [`Repository::update_one`] and a filter on its whole shard key
    /// instead (see [`crate::RoutedById`]).
    // A boxed future, not an `async fn`: rustc reports an unmet bound of an
    // `async fn` three times (the call, its future, the `.await`), of a
    // plain `fn` with a concrete return type once.
    pub fn update_by_id<'a>(&'a self, id: &'a T::Id, update: Update<T>) -> BoxFuture<'a, Result<UpdateOutcome>>
    where
        T: crate::schema::document::RoutedById,
    {
        Box::pin(self.update_by_id_in(id, update, None))
    }

    // A plain `fn`: an `async fn` around the span's future would hold the
    // update twice and make the boxed future of every update by id larger
    // than the allocator's fast sizes.
    fn update_by_id_in<'a>(
        &'a self,
        id: &'a T::Id,
        update: Update<T>,
        mut session: Option<&'a mut ClientSession>,
    ) -> impl std::future::Future<Output = Result<UpdateOutcome>> + Send + 'a {
        Op::new("update_by_id", T::COLLECTION).run_counted(
            async move {
                let outcome = match self.update_stamped(id, &update, session.as_deref_mut()).await? {
                    Some(outcome) => outcome,
                    // Boxed: the general way's future is large, and the
                    // common write above should not carry (and copy) it.
                    None => {
                        let filter = doc! {"_id": id.to_bson()};
                        Box::pin(self.update_where(
                            filter,
                            &update,
                            Scope::OneUnstamped,
                            Some(id.to_bson()),
                            session.as_deref_mut(),
                        ))
                        .await?
                    }
                };
                if outcome.matched == 0 {
                    return Err(self.explain_unmatched(id, &update, session).await?);
                }
                Ok(outcome)
            },
            |o: &UpdateOutcome| Some(o.modified as usize),
        )
    }

    /// The common update by id, the short way: a write that only `$set`s
    /// every field derived from this type (nothing pushed, no two-way or
    /// held field touched, fan-out neither deferred nor transactional) is
    /// one stamped `update` and its fan-out (see
    /// [`fanout::stamped_by_id`]). `None` when the write is not of that
    /// kind, or matched nothing (missing, never versioned, or a stored
    /// version above this client's clock): the general way then tells
    /// those apart.
    async fn update_stamped(
        &self,
        id: &T::Id,
        update: &Update<T>,
        mut session: Option<&mut ClientSession>,
    ) -> Result<Option<UpdateOutcome>> {
        if self.deferred
            || self.transactional
            || !update.pushes().is_empty()
            || !fanout::touches_derived(T::COLLECTION, update.touched())
            || crate::denormalize::fill::touched_holdings(T::schema(), update.touched())
            || touched_two_way::<T>(update).is_some()
        {
            return Ok(None);
        }
        let Some(set) = update.only_set() else { return Ok(None) };
        let id = id.to_bson();
        let Some((filter, body, stamp)) = fanout::stamped_by_id(T::COLLECTION, &id, set) else {
            return Ok(None);
        };
        let modified = match in_session!(self.raw.update_one(filter, body), session.as_deref_mut()) {
            Ok(r) if r.matched_count == 1 => r.modified_count,
            Ok(_) => return Ok(None),
            Err(e) => return Err(self.err("update_one")(e)),
        };
        // Every derived field was set, so every target is touched, and the
        // copies read their values from the update's own `$set`. A subset
        // reads an image of the source, and the paths, which tell it
        // whether the child may have moved to another parent (which costs
        // a read): here they always do, since the parent field is among
        // the derived fields that were set.
        if graph().subsets_of(T::COLLECTION).is_empty() {
            fanout::fan_out_source(&self.db, T::COLLECTION, &id, stamp, &set, None, session).await?;
        } else {
            // Boxed: its image and the subsets' future would make this one
            // (and every update by id's) larger than the allocator's fast sizes.
            let values = fanout::set_values(T::COLLECTION, &set).unwrap_or_default();
            let after = fanout::after_image(id, stamp, values);
            let touched: Vec<String> = update.touched().map(str::to_owned).collect();
            Box::pin(async move { fanout::fan_out(&self.db, T::COLLECTION, &after, Some(&touched), session).await })
                .await?;
        }
        Ok(Some(UpdateOutcome { matched: 1, modified }))
    }

    /// Applies an update to the first document matching a filter (bounded
    /// pushes guarded as in [`Repository::update_by_id`]). On a sharded type
    /// the filter must fix the whole shard key, so that the write reaches
    /// one shard ([`crate::Misuse::ShardKey`] otherwise).
    pub async fn update_one(&self, filter: impl Into<Filter>, update: Update<T>) -> Result<UpdateOutcome> {
        self.update_matching(filter, update, false, None).await
    }

    /// Applies an update to every document matching a filter. Documents whose
    /// bounded arrays have no room for a push are left out (not matched).
    pub async fn update_many(&self, filter: impl Into<Filter>, update: Update<T>) -> Result<UpdateOutcome> {
        self.update_matching(filter, update, true, None).await
    }

    async fn update_matching(
        &self,
        filter: impl Into<Filter>,
        update: Update<T>,
        many: bool,
        session: Option<&mut ClientSession>,
    ) -> Result<UpdateOutcome> {
        let op = Op::new(if many { "update_many" } else { "update_one" }, T::COLLECTION);
        let work = async move {
            let filter = filter.into().into_document()?;
            if !many {
                crate::schema::shard::check_routed(T::schema(), &filter, "update_one")?;
            }
            self.update_where(filter, &update, Scope::of(many), None, session).await
        };
        op.run_counted(work, |o| Some(o.modified as usize)).await
    }

    async fn update_where(
        &self,
        mut filter: bson::Document,
        update: &Update<T>,
        scope: Scope,
        id: Option<bson::Bson>,
        session: Option<&mut ClientSession>,
    ) -> Result<UpdateOutcome> {
        let mut body = update.to_document()?;
        if let Some(rel) = touched_two_way::<T>(update) {
            return Err(Error::TwoWayField {
                collection: T::COLLECTION,
                field: rel.field,
                inverse: rel.inverse.unwrap_or_default(),
                rust_field: rel.rust_field,
            });
        }
        let mut guards = Vec::new();
        for push in update.pushes() {
            if let Some(max) = push.max {
                if push.count > max as usize {
                    return Err(Error::EmbedFull {
                        collection: T::COLLECTION,
                        id: "(any)".into(),
                        field: push.path,
                        max,
                        len: push.count,
                    });
                }
                if push.count > 0 {
                    guards.push(doc! { format!("{}.{}", push.path, max as usize - push.count): {"$exists": false} });
                }
            }
        }
        if !guards.is_empty() {
            guards.insert(0, std::mem::take(&mut filter));
            filter = doc! {"$and": guards};
        }
        // A write of references or copies this type holds: its holders are
        // known first, and their copies refreshed from the sources after.
        if !crate::denormalize::fill::touched_holdings(T::schema(), update.touched()) {
            return self.write_and_refresh(filter, body, update, scope, None, session).await;
        }
        crate::denormalize::fill::prune_pulled(T::schema(), &mut body);
        if let Some(id) = id {
            return self.write_and_refresh(filter, body, update, scope, Some(vec![id]), session).await;
        }
        // Boxed, as are the other rare branches of an update: the future of
        // every update would otherwise be as large as its largest branch,
        // and it is copied each time it moves.
        Box::pin(self.update_holders_by_page(filter, body, update, scope, session)).await
    }

    /// An update of references or copies by a filter, page by page (bounded
    /// memory and `$in`): each page's write, then the refresh of its
    /// holders. One document needs the first page only.
    async fn update_holders_by_page(
        &self,
        filter: bson::Document,
        body: bson::Document,
        update: &Update<T>,
        scope: Scope,
        mut session: Option<&mut ClientSession>,
    ) -> Result<UpdateOutcome> {
        let mut outcome = UpdateOutcome::default();
        let mut after = None;
        while let Some(page) = self.id_page(&filter, after, session.as_deref_mut()).await? {
            after = page.last().cloned();
            let scoped = doc! {"$and": [filter.clone(), {"_id": {"$in": page.clone()}}]};
            let o =
                self.write_and_refresh(scoped, body.clone(), update, scope, Some(page), session.as_deref_mut()).await?;
            outcome.matched += o.matched;
            outcome.modified += o.modified;
            if !scope.many() && outcome.matched > 0 {
                break;
            }
        }
        Ok(outcome)
    }

    /// The write itself (with its fan-out when it changes copied fields),
    /// then the refresh of the copies `holders` hold when it brought new
    /// references.
    async fn write_and_refresh(
        &self,
        filter: bson::Document,
        body: bson::Document,
        update: &Update<T>,
        scope: Scope,
        holders: Option<Vec<bson::Bson>>,
        mut session: Option<&mut ClientSession>,
    ) -> Result<UpdateOutcome> {
        let outcome = if crate::denormalize::fanout::touches_derived(T::COLLECTION, update.touched()) {
            let touched: Vec<String> = update.touched().map(str::to_owned).collect();
            self.update_and_fan_out(filter, body, &touched, scope, session.as_deref_mut()).await?
        } else {
            let result = if scope.many() {
                in_session!(self.raw.update_many(filter, body), session.as_deref_mut())
                    .map_err(self.err("update_many"))?
            } else {
                in_session!(self.raw.update_one(filter, body), session.as_deref_mut())
                    .map_err(self.err("update_one"))?
            };
            UpdateOutcome { matched: result.matched_count, modified: result.modified_count }
        };
        // Pulls alone bring no new reference: nothing to fill.
        let adds = holders.is_some() && body_adds(&update.to_document()?);
        if let (Some(ids), true) = (holders, adds) {
            if outcome.matched > 0 {
                Box::pin(crate::denormalize::fill::refresh(&self.db, T::schema(), &ids, session)).await?;
            }
        }
        Ok(outcome)
    }

    /// An update of copied fields: the write increments the source's
    /// version and reads back the new values in the same round trip
    /// (`findAndModify`), then each target path gets one `updateMany`.
    async fn update_and_fan_out(
        &self,
        filter: bson::Document,
        mut body: bson::Document,
        touched: &[String],
        scope: Scope,
        mut session: Option<&mut ClientSession>,
    ) -> Result<UpdateOutcome> {
        let many = scope.many();
        // Only a source with copies elsewhere carries a version: a subset
        // child's summaries are rewritten from the write's own result.
        if !fanout::targets_of(T::COLLECTION).is_empty() {
            match body.get_mut("$inc") {
                Some(bson::Bson::Document(inc)) => {
                    inc.insert(fanout::VERSION_PATH, 1_i64);
                }
                _ => {
                    body.insert("$inc", doc! { fanout::VERSION_PATH: 1_i64 });
                }
            }
        }
        if self.deferred {
            let r = if many {
                in_session!(self.raw.update_many(filter, body), session.as_deref_mut())
                    .map_err(self.err("update_many"))?
            } else {
                in_session!(self.raw.update_one(filter, body), session.as_deref_mut())
                    .map_err(self.err("update_one"))?
            };
            return Ok(UpdateOutcome { matched: r.matched_count, modified: r.modified_count });
        }
        // A single write that `$set`s every derived field knows what to fan
        // out: it reads back only its version (fewer bytes, less decoding).
        let known = if many { None } else { fanout::known_values(T::COLLECTION, &body) };
        let projection = match known {
            Some(_) => Some(fanout::version_projection()),
            None => fanout::source_projection(T::COLLECTION),
        };
        if !many && self.transactional {
            return Box::pin(self.update_and_fan_out_in_transaction(filter, body, projection, known, touched, session))
                .await;
        }
        if let (Scope::One, Some(values)) = (scope, &known) {
            if let Some((stamped, set, after)) = fanout::stamped(&filter, &body, values) {
                let r = in_session!(self.raw.update_one(stamped, set), session.as_deref_mut())
                    .map_err(self.err("update_one"))?;
                if r.matched_count == 1 {
                    fanout::fan_out(&self.db, T::COLLECTION, &after, Some(touched), session).await?;
                    return Ok(UpdateOutcome { matched: 1, modified: r.modified_count });
                }
            }
        }
        if !many {
            let after = in_session!(
                self.raw
                    .find_one_and_update(filter, body)
                    .return_document(ReturnDocument::After)
                    .optional(projection, |a, p| a.projection(p)),
                session.as_deref_mut()
            )
            .map_err(self.err("findAndModify"))?;
            let Some(after) = after else { return Ok(UpdateOutcome::default()) };
            let after = updated::<T>(&after, known)?;
            fanout::fan_out(&self.db, T::COLLECTION, &after, Some(touched), session).await?;
            return Ok(UpdateOutcome { matched: 1, modified: 1 });
        }
        Box::pin(self.update_many_and_fan_out(filter, body, projection, touched, session)).await
    }

    /// An update of copied fields of many sources, page by page (bounded
    /// memory and `$in`): their ids, one update, their new values, then
    /// each source's fan-out.
    async fn update_many_and_fan_out(
        &self,
        filter: bson::Document,
        body: bson::Document,
        projection: Option<bson::Document>,
        touched: &[String],
        mut session: Option<&mut ClientSession>,
    ) -> Result<UpdateOutcome> {
        let mut outcome = UpdateOutcome::default();
        let mut after = None;
        while let Some(ids) = self.id_page(&filter, after, session.as_deref_mut()).await? {
            after = ids.last().cloned();
            let scoped = doc! {"$and": [filter.clone(), {"_id": {"$in": ids.clone()}}]};
            let r = in_session!(self.raw.update_many(scoped, body.clone()), session.as_deref_mut())
                .map_err(self.err("update_many"))?;
            outcome.matched += r.matched_count;
            outcome.modified += r.modified_count;
            let find = self
                .raw
                .find(doc! {"_id": {"$in": ids}})
                .optional(projection.clone(), |a, p| a.projection(p))
                .batch_size(crate::relations::on_delete::BATCH as u32);
            let changed = collect(find, session.as_deref_mut(), T::COLLECTION, |raw| {
                crate::store::session::plain(T::COLLECTION, raw)
            })
            .await?;
            for after in &changed {
                fanout::fan_out(&self.db, T::COLLECTION, after, Some(touched), session.as_deref_mut()).await?;
            }
        }
        Ok(outcome)
    }

    /// The source write and its copies' fan-out in one transaction (the
    /// driver's convenient API: the body is retried on a transient error,
    /// only the commit on an unknown commit result); the subsets are
    /// rebuilt after the commit, from the committed state. In the caller's
    /// transaction when its session is in one: no nested transaction.
    async fn update_and_fan_out_in_transaction(
        &self,
        filter: bson::Document,
        body: bson::Document,
        projection: Option<bson::Document>,
        known: Option<bson::Document>,
        touched: &[String],
        mut session: Option<&mut ClientSession>,
    ) -> Result<UpdateOutcome> {
        let raw = self.raw.clone();
        let db = self.db.clone();
        let after: Option<bson::Document> = crate::store::transaction::run_or_join(
            &self.db,
            session.as_deref_mut(),
            "transactional fan-out",
            &mut |session| {
                let (raw, db, filter, body, projection, known) =
                    (raw.clone(), db.clone(), filter.clone(), body.clone(), projection.clone(), known.clone());
                let touched = touched.to_vec();
                Box::pin(async move {
                    let after = raw
                        .find_one_and_update(filter, body)
                        .return_document(ReturnDocument::After)
                        .optional(projection, |a, p| a.projection(p))
                        .session(&mut *session)
                        .await
                        .map_err(|e| Error::driver("findAndModify", T::COLLECTION, e))?;
                    let Some(after) = after else { return Ok(None) };
                    let after = updated::<T>(&after, known)?;
                    fanout::fan_out_copies(&db, T::COLLECTION, &after, Some(&touched), Some(session)).await?;
                    Ok(Some(after))
                })
            },
        )
        .await
        .map_err(|e| match e {
            e if crate::store::transaction::unsupported(&e) => Error::Invalid {
                what: crate::error::Misuse::TransactionalFanOut,
                message: format!(
                    "this deployment has no transactions ({e}); use a replica set or sharded cluster, or drop \
                     `transactional_fan_out()`"
                ),
            },
            e => e,
        })?;
        let Some(after) = after else { return Ok(UpdateOutcome::default()) };
        crate::patterns::subset::after_change(&self.db, T::COLLECTION, None, &after, Some(touched), session).await?;
        Ok(UpdateOutcome { matched: 1, modified: 1 })
    }

    /// A replace (or upsert) of a document something is derived from: in
    /// the same atomic write the copy records are those of the fill, not
    /// the stored ones, and (for a source with copies elsewhere) the version
    /// moves on when a derived field changes; then the copies and summaries
    /// of the changed fields are rewritten.
    ///
    /// A source's fan-out takes its version and values from the image
    /// *after* the write, never from the one before it: both are atomic
    /// with the write on MongoDB, but the embedded test server returns a
    /// pre-image read before it takes its lock, so two racing replaces
    /// could both fan out the same version with different values. Which
    /// fields changed and whether the document is new are then told by the
    /// version itself (see [`fanout::replace_version`]).
    async fn replace_source(
        &self,
        doc: &T,
        new: bson::Document,
        upsert: bool,
        mut session: Option<&mut ClientSession>,
    ) -> Result<Option<bool>> {
        let g = graph();
        let versioned = !g.targets_of(T::COLLECTION).is_empty();
        let mut bookkeeping = vec![bson::Bson::Document(doc! {"$ifNull": ["$_docrel", {}]})];
        if g.holds_copies(T::schema()) {
            let copies = new.get_document("_docrel").ok().and_then(|d| d.get_document("copies").ok()).cloned();
            bookkeeping.push(doc! {"copies": {"$literal": copies.unwrap_or_default()}}.into());
        }
        let mut body = new.clone();
        body.remove("_docrel");
        let stamp = fanout::first_version();
        if versioned {
            bookkeeping.push(doc! {"v": fanout::replace_version(g.derived_fields(T::COLLECTION), &body, stamp)}.into());
        }
        // What docrel keeps is taken from the stored document, not the
        // caller's copy of it: two-way references (changed through
        // link/unlink/reassign) and subsets (kept from the children).
        let mut kept = bson::Document::new();
        for rel in g.two_way_of(T::schema()) {
            kept.insert(rel.field, format!("${}", rel.field));
        }
        for subset in g.subsets_kept_by(T::schema()) {
            kept.insert(subset.rel.field, format!("${}", subset.rel.field));
        }
        let bookkeeping = if bookkeeping.len() == 1 {
            bson::Bson::String("$_docrel".into())
        } else {
            doc! {"$mergeObjects": bookkeeping}.into()
        };
        let pipeline = vec![doc! {"$replaceWith": {"$mergeObjects": [
            {"$literal": body},
            kept,
            {"_docrel": bookkeeping},
        ]}}];
        let image = if versioned { ReturnDocument::After } else { ReturnDocument::Before };
        let image = in_session!(
            self.raw
                .find_one_and_update(crate::schema::shard::key_filter(T::schema(), doc.id().to_bson(), &new), pipeline)
                .upsert(upsert)
                .return_document(image)
                .optional(fanout::source_projection(T::COLLECTION), |a, p| a.projection(p)),
            session.as_deref_mut()
        )
        .map_err(self.err("findAndModify"))?;
        let image = match image {
            Some(b) => Some(bson::Document::try_from(b.as_ref()).unwrap_or_default()),
            None if upsert => None,
            None => return Ok(None),
        };
        if versioned {
            let after = image.unwrap_or_default();
            let (created, changed) = fanout::replace_outcome(fanout::version_of(&after), stamp);
            if changed && !self.deferred {
                fanout::fan_out(&self.db, T::COLLECTION, &after, None, session).await?;
            }
            return Ok(Some(created));
        }
        let before = image;
        let empty = bson::Document::new();
        let old = before.as_ref().unwrap_or(&empty);
        let touched: Vec<String> = match g.derived_fields(T::COLLECTION) {
            Some(fields) => {
                fields.iter().filter(|f| lookup(old, f) != lookup(&new, f)).map(|f| (*f).to_owned()).collect()
            }
            None => new.keys().filter(|k| old.get(*k) != new.get(*k)).cloned().collect(),
        };
        if !touched.is_empty() && !self.deferred {
            let before = before.as_ref();
            crate::patterns::subset::after_change(&self.db, T::COLLECTION, before, &new, Some(&touched), session)
                .await?;
        }
        Ok(Some(before.is_none()))
    }

    /// Replace or save: fill, write, confirm.
    async fn put(&self, doc: &T, upsert: bool, mut session: Option<&mut ClientSession>) -> Result<bool> {
        let Encoded { mut raws, plain, filled } =
            self.encode_all(std::slice::from_ref(doc), upsert, session.as_deref_mut()).await?;
        let raw = raws
            .pop()
            .ok_or_else(|| Error::Invalid { what: crate::error::Misuse::Replace, message: "nothing encoded".into() })?;
        let g = graph();
        let keeps = g.holds_copies(T::schema())
            || !g.two_way_of(T::schema()).is_empty()
            || !g.subsets_kept_by(T::schema()).is_empty();
        let written = if g.has_derived(T::COLLECTION) || keeps {
            let new = match plain.first() {
                Some(p) => p.clone(),
                None => bson::Document::try_from(raw.as_ref()).map_err(|e| Error::Encode {
                    what: format!("a document of `{}`", T::COLLECTION),
                    message: e.to_string(),
                })?,
            };
            self.replace_source(doc, new, upsert, session.as_deref_mut()).await?
        } else {
            let filter = match T::SHARD_KEY.is_empty() {
                true => doc! {"_id": doc.id().to_bson()},
                false => crate::schema::shard::key_filter(T::schema(), doc.id().to_bson(), &plain_or(&plain, &raw)?),
            };
            let r = in_session!(self.raw.replace_one(filter, raw.clone()).upsert(upsert), session.as_deref_mut())
                .map_err(self.err("replace"))?;
            (r.matched_count > 0 || r.upserted_id.is_some()).then_some(r.upserted_id.is_some())
        };
        if written == Some(true) {
            self.after_new(std::slice::from_ref(&plain_or(&plain, &raw)?), session.as_deref_mut()).await?;
        }
        let written = written.is_some();
        if written {
            if let Some(filled) = filled {
                crate::denormalize::fill::confirm(&self.db, T::schema(), &plain, filled, session).await?;
            }
        }
        Ok(written)
    }

    /// What a new document of `T` owes the documents around it: the other
    /// side of its two-way references, and the subsets it keeps of children
    /// that already exist.
    async fn after_new(&self, docs: &[bson::Document], mut session: Option<&mut ClientSession>) -> Result<()> {
        let g = graph();
        for rel in g.two_way_of(T::schema()) {
            for d in docs {
                let Some(x) = d.get("_id") else { continue };
                let targets: Vec<bson::Bson> = match d.get(rel.field) {
                    Some(bson::Bson::Array(ids)) => ids.clone(),
                    Some(bson::Bson::Null) | None => Vec::new(),
                    Some(id) => vec![id.clone()],
                };
                for y in targets {
                    let linked = crate::relations::two_way::link(
                        &self.db,
                        T::schema(),
                        rel,
                        x.clone(),
                        y,
                        session.as_deref_mut(),
                    );
                    match linked.await {
                        // A reference to a document not there yet: it links back when it is inserted.
                        Err(Error::NotFound { collection, .. }) if Some(collection) == rel.target => {}
                        other => {
                            other?;
                        }
                    }
                }
            }
        }
        for subset in g.subsets_kept_by(T::schema()) {
            let ids: Vec<bson::Bson> = docs.iter().filter_map(|d| d.get("_id").cloned()).collect();
            let children = self.db.collection::<bson::Document>(subset.spec.child);
            let with_children = in_session!(
                children
                    .distinct(subset.parent_field, doc! { subset.parent_field: {"$in": ids} })
                    .selection_criteria(crate::store::primary()),
                session.as_deref_mut()
            )
            .map_err(|e| Error::driver("distinct", subset.spec.child, e))?;
            for parent in with_children {
                subset.rebuild_in(&self.db, &parent, session.as_deref_mut()).await?;
            }
        }
        Ok(())
    }

    #[cold]
    async fn explain_unmatched(
        &self,
        id: &T::Id,
        update: &Update<T>,
        session: Option<&mut ClientSession>,
    ) -> Result<Error> {
        let bounded: Vec<_> = update.pushes().iter().filter(|p| p.max.is_some()).collect();
        let mut projection = doc! {"_id": 1};
        for p in &bounded {
            projection.insert(p.path, doc! {"$size": {"$ifNull": [format!("${}", p.path), []]}});
        }
        let found = in_session!(self.raw.find_one(doc! {"_id": id.to_bson()}).projection(projection), session)
            .map_err(self.err("find"))?;
        let Some(found) = found else {
            return Ok(Error::NotFound { collection: T::COLLECTION, id: show(id) });
        };
        for p in bounded {
            let len = found.get_i32(p.path).map(|l| l as usize).unwrap_or(0);
            let max = p.max.unwrap_or(u32::MAX);
            if len + p.count > max as usize {
                return Ok(Error::EmbedFull {
                    collection: T::COLLECTION,
                    id: show(id),
                    field: p.path,
                    max,
                    len: len + p.count,
                });
            }
        }
        // It existed and had room when read back: a concurrent change removed
        // it or made room between the two reads. Report what the write saw.
        Ok(Error::NotFound { collection: T::COLLECTION, id: show(id) })
    }

    /// Replaces the stored document with the same id, after checking bounds
    /// and size; [`Error::NotFound`] when there is none. Its copies are
    /// filled from their sources and confirmed after the write.
    pub async fn replace(&self, doc: &T) -> Result<()> {
        self.replace_in(doc, None).await
    }

    async fn replace_in(&self, doc: &T, session: Option<&mut ClientSession>) -> Result<()> {
        Op::new("replace", T::COLLECTION)
            .documents(1)
            .run(async move {
                match self.put(doc, false, session).await? {
                    true => Ok(()),
                    false => Err(Error::NotFound { collection: T::COLLECTION, id: show(doc.id()) }),
                }
            })
            .await
    }

    /// Inserts the document, or replaces the stored one with the same id
    /// (copies filled and confirmed as in [`Repository::replace`]).
    pub async fn save(&self, doc: &T) -> Result<()> {
        self.save_in(doc, None).await
    }

    async fn save_in(&self, doc: &T, session: Option<&mut ClientSession>) -> Result<()> {
        Op::new("save", T::COLLECTION)
            .documents(1)
            .run(async move { self.put(doc, true, session).await.map(|_| ()) })
            .await
    }

    /// Deletes the document with this id, applying the `on_delete` rules of
    /// every reference to `T` (see [`crate::OnDelete`]). Returns whether it
    /// existed. A type sharded on more than `_id` deletes with
    /// [`Repository::delete`] or [`Repository::delete_one`] instead (see
    /// [`crate::RoutedById`]).
    pub fn delete_by_id<'a>(&'a self, id: &'a T::Id) -> BoxFuture<'a, Result<bool>>
    where
        T: crate::schema::document::RoutedById,
    {
        Box::pin(self.delete_by_id_in(id, None))
    }

    async fn delete_by_id_in(&self, id: &T::Id, session: Option<&mut ClientSession>) -> Result<bool> {
        Op::new("delete_by_id", T::COLLECTION)
            .run_counted(self.delete_found(id.to_bson(), doc! {"_id": id.to_bson()}, session), |d| Some(*d as usize))
            .await
    }

    /// Deletes this document, found by its `_id` and shard key, applying
    /// the `on_delete` rules as [`Repository::delete_by_id`] does. Returns
    /// whether it existed.
    pub async fn delete(&self, doc: &T) -> Result<bool> {
        self.delete_in(doc, None).await
    }

    async fn delete_in(&self, doc: &T, session: Option<&mut ClientSession>) -> Result<bool> {
        let id = doc.id().to_bson();
        let filter = match T::SHARD_KEY.is_empty() {
            true => doc! {"_id": id.clone()},
            false => {
                let stored = bson_compat::to_document(doc).map_err(|e| Error::Encode {
                    what: format!("a document of `{}`", T::COLLECTION),
                    message: e.to_string(),
                })?;
                crate::schema::shard::key_filter(T::schema(), id.clone(), &stored)
            }
        };
        Op::new("delete", T::COLLECTION)
            .run_counted(self.delete_found(id, filter, session), |d| Some(*d as usize))
            .await
    }

    /// Deletes the first document matching a filter, applying the
    /// `on_delete` rules to it. On a sharded type the filter must fix the
    /// whole shard key ([`crate::Misuse::ShardKey`] otherwise). Returns
    /// whether one was deleted.
    pub async fn delete_one(&self, filter: impl Into<Filter>) -> Result<bool> {
        self.delete_one_in(filter, None).await
    }

    async fn delete_one_in(&self, filter: impl Into<Filter>, mut session: Option<&mut ClientSession>) -> Result<bool> {
        let work = async move {
            let filter = filter.into().into_document()?;
            crate::schema::shard::check_routed(T::schema(), &filter, "delete_one")?;
            // The rules run for exactly the document found, and exactly it
            // is deleted.
            let found = in_session!(
                self.raw
                    .find_one(filter.clone())
                    .projection(doc! {"_id": 1})
                    .selection_criteria(crate::store::primary()),
                session.as_deref_mut()
            )
            .map_err(self.err("find"))?;
            let Some(id) = found.and_then(|d| d.get("_id").ok().flatten().and_then(|id| bson::Bson::try_from(id).ok()))
            else {
                return Ok(false);
            };
            let filter = doc! {"$and": [filter, {"_id": id.clone()}]};
            self.delete_found(id, filter, session).await
        };
        Op::new("delete_one", T::COLLECTION).run_counted(work, |d| Some(*d as usize)).await
    }

    /// Deletes the document `id` with a filter that finds it (and routes to
    /// its shard), after its `on_delete` rules.
    async fn delete_found(
        &self,
        id: bson::Bson,
        filter: bson::Document,
        mut session: Option<&mut ClientSession>,
    ) -> Result<bool> {
        if crate::relations::on_delete::has_rules(T::COLLECTION) {
            let ids = std::slice::from_ref(&id);
            crate::relations::on_delete::check(&self.db, T::COLLECTION, ids, session.as_deref_mut()).await?;
            crate::relations::on_delete::apply_checked(&self.db, T::COLLECTION, ids, session.as_deref_mut()).await?;
        }
        let parents = self.subset_parents(&filter, session.as_deref_mut()).await?;
        let r = in_session!(self.raw.delete_one(filter), session.as_deref_mut()).map_err(self.err("delete"))?;
        if r.deleted_count == 1 && !parents.is_empty() {
            crate::patterns::subset::after_delete(&self.db, T::COLLECTION, parents, session).await?;
        }
        Ok(r.deleted_count == 1)
    }

    /// Deletes every document matching a filter, applying the `on_delete`
    /// rules to each. The documents are found first and exactly those are
    /// deleted, so one inserted while the rules run is not deleted without
    /// its rules. Returns how many were deleted.
    pub async fn delete_many(&self, filter: impl Into<Filter>) -> Result<u64> {
        self.delete_many_in(filter, None).await
    }

    async fn delete_many_in(&self, filter: impl Into<Filter>, mut session: Option<&mut ClientSession>) -> Result<u64> {
        let op = Op::new("delete_many", T::COLLECTION);
        let work = async move {
            let filter = filter.into().into_document()?;
            if !crate::relations::on_delete::has_rules(T::COLLECTION) {
                let parents = self.subset_parents(&filter, session.as_deref_mut()).await?;
                let r = in_session!(self.raw.delete_many(filter), session.as_deref_mut())
                    .map_err(self.err("delete_many"))?;
                if r.deleted_count > 0 && !parents.is_empty() {
                    crate::patterns::subset::after_delete(&self.db, T::COLLECTION, parents, session).await?;
                }
                return Ok(r.deleted_count);
            }
            // The rules run page by page, so memory and every `$in` stay
            // bounded however many documents match; a `restrict` is checked
            // on every page before any is written.
            let mut after = None;
            while let Some(page) = self.id_page(&filter, after, session.as_deref_mut()).await? {
                after = page.last().cloned();
                crate::relations::on_delete::check(&self.db, T::COLLECTION, &page, session.as_deref_mut()).await?;
            }
            let mut deleted = 0;
            let mut after = None;
            while let Some(page) = self.id_page(&filter, after, session.as_deref_mut()).await? {
                after = page.last().cloned();
                let on_delete = crate::relations::on_delete::apply_checked;
                on_delete(&self.db, T::COLLECTION, &page, session.as_deref_mut()).await?;
                // Exactly the documents found, so one inserted while the
                // rules ran is not deleted without its rules.
                let filter = doc! {"$and": [filter.clone(), {"_id": {"$in": page}}]};
                let parents = self.subset_parents(&filter, session.as_deref_mut()).await?;
                let r = in_session!(self.raw.delete_many(filter), session.as_deref_mut())
                    .map_err(self.err("delete_many"))?;
                deleted += r.deleted_count;
                if r.deleted_count > 0 && !parents.is_empty() {
                    crate::patterns::subset::after_delete(&self.db, T::COLLECTION, parents, session.as_deref_mut())
                        .await?;
                }
            }
            Ok(deleted)
        };
        op.run_counted(work, |n| Some(*n as usize)).await
    }

    /// The parents whose subsets may summarize the documents `filter` matches.
    async fn subset_parents(
        &self,
        filter: &bson::Document,
        session: Option<&mut ClientSession>,
    ) -> Result<Vec<(usize, bson::Bson)>> {
        if crate::patterns::subset::subsets_of(T::COLLECTION).is_empty() {
            return Ok(Vec::new());
        }
        crate::patterns::subset::parents_of(&self.db, T::COLLECTION, filter, session).await
    }

    /// The next page of at most [`crate::relations::on_delete::BATCH`]
    /// ids matching `filter`, after `after` in `_id` order.
    async fn id_page(
        &self,
        filter: &bson::Document,
        after: Option<bson::Bson>,
        session: Option<&mut ClientSession>,
    ) -> Result<Option<Vec<bson::Bson>>> {
        let batch = crate::relations::on_delete::BATCH;
        let filter = match after {
            Some(after) => doc! {"$and": [filter.clone(), {"_id": {"$gt": after}}]},
            None => filter.clone(),
        };
        let find = self
            .raw
            .find(filter)
            .projection(doc! {"_id": 1})
            .sort(doc! {"_id": 1})
            .limit(batch as i64)
            .batch_size(batch as u32)
            .selection_criteria(crate::store::primary());
        let ids = collect(find, session, T::COLLECTION, |raw| {
            Ok(raw.get("_id").ok().flatten().and_then(|id| bson::Bson::try_from(id).ok()))
        })
        .await?;
        let page: Vec<bson::Bson> = ids.into_iter().flatten().collect();
        Ok((!page.is_empty()).then_some(page))
    }

    /// Creates the indexes the document type declares and the ones its
    /// relationships need (one `createIndexes` command), returning their names.
    pub async fn ensure_indexes(&self) -> Result<Vec<String>> {
        let models = crate::schema::indexes::needed_by(T::schema());
        if models.is_empty() {
            return Ok(Vec::new());
        }
        let created = self.raw.create_indexes(models).await.map_err(self.err("createIndexes"))?;
        Ok(created.index_names)
    }
}

impl<T: Document> Repository<T> {
    /// Installs a `$jsonSchema` validator with `maxItems` for every bounded
    /// array of `T`, so the server itself refuses a write that would pass a
    /// bound, whoever writes (the collection is created if needed). Returns
    /// the validator, or `None` when `T` declares no bound (nothing is sent).
    pub async fn ensure_validator(&self) -> Result<Option<bson::Document>> {
        let Some(validator) = crate::schema::indexes::validator(T::schema()) else { return Ok(None) };
        let command = doc! {"collMod": T::COLLECTION, "validator": validator.clone(), "validationLevel": "strict"};
        match self.db.run_command(command).await {
            Ok(_) => {}
            // NamespaceNotFound: create the collection with the validator instead.
            Err(e) if matches!(*e.kind, mongodb::error::ErrorKind::Command(ref c) if c.code == 26) => {
                self.db
                    .create_collection(T::COLLECTION)
                    .validator(validator.clone())
                    .await
                    .map_err(self.err("create"))?;
            }
            Err(e) => return Err(Error::driver("collMod", T::COLLECTION, e)),
        }
        Ok(Some(validator))
    }
}

/// The document as BSON: the encoded one when there is one.
fn plain_or(plain: &[bson::Document], raw: &RawDocumentBuf) -> Result<bson::Document> {
    match plain.first() {
        Some(p) => Ok(p.clone()),
        None => bson::Document::try_from(raw.as_ref())
            .map_err(|e| Error::Encode { what: "a document".into(), message: e.to_string() }),
    }
}

/// A source document read back after its write, with the values the write
/// is known to have set (see [`fanout::known_values`]).
fn updated<T: Document>(after: &RawDocumentBuf, known: Option<bson::Document>) -> Result<bson::Document> {
    let mut after = bson::Document::try_from(after.as_ref()).map_err(|e| Error::Encode {
        what: format!("the updated document of `{}`", T::COLLECTION),
        message: e.to_string(),
    })?;
    after.extend(known.unwrap_or_default());
    Ok(after)
}

/// The first two-way reference of `T` that `update` writes: such fields
/// change only through link/unlink/reassign.
fn touched_two_way<T: Document>(update: &Update<T>) -> Option<&'static crate::schema::document::Relation> {
    graph().two_way_iter(T::schema()).find(|r| update.touched().any(|t| crate::store::path::overlaps(r.field, t)))
}

/// What an update applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// The first matching document.
    One,
    /// The first matching document, whose stamped write (see
    /// [`fanout::stamped`]) was tried already and matched nothing: the
    /// write reads back instead of trying again.
    OneUnstamped,
    /// Every matching document.
    Many,
}

impl Scope {
    fn of(many: bool) -> Scope {
        if many {
            Scope::Many
        } else {
            Scope::One
        }
    }

    fn many(self) -> bool {
        self == Scope::Many
    }
}

/// Whether an update document does more than remove (`$pull`, `$unset`).
fn body_adds(body: &bson::Document) -> bool {
    body.keys().any(|op| !matches!(op.as_str(), "$pull" | "$pullAll" | "$unset"))
}

/// Documents encoded for a write.
struct Encoded {
    raws: Vec<RawDocumentBuf>,
    /// The same as BSON documents, when something is derived from or held by them.
    plain: Vec<bson::Document>,
    /// The sources their copies were filled from.
    filled: Option<Sources>,
}

/// Sets an option only when there is a value for it.
trait Optional: Sized {
    fn optional<V>(self, value: Option<V>, set: impl FnOnce(Self, V) -> Self) -> Self {
        match value {
            Some(v) => set(self, v),
            None => self,
        }
    }
}
impl<T> Optional for T {}
