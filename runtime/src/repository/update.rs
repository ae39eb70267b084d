//! Updates: the repository checks what only the typed update knows (a
//! filter routed to one shard, why nothing matched) and hands the write to
//! its plan ([`crate::denormalize::write::UpdatePlan`]).

use super::hooks::{self, Write};
use super::repo::Repository;
use crate::client::trace::Op;
use crate::denormalize::write::UpdateOutcome;
use crate::denormalize::write::{Scope, UpdatePlan};
use crate::error::{Error, Result};
use crate::id::{show, DocId};
use crate::schema::document::Document;
use crate::store::session::{in_session, Cx};
use crate::store::{Filter, Update};
use mongodb::bson::doc;
use mongodb::ClientSession;

impl<T: Document> Repository<T> {
    // A plain `fn`: an `async fn` around the span's future would hold the
    // update twice and make the boxed future of every update by id larger
    // than the allocator's fast sizes.
    pub(super) fn update_by_id_in<'a>(
        &'a self,
        id: &'a T::Id,
        mut update: Update<T>,
        mut session: Option<&'a mut ClientSession>,
    ) -> impl std::future::Future<Output = Result<UpdateOutcome>> + Send + 'a {
        Op::new("update_by_id", T::COLLECTION).run_counted(
            async move {
                hooks::before_update(&mut update, &doc! {"_id": id.to_bson()}, Write::UpdateById)?;
                let mut cx = Cx::new(&self.db, session.as_deref_mut());
                let outcome =
                    UpdatePlan::new(&self.raw, &update, self.mode(), cx.graph)?.by_id(&mut cx, id.to_bson()).await?;
                if outcome.matched == 0 {
                    let graph = cx.graph;
                    return Err(self.explain_unmatched(id, &update, graph, session).await?);
                }
                hooks::after::<T>(&mut cx, Write::UpdateById, vec![id.clone()], outcome.matched).await;
                Ok(outcome)
            },
            |o: &UpdateOutcome| Some(o.modified as usize),
        )
    }

    pub(super) async fn update_matching(
        &self,
        filter: impl Into<Filter>,
        mut update: Update<T>,
        many: bool,
        session: Option<&mut ClientSession>,
    ) -> Result<UpdateOutcome> {
        let op = Op::new(if many { "update_many" } else { "update_one" }, T::COLLECTION);
        let work = async move {
            let filter = filter.into().into_document()?;
            if !many {
                crate::schema::shard::check_routed(T::schema(), &filter, "update_one")?;
            }
            let write = if many { Write::UpdateMany } else { Write::UpdateOne };
            hooks::before_update(&mut update, &filter, write)?;
            let mut cx = Cx::new(&self.db, session);
            let plan = UpdatePlan::new(&self.raw, &update, self.mode(), cx.graph)?;
            let outcome = plan.run(&mut cx, filter, Scope::of(many)).await?;
            hooks::after::<T>(&mut cx, write, Vec::new(), outcome.matched).await;
            Ok(outcome)
        };
        op.run_counted(work, |o| Some(o.modified as usize)).await
    }

    #[cold]
    async fn explain_unmatched(
        &self,
        id: &T::Id,
        update: &Update<T>,
        graph: &crate::schema::graph::Graph,
        session: Option<&mut ClientSession>,
    ) -> Result<Error> {
        // The bounds the write kept to: those of its own graph.
        let pushes = crate::store::bounds::kept_to(graph, T::COLLECTION, update.pushes());
        let bounded: Vec<_> = pushes.into_iter().filter(|p| p.max.is_some()).collect();
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
}
