//! Deletes: the `on_delete` rules of every reference to the type run for
//! exactly the documents deleted, and the subsets that summarized them are
//! rebuilt for the parents they had when deleted.

use super::hooks::{self, Write};
use super::repo::Repository;
use crate::bson_compat;
use crate::client::trace::Op;
use crate::error::{Error, Result};
use crate::id::DocId;
use crate::patterns::subset_delete;
use crate::schema::document::Document;
use crate::store::query::Filter;
use crate::store::session::{in_session, Cx};
use mongodb::bson::{self, doc};
use mongodb::ClientSession;

impl<T: Document> Repository<T> {
    pub(super) async fn delete_by_id_in(&self, id: &T::Id, session: Option<&mut ClientSession>) -> Result<bool> {
        let work = self.delete_hooked(id, doc! {"_id": id.to_bson()}, Write::DeleteById, Cx::new(&self.db, session));
        Op::new("delete_by_id", T::COLLECTION).run_counted(work, |d| Some(*d as usize)).await
    }

    /// [`Self::delete_found`] of the document `id` between its hooks.
    async fn delete_hooked(&self, id: &T::Id, filter: bson::Document, write: Write, mut cx: Cx<'_>) -> Result<bool> {
        hooks::before_delete::<T>(&filter, write)?;
        let deleted = self.delete_found(id.to_bson(), filter, &mut cx).await?;
        if deleted {
            hooks::after::<T>(&mut cx, write, vec![id.clone()], 1).await;
        }
        Ok(deleted)
    }

    pub(super) async fn delete_in(&self, doc: &T, session: Option<&mut ClientSession>) -> Result<bool> {
        let id = super::stored_id(doc, "delete")?.to_bson();
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
        let work =
            self.delete_hooked(super::stored_id(doc, "delete")?, filter, Write::Delete, Cx::new(&self.db, session));
        Op::new("delete", T::COLLECTION).run_counted(work, |d| Some(*d as usize)).await
    }

    pub(super) async fn delete_one_in(
        &self,
        filter: impl Into<Filter>,
        mut session: Option<&mut ClientSession>,
    ) -> Result<bool> {
        let work = async move {
            let filter = filter.into().into_document()?;
            crate::schema::shard::check_routed(T::schema(), &filter, "delete_one")?;
            hooks::before_delete::<T>(&filter, Write::DeleteOne)?;
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
            let mut cx = Cx::new(&self.db, session);
            let deleted = self.delete_found(id, filter, &mut cx).await?;
            if deleted {
                hooks::after::<T>(&mut cx, Write::DeleteOne, Vec::new(), 1).await;
            }
            Ok(deleted)
        };
        Op::new("delete_one", T::COLLECTION).run_counted(work, |d| Some(*d as usize)).await
    }

    /// Deletes the document `id` with a filter that finds it (and routes to
    /// its shard): its `restrict` rules are checked first, and its other
    /// `on_delete` rules run only once the delete matched, so a delete that
    /// finds nothing (the document changed, a stale shard key) changes nothing.
    async fn delete_found(&self, id: bson::Bson, filter: bson::Document, cx: &mut Cx<'_>) -> Result<bool> {
        let rules = crate::relations::on_delete::has_rules(cx.graph, T::COLLECTION);
        let ids = std::slice::from_ref(&id);
        if rules {
            crate::relations::on_delete::check(cx, T::COLLECTION, ids).await?;
        }
        if subset_delete::delete_matching(cx, T::COLLECTION, filter, false, &subset_delete::none_gone).await? == 0 {
            return Ok(false);
        }
        if rules {
            let applied = crate::relations::on_delete::apply_checked(cx, T::COLLECTION, ids).await;
            applied.map_err(|e| unfinished::<T>(1, e))?;
        }
        Ok(true)
    }

    pub(super) async fn delete_many_in(
        &self,
        filter: impl Into<Filter>,
        session: Option<&mut ClientSession>,
    ) -> Result<u64> {
        let cx = &mut Cx::new(&self.db, session);
        let op = Op::new("delete_many", T::COLLECTION);
        let work = async move {
            let filter = filter.into().into_document()?;
            hooks::before_delete::<T>(&filter, Write::DeleteMany)?;
            let deleted = self.delete_many_found(filter, cx).await?;
            hooks::after::<T>(cx, Write::DeleteMany, Vec::new(), deleted).await;
            Ok(deleted)
        };
        op.run_counted(work, |n| Some(*n as usize)).await
    }

    /// Deletes the documents `filter` matches with their rules: how many.
    async fn delete_many_found(&self, filter: bson::Document, cx: &mut Cx<'_>) -> Result<u64> {
        let rules = crate::relations::on_delete::has_rules(cx.graph, T::COLLECTION);
        if !rules && cx.graph.subsets_of(T::COLLECTION).is_empty() {
            let r = in_session!(self.raw.delete_many(filter), cx.session()).map_err(self.err("delete_many"))?;
            return Ok(r.deleted_count);
        }
        // The rules run page by page, so memory and every `$in` stay
        // bounded however many documents match; a `restrict` is checked
        // on every page before any is written.
        let mut after = None;
        while let Some(page) = match rules {
            true => crate::store::id_page(&self.raw, &filter, after, cx.session()).await?,
            false => None,
        } {
            after = page.last().cloned();
            crate::relations::on_delete::check(cx, T::COLLECTION, &page).await?;
        }
        let mut deleted = 0;
        let mut after = None;
        while let Some(page) = crate::store::id_page(&self.raw, &filter, after, cx.session()).await? {
            after = page.last().cloned();
            // Exactly the documents found, so one inserted meanwhile is
            // not deleted without its rules; and the rules of exactly
            // those deleted, so one that stopped matching keeps its own.
            let scoped = doc! {"$and": [filter.clone(), {"_id": {"$in": &page}}]};
            let n = subset_delete::delete_matching(cx, T::COLLECTION, scoped, true, &subset_delete::none_gone).await?;
            deleted += n;
            if n == 0 || !rules {
                continue;
            }
            let gone = match n as usize == page.len() {
                true => page,
                false => self.gone(page, cx).await?,
            };
            let applied = crate::relations::on_delete::apply_checked(cx, T::COLLECTION, &gone).await;
            applied.map_err(|e| unfinished::<T>(deleted, e))?;
        }
        Ok(deleted)
    }

    /// Those of `ids` no longer stored (read from the primary: they decide
    /// which rules run).
    async fn gone(&self, ids: Vec<bson::Bson>, cx: &mut Cx<'_>) -> Result<Vec<bson::Bson>> {
        let find = self
            .raw
            .find(doc! {"_id": {"$in": &ids}})
            .projection(doc! {"_id": 1})
            .selection_criteria(crate::store::primary());
        let stored = crate::store::session::collect(find, cx.session(), T::COLLECTION, |raw| {
            Ok(raw.get("_id").ok().flatten().and_then(|id| bson::Bson::try_from(id).ok()))
        })
        .await?;
        let stored: std::collections::HashSet<String> =
            stored.iter().flatten().map(crate::store::path::id_key).collect();
        Ok(ids.into_iter().filter(|id| !stored.contains(&crate::store::path::id_key(id))).collect())
    }
}

/// The error of `on_delete` rules that failed after `deleted` documents
/// were deleted: it says the delete stands.
fn unfinished<T: Document>(deleted: u64, cause: Error) -> Error {
    Error::RulesUnfinished { collection: T::COLLECTION, deleted, cause: Box::new(cause) }
}
