//! An update of documents of one type, planned once: whether it changes a
//! field something is derived from, whether it writes references or copies
//! the type holds, and which way it runs. Every fact is computed in
//! [`UpdatePlan::new`] and read from there.

use super::outcome::{Mode, Optional, Scope, UpdateOutcome};
use crate::denormalize::{fanout, fill};
use crate::error::{Error, Result};
use crate::schema::document::{Document, Relation};
use crate::schema::graph::graph;
use crate::store::session::{in_session, Cx};
use crate::store::update::Update;
use mongodb::bson::{doc, Bson, Document as BsonDoc, RawDocumentBuf};
use mongodb::options::ReturnDocument;
use mongodb::Collection;

/// The plan of one update of documents of `T`.
pub(crate) struct UpdatePlan<'u, T> {
    pub(super) raw: &'u Collection<RawDocumentBuf>,
    pub(super) update: &'u Update<T>,
    pub(super) mode: Mode,
    /// It changes a field something is derived from: a copy elsewhere or a
    /// subset summary (then the write versions the source and fans out).
    derived: bool,
    /// It writes references or copies `T` holds: the holders are known
    /// first and their copies refreshed from the sources after.
    holdings: bool,
    /// `T` is summarized in a subset.
    summarized: bool,
}

impl<'u, T: Document> UpdatePlan<'u, T> {
    /// The plan of `update` on `raw` (the collection of `T`). Refuses a
    /// write of a two-way reference: those change only through
    /// link/unlink/reassign.
    pub(crate) fn new(raw: &'u Collection<RawDocumentBuf>, update: &'u Update<T>, mode: Mode) -> Result<Self> {
        if let Some(rel) = touched_two_way(update) {
            return Err(Error::TwoWayField {
                collection: T::COLLECTION,
                field: rel.field,
                inverse: rel.inverse.unwrap_or_default(),
                rust_field: rel.rust_field,
            });
        }
        if let Some(message) = touched_maintained(update) {
            return Err(Error::Invalid { what: crate::error::Misuse::Update, message });
        }
        Ok(UpdatePlan {
            raw,
            update,
            mode,
            derived: fanout::touches_derived(T::COLLECTION, update.touched()),
            holdings: fill::touched_holdings(T::schema(), update.touched()),
            summarized: !graph().subsets_of(T::COLLECTION).is_empty(),
        })
    }

    pub(super) fn err(operation: &'static str) -> impl FnOnce(mongodb::error::Error) -> Error {
        move |e| Error::driver(operation, T::COLLECTION, e)
    }

    fn touched(&self) -> Vec<String> {
        self.update.touched().map(str::to_owned).collect()
    }

    /// The update of the document `id`: the short way when it qualifies
    /// (see [`UpdatePlan::stamped_by_id`]), else the general way, which
    /// also tells apart why a stamped write matched nothing.
    pub(crate) async fn by_id(&self, cx: &mut Cx<'_>, id: Bson) -> Result<UpdateOutcome> {
        if let Some(outcome) = self.stamped_by_id(cx, &id).await? {
            return Ok(outcome);
        }
        // Boxed: the general way's future is large, and the common write
        // above should not carry (and copy) it.
        let filter = doc! {"_id": id.clone()};
        Box::pin(self.run(cx, filter, Scope::OneUnstamped, Some(id))).await
    }

