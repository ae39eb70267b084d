//! Writes of whole documents (insert, replace, save): the repository runs
//! the lifecycle hooks around them and hands each write to its plan
//! ([`crate::denormalize::write::InsertPlan`]) in one call, with the
//! two-way side of new documents ([`crate::relations::two_way_inserted`]),
//! which the plan's layer cannot reach itself.

use super::hooks::{self, Write};
use super::repo::Repository;
use crate::client::trace::Op;
use crate::denormalize::write::{InsertPlan, Inserted};
use crate::error::{Error, Result};
use crate::id::{show, DocId};
use crate::relations::two_way_inserted::SIDES;
use crate::schema::document::Document;
use crate::store::session::Cx;
use mongodb::ClientSession;

impl<T: Document> Repository<T> {
    /// The plan of this repository's writes of whole documents.
    fn documents(&self) -> InsertPlan<'_, T> {
        InsertPlan::new(&self.raw, self.mode(), &SIDES, crate::schema::graph::of(&self.db))
    }

    pub(super) async fn insert_many_in(
        &self,
        docs: &[T],
        write: Write,
        session: Option<&mut ClientSession>,
    ) -> Result<()> {
        self.insert_in(docs, false, write, &mut Cx::new(&self.db, session)).await.map(|_| ())
    }

    /// Inserts `doc` and returns it as stored (see [`Inserted::stored`]).
    pub(super) async fn insert_returning_in(&self, doc: &T, session: Option<&mut ClientSession>) -> Result<T> {
        let cx = &mut Cx::new(&self.db, session);
        let inserted = self.insert_in(std::slice::from_ref(doc), true, Write::Insert, cx).await?;
        inserted.stored(&self.raw, cx).await
    }

    /// The insert of `docs` between its hooks; with `keep`, the first
    /// document as written is kept.
    async fn insert_in(&self, docs: &[T], keep: bool, write: Write, cx: &mut Cx<'_>) -> Result<Inserted<T>> {
        Op::new(if docs.len() == 1 { "insert" } else { "insert_many" }, T::COLLECTION)
            .documents(docs.len())
            .run(async move {
                if docs.is_empty() {
                    return Ok(Inserted::none());
                }
                hooks::before_insert(docs, write)?;
                let mut inserted = self.documents().insert(cx, docs, keep).await?;
                hooks::after::<T>(cx, write, std::mem::take(&mut inserted.ids), docs.len() as u64).await;
                Ok(inserted)
            })
            .await
    }

    /// Replace or save between their hooks: whether a document was written.
    async fn put(&self, doc: &T, upsert: bool, cx: &mut Cx<'_>) -> Result<bool> {
        let id = super::stored_id(doc, if upsert { "save" } else { "replace" })?;
        let write = if upsert { Write::Save } else { Write::Replace };
        hooks::before_insert(std::slice::from_ref(doc), write)?;
        let written = self.documents().put(cx, doc, id.to_bson(), upsert).await?;
        if written {
            hooks::after::<T>(cx, write, vec![id.clone()], 1).await;
        }
        Ok(written)
    }

    pub(super) async fn replace_in(&self, doc: &T, session: Option<&mut ClientSession>) -> Result<()> {
        Op::new("replace", T::COLLECTION)
            .documents(1)
            .run(async move {
                match self.put(doc, false, &mut Cx::new(&self.db, session)).await? {
                    true => Ok(()),
                    false => {
                        Err(Error::NotFound { collection: T::COLLECTION, id: doc.id().map(show).unwrap_or_default() })
                    }
                }
            })
            .await
    }

    pub(super) async fn save_in(&self, doc: &T, session: Option<&mut ClientSession>) -> Result<()> {
        Op::new("save", T::COLLECTION)
            .documents(1)
            .run(async move { self.put(doc, true, &mut Cx::new(&self.db, session)).await.map(|_| ()) })
            .await
    }
}
