//! Replace and save: the whole document written over the stored one (or
//! created, for a save), filled and confirmed as an insert is, and owing
//! what a new document owes when it was created.

use super::encode::{encode_all, plain_or, Encoded};
use super::insert::InsertPlan;
use super::replace::replace_image;
use crate::denormalize::fill;
use crate::error::{Error, Result};
use crate::schema::document::Document;
use crate::store::session::{in_session, Cx};
use mongodb::bson::{self, doc, RawDocumentBuf};

impl<T: Document> InsertPlan<'_, T> {
    /// Replaces the stored document `id` with `doc` (or creates it, with
    /// `upsert`), then confirms its copies and settles what a created
    /// document owes. Whether a document was written (a replace finds none
    /// when `id` is not stored).
    pub(crate) async fn put(&self, cx: &mut Cx<'_>, doc: &T, id: bson::Bson, upsert: bool) -> Result<bool> {
        let Encoded { mut raws, plain, filled } =
            encode_all(cx, std::slice::from_ref(doc), upsert, &self.facts, self.sides).await?;
        let raw = raws
            .pop()
            .ok_or_else(|| Error::Invalid { what: crate::error::Misuse::Replace, message: "nothing encoded".into() })?;
        let new = plain_or(&plain, &raw)?;
        let filter = crate::schema::shard::key_filter(T::schema(), id.clone(), &new);
        let written = if !crate::schema::shard::movable(T::schema()) {
            self.put_once(filter, upsert, &new, &raw, cx).await?
        } else {
            // The filter pins the new shard key; the stored document may
            // carry another (the caller changed it). A write that creates
            // must not run before that is known: a sharded cluster would
            // store a second document with the same `_id` on another shard.
            match self.put_once(filter.clone(), false, &new, &raw, cx).await? {
                Some(done) => Some(done),
                None => match self.stored_key(&id, cx).await? {
                    Some(old) => self.put_once(old, false, &new, &raw, cx).await?,
                    None => self.put_once(filter, upsert, &new, &raw, cx).await?,
                },
            }
        };
        if written == Some(true) {
            self.after_new(std::slice::from_ref(&new), cx).await?;
        }
        if let (Some(filled), true) = (filled, written.is_some()) {
            fill::confirm(cx, T::schema(), &plain, filled).await?;
        }
        Ok(written.is_some())
    }

    /// One replace (or upsert) of the document `filter` finds: whether it
    /// was created, or `None` when it found none.
    async fn put_once(
        &self,
        filter: bson::Document,
        upsert: bool,
        new: &bson::Document,
        raw: &RawDocumentBuf,
        cx: &mut Cx<'_>,
    ) -> Result<Option<bool>> {
        if self.facts.replaces_by_image() {
            return replace_image::<T>(cx, self.raw, filter, new.clone(), upsert, self.mode, &self.facts).await;
        }
        let r = in_session!(self.raw.replace_one(filter, raw.clone()).upsert(upsert), cx.session())
            .map_err(Self::err("replace"))?;
        Ok((r.matched_count > 0 || r.upserted_id.is_some()).then_some(r.upserted_id.is_some()))
    }

    /// The filter of the stored document `id` by its own shard key (which a
    /// replace moving it to another key must name), or `None` when there is
    /// no such document. Read by `_id` alone, from the primary.
    async fn stored_key(&self, id: &bson::Bson, cx: &mut Cx<'_>) -> Result<Option<bson::Document>> {
        let projection: bson::Document =
            T::schema().shard_key.iter().map(|f| ((*f).to_owned(), bson::Bson::Int32(1))).collect();
        let found = in_session!(
            self.raw
                .find_one(doc! {"_id": id.clone()})
                .projection(projection)
                .selection_criteria(crate::store::primary()),
            cx.session()
        )
        .map_err(Self::err("find"))?;
        let Some(found) = found else { return Ok(None) };
        let stored = crate::store::session::plain(T::COLLECTION, &found)?;
        Ok(Some(crate::schema::shard::key_filter(T::schema(), id.clone(), &stored)))
    }
}