    /// The common update by id, the short way: a write that only `$set`s
    /// every field derived from this type (nothing pushed, no held field
    /// touched, fan-out neither deferred nor transactional) is one stamped
    /// `update` and its fan-out (see [`fanout::stamped_by_id`]). `None`
    /// when the write is not of that kind, or matched nothing (missing,
    /// never versioned, or a stored version above this client's clock).
    async fn stamped_by_id(&self, cx: &mut Cx<'_>, id: &Bson) -> Result<Option<UpdateOutcome>> {
        if self.mode.deferred
            || self.mode.transactional
            || !self.update.pushes().is_empty()
            || !self.derived
            || self.holdings
        {
            return Ok(None);
        }
        let Some(set) = self.update.only_set() else { return Ok(None) };
        let Some((filter, body, stamp)) = fanout::stamped_by_id(T::COLLECTION, id, set) else {
            return Ok(None);
        };
        // On MongoDB 8.0+, the write and every fan-out in one round trip
        // (the subsets' rebuild reads an image: not in a batch).
        // (Cloned only where it is sent: an older server's update uses them.)
        if !self.summarized && crate::store::bulk::available() {
            let batch = (filter.clone(), body.clone());
            match super::bulk::stamped(cx, T::COLLECTION, batch, id, stamp, &set).await? {
                Some(done) if done.matched => return Ok(Some(UpdateOutcome { matched: 1, modified: done.modified })),
                Some(_) => return Ok(None),
                None => {}
            }
        }
        let modified = match in_session!(self.raw.update_one(filter, body), cx.session()) {
            Ok(r) if r.matched_count == 1 => r.modified_count,
            Ok(_) => return Ok(None),
            Err(e) => return Err(Self::err("update_one")(e)),
        };
        // Every derived field was set, so every target is touched, and the
        // copies read their values from the update's own `$set`. A subset
        // reads an image of the source, and the paths, which tell it
        // whether the child may have moved to another parent (which costs
        // a read): here they always do, since the parent field is among
        // the derived fields that were set.
        if !self.summarized {
            fanout::fan_out_source(cx, T::COLLECTION, id, stamp, &set, None).await?;
        } else {
            // Boxed: its image and the subsets' future would make this one
            // (and every update by id's) larger than the allocator's fast sizes.
            let values = fanout::set_values(T::COLLECTION, &set).unwrap_or_default();
            let after = fanout::after_image(id.clone(), stamp, values);
            let touched = self.touched();
            Box::pin(async move { fanout::fan_out(cx, T::COLLECTION, &after, Some(&touched)).await }).await?;
        }
        Ok(Some(UpdateOutcome { matched: 1, modified }))
    }

