//! An update of documents of one type, planned once: whether it changes a
//! field something is derived from, whether it writes references or copies
//! the type holds, and which way it runs. The facts are computed in
//! [`UpdatePlan::new`] and [`UpdatePlan::facts`], the way is the table's
//! ([`super::route::decide`]); this file only runs it.

use super::outcome::{Mode, Optional, Scope, UpdateOutcome};
use super::route::{decide, Facts, Refresh, Route, Target, Way};
use crate::denormalize::{fanout, fill};
use crate::error::{Error, Result};
use crate::schema::document::{Document, Relation};
use crate::schema::graph::Graph;
use crate::store::session::{in_session, Cx};
use crate::store::update::{OnlySet, Update};
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
    /// The schema graph of the call ([`Cx::graph`]).
    graph: &'static Graph,
}

impl<'u, T: Document> UpdatePlan<'u, T> {
    /// The plan of `update` on `raw` (the collection of `T`). Refuses a
    /// write of a two-way reference: those change only through
    /// link/unlink/reassign.
    pub(crate) fn new(
        raw: &'u Collection<RawDocumentBuf>,
        update: &'u Update<T>,
        mode: Mode,
        graph: &'static Graph,
    ) -> Result<Self> {
        if let Some(rel) = touched_two_way(graph, update) {
            return Err(Error::TwoWayField {
                collection: T::COLLECTION,
                field: rel.field,
                inverse: rel.inverse.unwrap_or_default(),
                rust_field: rel.rust_field,
            });
        }
        if let Some(message) = touched_maintained(graph, update) {
            return Err(Error::Invalid { what: crate::error::Misuse::Update, message });
        }
        if graph.stored_bounds(T::COLLECTION).next().is_some() {
            crate::store::bounds::check_stored_sets(graph, T::COLLECTION, &update.to_document()?)?;
        }
        Ok(UpdatePlan {
            raw,
            update,
            mode,
            derived: fanout::touches_derived(graph, T::COLLECTION, update.touched()),
            holdings: fill::touched_holdings(graph, T::schema(), update.touched()),
            summarized: !graph.subsets_of(T::COLLECTION).is_empty(),
            graph,
        })
    }

    /// The arrays this update grows, each with the bound its write keeps to
    /// (the type's, or a lower stored one).
    pub(super) fn pushes(&self) -> Vec<crate::store::bounds::Push> {
        crate::store::bounds::kept_to(self.graph, T::COLLECTION, self.update.pushes())
    }

    pub(super) fn err(operation: &'static str) -> impl FnOnce(mongodb::error::Error) -> Error {
        move |e| Error::driver(operation, T::COLLECTION, e)
    }

    fn touched(&self) -> Vec<String> {
        self.update.touched().map(str::to_owned).collect()
    }

    /// The update of the document `id`.
    pub(crate) async fn by_id(&self, cx: &mut Cx<'_>, id: Bson) -> Result<UpdateOutcome> {
        self.write(cx, doc! {"_id": id.clone()}, Target::ById, Some(id)).await
    }

    /// The update of the first document `filter` matches, or every one.
    pub(crate) async fn run(&self, cx: &mut Cx<'_>, filter: BsonDoc, scope: Scope) -> Result<UpdateOutcome> {
        let target = if scope == Scope::Many { Target::Every } else { Target::First };
        self.write(cx, filter, target, None).await
    }

    /// What the route of this update by `filter` depends on.
    fn facts(&self, filter: &BsonDoc, target: Target) -> Result<Facts> {
        let stampable = self.update.pushes().is_empty()
            && self.update.only_set().is_some_and(|set| fanout::stampable(self.graph, T::COLLECTION, filter, &set));
        Ok(Facts {
            target,
            mode: self.mode,
            derived: self.derived,
            holdings: self.holdings,
            refreshes: self.holdings && needs_refresh(&self.body()?),
            stampable,
            summarized: self.summarized,
            bulk: crate::store::bulk::available(self.raw.client()),
        })
    }

