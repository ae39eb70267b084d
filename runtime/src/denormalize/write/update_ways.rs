//! The longer ways of an update (see `route.rs`): page by page, and in a
//! transaction with its fan-out.

use super::outcome::{Optional, UpdateOutcome};
use super::update::UpdatePlan;
use crate::denormalize::{fanout, fill};
use crate::error::{Error, Result};
use crate::schema::document::Document;
use crate::store::session::{in_session, Cx};
use mongodb::bson::{doc, Bson, Document as BsonDoc, RawDocumentBuf};
use mongodb::options::ReturnDocument;
use mongodb::Collection;

impl<T: Document> UpdatePlan<'_, T> {
    /// [`Self::many_and_fan_out`] in one transaction: every page's write and its
    /// fan-out (subsets included), and the refresh of the copies `holders`
    /// hold, commit together, or not at all. A large update makes a large
    /// transaction.
    pub(super) async fn many_in_transaction(
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
                let outcome = Self::many_and_fan_out(&raw, cx, (filter, body), projection, &touched).await?;
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
    pub(super) async fn in_transaction(
        &self,
        cx: &mut Cx<'_>,
        (filter, body): (BsonDoc, BsonDoc),
        (projection, known): (Option<BsonDoc>, Option<BsonDoc>),
        touched: &[String],
        holders: Option<Vec<Bson>>,
    ) -> Result<UpdateOutcome> {
        let raw = self.raw.clone();
        let db = cx.db.clone();
        let after: Option<BsonDoc> =
            crate::store::transaction::run_or_join(cx, "transactional fan-out", &mut |session| {
                let (raw, db, filter, body, (projection, known)) =
                    (raw.clone(), db.clone(), filter.clone(), body.clone(), (projection.clone(), known.clone()));
                let (touched, holders) = (touched.to_vec(), holders.clone());
                Box::pin(async move {
                    let after = raw
                        .find_one_and_update(filter, body)
                        .return_document(ReturnDocument::After)
                        .optional(projection, |a, p| a.projection(p))
                        .session(&mut *session)
                        .await
                        .map_err(|e| Error::driver("findAndModify", T::COLLECTION, e))?;
                    let Some(after) = after else { return Ok(None) };
                    let after = super::image::image("an updated", T::COLLECTION, &after, known)?;
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

    /// A write of derived fields of many sources of `T` (in `raw`), page by
    /// page (bounded memory and `$in`): their ids, one update, their new
    /// values, then each source's fan-out.
    pub(super) async fn many_and_fan_out(
        raw: &Collection<RawDocumentBuf>,
        cx: &mut Cx<'_>,
        (filter, body): (BsonDoc, BsonDoc),
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