    /// The general way: the bounded pushes guarded in the filter, the
    /// holders of touched references known first, the write with its
    /// fan-out, then the holders' copies refreshed. `id` is the one
    /// document's id when the filter is by id.
    pub(crate) async fn run(
        &self,
        cx: &mut Cx<'_>,
        mut filter: BsonDoc,
        scope: Scope,
        id: Option<Bson>,
    ) -> Result<UpdateOutcome> {
        let mut body = self.update.to_document()?;
        let mut guards = Vec::new();
        for push in self.update.pushes() {
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
        if !self.holdings {
            return self.write_and_refresh(cx, filter, body, scope, None).await;
        }
        fill::prune_pulled(T::schema(), &mut body);
        if let Some(id) = id {
            return self.write_and_refresh(cx, filter, body, scope, Some(vec![id])).await;
        }
        // Boxed, as are the other rare branches of an update: the future of
        // every update would otherwise be as large as its largest branch,
        // and it is copied each time it moves.
        Box::pin(self.holders_by_page(cx, filter, body, scope)).await
    }

    /// An update of references or copies by a filter, page by page (bounded
    /// memory and `$in`): each page's write, then the refresh of its
    /// holders. One document needs the first page only.
    async fn holders_by_page(
        &self,
        cx: &mut Cx<'_>,
        filter: BsonDoc,
        body: BsonDoc,
        scope: Scope,
    ) -> Result<UpdateOutcome> {
        let mut outcome = UpdateOutcome::default();
        let mut after = None;
        while let Some(page) = crate::store::id_page(self.raw, &filter, after, cx.session()).await? {
            after = page.last().cloned();
            // A page short of full was the last one: no read to say so.
            let last = page.len() < crate::store::ID_PAGE;
            let scoped = doc! {"$and": [filter.clone(), {"_id": {"$in": page.clone()}}]};
            outcome.add(self.write_and_refresh(cx, scoped, body.clone(), scope, Some(page)).await?);
            if last || !scope.many() && outcome.matched > 0 {
                break;
            }
        }
        Ok(outcome)
    }

    /// The write itself (with its fan-out when it changes derived fields),
    /// then the refresh of the copies `holders` hold when it brought new
    /// references.
    async fn write_and_refresh(
        &self,
        cx: &mut Cx<'_>,
        filter: BsonDoc,
        body: BsonDoc,
        scope: Scope,
        holders: Option<Vec<Bson>>,
    ) -> Result<UpdateOutcome> {
        // Pulls alone bring no new reference and take their element's copy
        // with it: nothing to fill or clear. An `$unset` of a reference
        // leaves its copies, which the refresh clears.
        let refresh = holders.is_some() && needs_refresh(&body);
        // A transactional fan-out refreshes them in its transaction.
        let inside = refresh && self.derived && self.mode.transactional && !self.mode.deferred;
        let outcome = if self.derived {
            let holders = if inside { holders.clone() } else { None };
            self.write_and_fan_out(cx, filter, body, scope, holders).await?
        } else {
            let r = if scope.many() {
                in_session!(self.raw.update_many(filter, body), cx.session()).map_err(Self::err("update_many"))?
            } else {
                in_session!(self.raw.update_one(filter, body), cx.session()).map_err(Self::err("update_one"))?
            };
            UpdateOutcome { matched: r.matched_count, modified: r.modified_count }
        };
        if let (Some(ids), true) = (holders, refresh && !inside) {
            if outcome.matched > 0 {
                Box::pin(fill::refresh(cx, T::schema(), &ids)).await?;
            }
        }
        Ok(outcome)
    }

    /// A write of derived fields: it moves the source's version on and
    /// reads back the new values in the same round trip (`findAndModify`),
    /// or is stamped when it knows them; then each target path gets one
    /// `updateMany`. A transactional one also refreshes the copies that
    /// `holders` hold, in its transaction.
    async fn write_and_fan_out(
        &self,
        cx: &mut Cx<'_>,
        filter: BsonDoc,
        mut body: BsonDoc,
        scope: Scope,
        holders: Option<Vec<Bson>>,
    ) -> Result<UpdateOutcome> {
        let many = scope.many();
        // Only a source with copies elsewhere carries a version: a subset
        // child's summaries are rewritten from the write's own result.
        if !fanout::targets_of(T::COLLECTION).is_empty() {
            fanout::inc_version(&mut body);
        }
        if self.mode.deferred {
            let r = if many {
                in_session!(self.raw.update_many(filter, body), cx.session()).map_err(Self::err("update_many"))?
            } else {
                in_session!(self.raw.update_one(filter, body), cx.session()).map_err(Self::err("update_one"))?
            };
            return Ok(UpdateOutcome { matched: r.matched_count, modified: r.modified_count });
        }
        let touched = self.touched();
        // A single write that `$set`s every derived field knows what to fan
        // out: it reads back only its version (fewer bytes, less decoding).
        let known = if many { None } else { fanout::known_values(T::COLLECTION, &body) };
        let projection = match known {
            Some(_) => Some(fanout::version_projection()),
            None => fanout::source_projection(T::COLLECTION),
        };
        if self.mode.transactional {
            if many {
                return Box::pin(self.many_in_transaction(cx, (filter, body), projection, &touched, holders)).await;
            }
            let read = ReadBack { projection, known };
            return Box::pin(self.in_transaction(cx, (filter, body), read, &touched, holders)).await;
        }
        if let (Scope::One, Some(values)) = (scope, &known) {
            if let Some((stamped, set, after)) = fanout::stamped(&filter, &body, values) {
                let r =
                    in_session!(self.raw.update_one(stamped, set), cx.session()).map_err(Self::err("update_one"))?;
                if r.matched_count == 1 {
                    fanout::fan_out(cx, T::COLLECTION, &after, Some(&touched)).await?;
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
                cx.session()
            )
            .map_err(Self::err("findAndModify"))?;
            let Some(after) = after else { return Ok(UpdateOutcome::default()) };
            let after = super::image::image("an updated", T::COLLECTION, &after, known)?;
            fanout::fan_out(cx, T::COLLECTION, &after, Some(&touched)).await?;
            return Ok(UpdateOutcome { matched: 1, modified: 1 });
        }
        Box::pin(many_and_fan_out::<T>(self.raw, cx, filter, body, projection, &touched)).await
    }

    /// [`many_and_fan_out`] in one transaction: every page's write and its
    /// fan-out (subsets included), and the refresh of the copies `holders`
    /// hold, commit together, or not at all. A large update makes a large
    /// transaction.
    async fn many_in_transaction(
        &self,
        cx: &mut Cx<'_>,
        (filter, body): (BsonDoc, BsonDoc),
        projection: Option<BsonDoc>,
        touched: &[String],
        holders: Option<Vec<Bson>>,
    ) -> Result<UpdateOutcome> {
        let (raw, db) = (self.raw.clone(), cx.db.clone());
        crate::store::transaction::run_or_join(cx, "transactional fan-out", &mut |session| {
            let (raw, db, filter, body, projection) =
                (raw.clone(), db.clone(), filter.clone(), body.clone(), projection.clone());
            let (touched, holders) = (touched.to_vec(), holders.clone());
            Box::pin(async move {
                let cx = &mut Cx::new(&db, Some(session));
                let outcome = many_and_fan_out::<T>(&raw, cx, filter, body, projection, &touched).await?;
                if let (Some(ids), true) = (holders, outcome.matched > 0) {
                    fill::refresh(cx, T::schema(), &ids).await?;
                }
                Ok(outcome)
            })
        })
        .await
        .map_err(no_transactions)
    }

    /// The source write and its copies' fan-out in one transaction (the
    /// driver's convenient API: the body is retried on a transient error,
    /// only the commit on an unknown commit result), with the refresh of
    /// the copies `holders` hold; the subsets are rebuilt after the commit,
    /// from the committed state. In the caller's transaction when its
    /// session is in one: no nested transaction.
    async fn in_transaction(
        &self,
        cx: &mut Cx<'_>,
        (filter, body): (BsonDoc, BsonDoc),
        read: ReadBack,
        touched: &[String],
        holders: Option<Vec<Bson>>,
    ) -> Result<UpdateOutcome> {
        let raw = self.raw.clone();
        let db = cx.db.clone();
        let after: Option<BsonDoc> =
            crate::store::transaction::run_or_join(cx, "transactional fan-out", &mut |session| {
                let (raw, db, filter, body, read) =
                    (raw.clone(), db.clone(), filter.clone(), body.clone(), read.clone());
                let (touched, holders) = (touched.to_vec(), holders.clone());
                Box::pin(async move {
                    let after = raw
                        .find_one_and_update(filter, body)
                        .return_document(ReturnDocument::After)
                        .optional(read.projection, |a, p| a.projection(p))
                        .session(&mut *session)
                        .await
                        .map_err(|e| Error::driver("findAndModify", T::COLLECTION, e))?;
                    let Some(after) = after else { return Ok(None) };
                    let after = super::image::image("an updated", T::COLLECTION, &after, read.known)?;
                    let cx = &mut Cx::new(&db, Some(session));
                    fanout::fan_out_copies(cx, T::COLLECTION, &after, Some(&touched), fanout::Reach::Copies).await?;
                    if let Some(ids) = holders {
                        fill::refresh(cx, T::schema(), &ids).await?;
                    }
                    Ok(Some(after))
                })
            })
            .await
            .map_err(no_transactions)?;
        let Some(after) = after else { return Ok(UpdateOutcome::default()) };
        fanout::after_commit(cx, T::COLLECTION, &after, Some(touched)).await?;
        Ok(UpdateOutcome { matched: 1, modified: 1 })
    }
}

/// A write of derived fields of many sources of `T` (in `raw`), page by
/// page (bounded memory and `$in`): their ids, one update, their new
/// values, then each source's fan-out.
async fn many_and_fan_out<T: Document>(
    raw: &Collection<RawDocumentBuf>,
    cx: &mut Cx<'_>,
    filter: BsonDoc,
    body: BsonDoc,
    projection: Option<BsonDoc>,
    touched: &[String],
) -> Result<UpdateOutcome> {
    let mut outcome = UpdateOutcome::default();
    let mut after = None;
    // A summary grown past `max_bytes` is said once every page is written
    // and fanned out: the error says the write landed.
    let mut left_out = None;
    while let Some(ids) = crate::store::id_page(raw, &filter, after, cx.session()).await? {
        after = ids.last().cloned();
        // A page short of full was the last one: no read to say so.
        let last = ids.len() < crate::store::ID_PAGE;
        let scoped = doc! {"$and": [filter.clone(), {"_id": {"$in": ids.clone()}}]};
        let r = in_session!(raw.update_many(scoped, body.clone()), cx.session())
            .map_err(|e| Error::driver("update_many", T::COLLECTION, e))?;
        outcome.add(UpdateOutcome { matched: r.matched_count, modified: r.modified_count });
        // The new values decide the copies: read them from the primary.
        let find = raw
            .find(doc! {"_id": {"$in": ids}})
            .optional(projection.clone(), |a, p| a.projection(p))
            .batch_size(crate::store::ID_PAGE as u32)
            .selection_criteria(crate::store::primary());
        let changed = crate::store::session::collect(find, cx.session(), T::COLLECTION, |raw| {
            crate::store::session::plain(T::COLLECTION, raw)
        })
        .await?;
        for after in &changed {
            match fanout::fan_out(cx, T::COLLECTION, after, Some(touched)).await {
                Err(e) if crate::patterns::subset::is_left_out(&e) => drop(left_out.get_or_insert(e)),
                done => drop(done?),
            }
        }
        if last {
            break;
        }
    }
    left_out.map_or(Ok(outcome), Err)
}

/// The error of a transactional fan-out on a deployment without transactions.
pub(super) fn no_transactions(e: Error) -> Error {
    match e {
        e if crate::store::transaction::unsupported(&e) => Error::Invalid {
            what: crate::error::Misuse::TransactionalFanOut,
            message: format!(
                "this deployment has no transactions ({e}); use a replica set or sharded cluster, or drop \
                 `transactional_fan_out()`"
            ),
        },
        e => e,
    }
}

/// How a write of derived fields reads its source back: the projection,
/// and the values it is known to set (then only the version is read).
#[derive(Clone)]
struct ReadBack {
    projection: Option<BsonDoc>,
    known: Option<BsonDoc>,
}

/// The first two-way reference of `T` that `update` writes.
fn touched_two_way<T: Document>(update: &Update<T>) -> Option<&'static Relation> {
    graph().two_way_iter(T::schema()).find(|r| update.touched().any(|t| crate::store::path::overlaps(r.field, t)))
}

/// What is wrong with an update that writes a field docrel keeps itself: a
/// subset (kept from the children) or a bucket's elements or count (kept by
/// its appends). `None` for any other update.
fn touched_maintained<T: Document>(update: &Update<T>) -> Option<String> {
    let overlaps = |field: &str| update.touched().any(|t| crate::store::path::overlaps(field, t));
    for rel in graph().relations_of(T::schema()) {
        if let Some(subset) = &rel.subset {
            if overlaps(rel.field) {
                return Some(format!(
                    "`{}.{}` is a subset docrel keeps from the `{}` documents: it changes when they do; write those \
                     instead (or `rebuild` it)",
                    T::COLLECTION,
                    rel.field,
                    subset.child_type
                ));
            }
        }
        if let Some(bucket) = &rel.bucket {
            if let Some(field) = [rel.field, bucket.count].into_iter().chain(bucket.sum).find(|f| overlaps(f)) {
                let (kept, call) = match bucket.counter {
                    true => ("counter's events", "count events with `rels().{}.record(..)`"),
                    false => ("bucket's appends", "add elements with `rels().{}.append(..)`"),
                };
                return Some(format!(
                    "`{}.{field}` is kept by the {kept}: {}",
                    T::COLLECTION,
                    call.replace("{}", rel.rust_field)
                ));
            }
        }
    }
    None
}

/// Whether an update document does more than pull elements (`$pull`,
/// `$pullAll`): the copies of its holders then need a refresh.
fn needs_refresh(body: &BsonDoc) -> bool {
    body.keys().any(|op| !matches!(op.as_str(), "$pull" | "$pullAll"))
}
