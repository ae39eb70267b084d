//! An upsert: the update of the first document a filter matches, run as
//! any update is (versions, fan-out, refreshed copies); or, when none
//! matches, the insert of a new document built from the filter's
//! equalities and the update, which then owes what any insert owes.

use super::document::DocumentPlan;
use super::insert::{Around, InsertPlan};
use super::outcome::{Scope, UpdateOutcome};
use super::sides::TwoWaySides;
use super::update::UpdatePlan;
use crate::denormalize::{fanout, fill};
use crate::error::{show_id, Error, Result};
use crate::schema::document::Document;
use crate::store::session::{in_session, plain, Cx};
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::options::ReturnDocument;

/// What an upsert did.
pub(crate) enum Upserted {
    /// A document matched: it was updated as `update_one` updates.
    Updated(UpdateOutcome),
    /// None matched: the document inserted, as stored (its `_id` alone
    /// when it owes nothing to the documents around it).
    Inserted(BsonDoc),
}

impl<T: Document> UpdatePlan<'_, T> {
    /// The upsert of the first document `filter` matches. A type that owes
    /// nothing on insert (no version, copies, subsets or two-way side) is
    /// one `update` with `upsert`. Any other tries the update first; when it
    /// matches nothing, [`UpdatePlan::insert_new`] inserts, and the copies
    /// the new document holds are filled from their sources. An insert
    /// refused as a duplicate key (a matching document inserted meanwhile)
    /// tries the update once more. A document inserted then owes what any
    /// insert owes (its two-way side through `sides`).
    pub(crate) async fn upsert(
        &self,
        cx: &mut Cx<'_>,
        filter: BsonDoc,
        sides: &'static dyn TwoWaySides,
    ) -> Result<Upserted> {
        let owed = DocumentPlan::of(cx.graph, T::schema());
        let bounded = self.pushes().iter().any(|p| p.max.is_some());
        if !bounded && !owed.fills && !owed.owes(true) {
            return self.plain_upsert(cx, filter).await;
        }
        let mut retried = false;
        loop {
            let outcome = self.run(cx, filter.clone(), Scope::One).await?;
            if outcome.matched > 0 {
                return Ok(Upserted::Updated(outcome));
            }
            if bounded {
                self.refuse_full(cx, &filter).await?;
            }
            match self.insert_new(cx, filter.clone(), owed.source).await {
                Err(e) if e.is_duplicate_key() && !retried => retried = true,
                new => {
                    let new = new?;
                    let id = new.get("_id").cloned().unwrap_or(Bson::Null);
                    // The document is stored now: an error from here on says so.
                    let unfinished = |cause| Error::InsertUnfinished {
                        collection: T::COLLECTION,
                        id: crate::error::show_id(&id),
                        cause: Box::new(cause),
                    };
                    if owed.fills {
                        Box::pin(fill::refresh(cx, T::schema(), std::slice::from_ref(&id)))
                            .await
                            .map_err(unfinished)?;
                    }
                    if owed.owes(true) {
                        let plan = InsertPlan::<T>::new(self.raw, self.mode, sides, owed.graph);
                        let after = plan.after_insert(std::slice::from_ref(&new), Around::Now(None), cx);
                        Box::pin(after).await.map_err(unfinished)?;
                    }
                    return Ok(Upserted::Inserted(new));
                }
            }
        }
    }

    /// The upsert of a type that owes nothing on insert: the driver's.
    async fn plain_upsert(&self, cx: &mut Cx<'_>, filter: BsonDoc) -> Result<Upserted> {
        let body = self.update.to_document()?;
        let r = in_session!(self.raw.update_one(filter, body).upsert(true), cx.session())
            .map_err(Self::err("update_one"))?;
        Ok(match r.upserted_id {
            Some(id) => Upserted::Inserted(doc! {"_id": id}),
            None => Upserted::Updated(UpdateOutcome { matched: r.matched_count, modified: r.modified_count }),
        })
    }

    /// The insert of an upsert that matched nothing, as stored: one
    /// `findAndModify` with `upsert`, whose filter also asks for a missing
    /// `_id` (no stored document has one), so it only ever inserts and never
    /// updates a document that came to match since the update, which would
    /// skip its version and fan-out. A source's first version is set on
    /// insert from the clock, as an insert's is.
    async fn insert_new(&self, cx: &mut Cx<'_>, filter: BsonDoc, source: bool) -> Result<BsonDoc> {
        let mut body = self.update.to_document()?;
        if source {
            let first = fanout::first_version();
            match body.get_mut("$setOnInsert") {
                Some(Bson::Document(on_insert)) => {
                    on_insert.insert(fanout::VERSION_PATH, first);
                }
                _ => {
                    body.insert("$setOnInsert", doc! { fanout::VERSION_PATH: first });
                }
            }
        }
        let only_new = doc! {"$and": [filter, {"_id": {"$exists": false}}]};
        let new = in_session!(
            self.raw.find_one_and_update(only_new, body).upsert(true).return_document(ReturnDocument::After),
            cx.session()
        )
        .map_err(Self::err("findAndModify"))?;
        let new = new.ok_or_else(|| Error::Invalid {
            what: crate::error::Misuse::Update,
            message: format!("the upsert into `{}` returned no document; it may have inserted one", T::COLLECTION),
        })?;
        plain(T::COLLECTION, &new)
    }

    /// After a guarded push matched nothing: a document the filter alone
    /// finds had no room ([`Error::EmbedFull`]; inserting a second one
    /// would be wrong). Nothing was written.
    async fn refuse_full(&self, cx: &mut Cx<'_>, filter: &BsonDoc) -> Result<()> {
        let bounded: Vec<_> = self.pushes().into_iter().filter(|p| p.max.is_some()).collect();
        let mut projection = doc! {"_id": 1};
        for p in &bounded {
            projection.insert(p.path, doc! {"$size": {"$ifNull": [format!("${}", p.path), []]}});
        }
        let found = in_session!(
            self.raw.find_one(filter.clone()).projection(projection).selection_criteria(crate::store::primary()),
            cx.session()
        )
        .map_err(Self::err("find"))?;
        let Some(found) = found else { return Ok(()) };
        let found = plain(T::COLLECTION, &found)?;
        let id = found.get("_id").map(show_id).unwrap_or_default();
        for p in bounded {
            let (len, max) = (found.get_i32(p.path).map_or(0, |l| l as usize), p.max.unwrap_or(u32::MAX));
            if len + p.count > max as usize {
                return Err(Error::EmbedFull { collection: T::COLLECTION, id, field: p.path, max, len: len + p.count });
            }
        }
        Ok(())
    }
}