    /// The update as the general way sends it: the pulls of held copies
    /// take their version records with them.
    fn body(&self) -> Result<BsonDoc> {
        let mut body = self.update.to_document()?;
        if self.holdings {
            fill::prune_pulled(self.graph, T::schema(), &mut body);
        }
        Ok(body)
    }

    /// Runs the route the table gives; a stamped route that cannot finish
    /// clears the fact that chose it and the table is asked again. The
    /// stamped write is made once: a batch left unanswered is sent again
    /// alone, at the same stamp. `id` is the document's when by id.
    async fn write(&self, cx: &mut Cx<'_>, filter: BsonDoc, target: Target, id: Option<Bson>) -> Result<UpdateOutcome> {
        if self.holdings {
            fill::sources_exist(cx, T::schema(), &self.update.to_document()?).await?;
        }
        let mut facts = self.facts(&filter, target)?;
        let mut stamped = None;
        loop {
            let route = decide(facts);
            let set = match (route.way, self.update.only_set()) {
                (Way::Batch | Way::StampedFromSet | Way::Stamped, Some(set)) => set,
                // Boxed: the general way's future is large, and the common
                // stamped write should not carry (and copy) it.
                _ => return Box::pin(self.general(cx, filter, target, route, id)).await,
            };
            let (stamped_filter, body, stamp) = stamped.take().unwrap_or_else(|| fanout::stamp(filter.clone(), set));
            let tried = match route.way {
                Way::Batch => {
                    // Cloned only here: the write alone sends them when the batch goes unanswered.
                    let batch = (stamped_filter.clone(), body.clone());
                    stamped = Some((stamped_filter, body, stamp));
                    self.batch(cx, batch, stamp, set, &filter).await?
                }
                Way::StampedFromSet => {
                    self.stamped_write(cx, (stamped_filter, body), stamp, set, &filter, true).await?
                }
                _ => self.stamped_write(cx, (stamped_filter, body), stamp, set, &filter, false).await?,
            };
            match tried {
                Tried::Done(outcome) => return Ok(outcome),
                Tried::Missed => facts.stampable = false,
                Tried::Unanswered => facts.bulk = false,
            }
        }
    }

    /// The stamped write by id and every fan-out in one `bulkWrite` (see
    /// [`super::bulk`]).
    async fn batch(
        &self,
        cx: &mut Cx<'_>,
        stamped: (BsonDoc, BsonDoc),
        stamp: i64,
        set: OnlySet<'_>,
        filter: &BsonDoc,
    ) -> Result<Tried> {
        let id = filter.get("_id").cloned().unwrap_or(Bson::Null);
        Ok(match super::bulk::stamped(cx, T::COLLECTION, stamped, &id, stamp, &set).await? {
            Some(done) if done.matched => Tried::Done(UpdateOutcome { matched: 1, modified: done.modified }),
            Some(_) => Tried::Missed,
            None => Tried::Unanswered,
        })
    }

    /// The stamped write, then its fan-out: every derived field was set, so
    /// every target is touched and the copies' values are the `$set`'s own
    /// (`from_set`), or an image of them. A subset reads that image, and the
    /// paths, which tell it whether the child may have moved to another
    /// parent (which costs a read): here they always do, since the parent
    /// field is among the derived fields that were set.
    async fn stamped_write(
        &self,
        cx: &mut Cx<'_>,
        (filter, body): (BsonDoc, BsonDoc),
        stamp: i64,
        set: OnlySet<'_>,
        source: &BsonDoc,
        from_set: bool,
    ) -> Result<Tried> {
        let modified = match in_session!(self.raw.update_one(filter, body), cx.session()) {
            Ok(r) if r.matched_count == 1 => r.modified_count,
            Ok(_) => return Ok(Tried::Missed),
            Err(e) => return Err(Self::err("update_one")(e)),
        };
        let id = source.get("_id").cloned().unwrap_or(Bson::Null);
        if from_set {
            fanout::fan_out_source(cx, T::COLLECTION, &id, stamp, &set, None).await?;
        } else {
            // Boxed: its image and the subsets' future would make this one
            // (and every update by id's) larger than the allocator's fast sizes.
            let values = fanout::set_values(cx.graph, T::COLLECTION, &set).unwrap_or_default();
            let after = fanout::after_image(id, stamp, values);
            let touched = self.touched();
            Box::pin(async move { fanout::fan_out(cx, T::COLLECTION, &after, Some(&touched)).await }).await?;
        }
        Ok(Tried::Done(UpdateOutcome { matched: 1, modified }))
    }

    /// The general way: the bounded pushes guarded in the filter, the
    /// holders of touched references known first (by id, or page by page),
    /// the write with its fan-out, then the holders' copies refreshed.
    async fn general(
        &self,
        cx: &mut Cx<'_>,
        mut filter: BsonDoc,
        target: Target,
        route: Route,
        id: Option<Bson>,
    ) -> Result<UpdateOutcome> {
        let body = self.body()?;
        let mut guards = Vec::new();
        for push in self.pushes() {
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
        if route.holder_pages {
            // Boxed, as are the other rare branches of an update: the future of
            // every update would otherwise be as large as its largest branch,
            // and it is copied each time it moves.
            return Box::pin(self.holders_by_page(cx, filter, body, target, route)).await;
        }
        let holders = if self.holdings { id.map(|id| vec![id]) } else { None };
        self.write_and_refresh(cx, filter, body, target, route, holders).await
    }

    /// An update of references or copies by a filter, page by page (bounded
    /// memory and `$in`): each page's write, then the refresh of its
    /// holders. One document needs the first page only.
    async fn holders_by_page(
        &self,
        cx: &mut Cx<'_>,
        filter: BsonDoc,
        body: BsonDoc,
        target: Target,
        route: Route,
    ) -> Result<UpdateOutcome> {
        let mut outcome = UpdateOutcome::default();
        let mut after = None;
        while let Some(page) = crate::store::id_page(self.raw, &filter, after, cx.session()).await? {
            after = page.last().cloned();
            // A page short of full was the last one: no read to say so.
            let last = page.len() < crate::store::ID_PAGE;
            let scoped = doc! {"$and": [filter.clone(), {"_id": {"$in": page.clone()}}]};
            outcome.add(self.write_and_refresh(cx, scoped, body.clone(), target, route, Some(page)).await?);
            if last || target != Target::Every && outcome.matched > 0 {
                break;
            }
        }
        Ok(outcome)
    }

    /// The write in its way, then the refresh of the copies `holders` hold
    /// when the route says so (inside the write's transaction, or after it).
    async fn write_and_refresh(
        &self,
        cx: &mut Cx<'_>,
        filter: BsonDoc,
        body: BsonDoc,
        target: Target,
        route: Route,
        holders: Option<Vec<Bson>>,
    ) -> Result<UpdateOutcome> {
        let inside = if route.refresh == Refresh::Inside { holders.clone() } else { None };
        let many = target == Target::Every;
        let outcome = match route.way {
            Way::Plain | Way::Versioned => self.write_only(cx, filter, body, route.way, many).await?,
            way => self.write_and_fan_out(cx, filter, body, way, many, inside).await?,
        };
        if let (Some(ids), Refresh::After) = (holders, route.refresh) {
            if outcome.matched > 0 {
                Box::pin(fill::refresh(cx, T::schema(), &ids)).await?;
            }
        }
        Ok(outcome)
    }

    /// The write alone, with no fan-out: nothing derived is written, or
    /// (`Versioned`) the sync worker fans out from the version it moves on.
    async fn write_only(
        &self,
        cx: &mut Cx<'_>,
        filter: BsonDoc,
        mut body: BsonDoc,
        way: Way,
        many: bool,
    ) -> Result<UpdateOutcome> {
        // Only a source with copies elsewhere carries a version: a subset
        // child's summaries are rewritten from the write's own result.
        if way == Way::Versioned && !cx.graph.targets_of(T::COLLECTION).is_empty() {
            fanout::inc_version(&mut body);
        }
        let r = if many {
            in_session!(self.raw.update_many(filter, body), cx.session()).map_err(Self::err("update_many"))?
        } else {
            in_session!(self.raw.update_one(filter, body), cx.session()).map_err(Self::err("update_one"))?
        };
        Ok(UpdateOutcome { matched: r.matched_count, modified: r.modified_count })
    }

    /// A write of derived fields: it moves the source's version on and
    /// reads back the new values in the same round trip (`findAndModify`),
    /// page by page, or in a transaction, as `way` says; then each target
    /// path gets one `updateMany`. A transactional one also refreshes the
    /// copies that `holders` hold, in its transaction.
    async fn write_and_fan_out(
        &self,
        cx: &mut Cx<'_>,
        filter: BsonDoc,
        mut body: BsonDoc,
        way: Way,
        many: bool,
        holders: Option<Vec<Bson>>,
    ) -> Result<UpdateOutcome> {
        if !cx.graph.targets_of(T::COLLECTION).is_empty() {
            fanout::inc_version(&mut body);
        }
        let touched = self.touched();
        // A single write that `$set`s every derived field knows what to fan
        // out: it reads back only its version (fewer bytes, less decoding).
        let known = if many { None } else { fanout::known_values(cx.graph, T::COLLECTION, &body) };
        let projection = match known {
            Some(_) => Some(fanout::version_projection()),
            None => fanout::source_projection(cx.graph, T::COLLECTION),
        };
        match way {
            Way::PagesInTransaction => {
                Box::pin(self.many_in_transaction(cx, (filter, body), projection, &touched, holders)).await
            }
            Way::InTransaction => {
                Box::pin(self.in_transaction(cx, (filter, body), (projection, known), &touched, holders)).await
            }
            Way::Pages => Box::pin(Self::many_and_fan_out(self.raw, cx, (filter, body), projection, &touched)).await,
            // The read-back, which is also where a stamped way ends when
            // its stamp matched nothing.
            _ => {
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
                Ok(UpdateOutcome { matched: 1, modified: 1 })
            }
        }
    }
}

/// How a stamped route ended.
enum Tried {
    Done(UpdateOutcome),
    /// Its stamped write matched nothing: the document is gone, never
    /// versioned, or versioned past the stamp.
    Missed,
    /// A batch had no answer: what it wrote is unknown.
    Unanswered,
}

/// The first two-way reference of `T` that `update` writes.
fn touched_two_way<T: Document>(g: &'static Graph, update: &Update<T>) -> Option<&'static Relation> {
    g.two_way_iter(T::schema()).find(|r| update.touched().any(|t| crate::store::path::overlaps(r.field, t)))
}

/// What is wrong with an update that writes a field docrel keeps itself: a
/// copy (kept from its source), a subset (kept from the children) or a
/// bucket's elements or count (kept by its appends). `None` for any other
/// update.
fn touched_maintained<T: Document>(g: &'static Graph, update: &Update<T>) -> Option<String> {
    let overlaps = |field: &str| update.touched().any(|t| crate::store::path::overlaps(field, t));
    // A top-level copy follows its source: a write of it would be undone by
    // the next refresh (it was, silently: the update returned Ok).
    if let Some(copy) = T::schema().copies.iter().find(|c| overlaps(c.field)) {
        return Some(format!(
            "`{}.{}` is a copy of `{}.{}` that docrel keeps through `{}`: it changes when its source does, so \
             nothing was written. Update the source instead, or point `{}` at another document",
            T::COLLECTION,
            copy.field,
            copy.source,
            copy.source_field,
            copy.via,
            copy.via
        ));
    }
    for rel in g.relations_of(T::schema()) {
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
