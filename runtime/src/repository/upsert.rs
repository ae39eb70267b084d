//! Upserts: the repository checks the filter's routing and hands the write
//! to its plan ([`crate::denormalize::write::UpdatePlan::upsert`]) in one
//! call, with the two-way side a document it inserts owes, which the
//! plan's layer cannot reach itself.

use super::hooks::{self, Write};
use crate::client::trace::Op;
use crate::denormalize::write::{UpdatePlan, UpsertOutcome, Upserted};
use crate::error::{show_id, Error, Result};
use crate::id::DocId;
use crate::schema::document::Document;
use crate::schema::repository::Repository;
use crate::store::codec::encode;
use crate::store::session::Cx;
use crate::store::{Filter, Update};
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::ClientSession;

impl<T: Document> Repository<T> {
    pub(super) async fn upsert_in(
        &self,
        filter: Filter,
        mut update: Update<T>,
        session: Option<&mut ClientSession>,
    ) -> Result<UpsertOutcome<T::Id>> {
        Op::new("upsert", T::COLLECTION)
            .run(async move {
                let filter = filter.into_document()?;
                crate::schema::shard::check_routed(T::schema(), &filter, "upsert")?;
                hooks::before_update(&mut update, &filter, Write::Upsert)?;
                let cx = &mut Cx::new(&self.db, session);
                let plan = UpdatePlan::new(&self.raw, &update, self.mode(), cx.graph)?;
                let new = match plan.upsert(cx, filter, &crate::relations::two_way_inserted::SIDES).await? {
                    Upserted::Updated(o) => {
                        hooks::after::<T>(cx, Write::Upsert, Vec::new(), o.matched).await;
                        return Ok(UpsertOutcome { matched: o.matched, modified: o.modified, upserted_id: None });
                    }
                    Upserted::Inserted(new) => new,
                };
                let id = id_of::<T>(&new)?;
                hooks::after::<T>(cx, Write::Upsert, vec![id.clone()], 1).await;
                Ok(UpsertOutcome { matched: 0, modified: 0, upserted_id: Some(id) })
            })
            .await
    }
}

/// The `_id` of a document an upsert inserted, as `T`'s id type.
fn id_of<T: Document>(new: &BsonDoc) -> Result<T::Id> {
    let id = new.get("_id").cloned().unwrap_or(Bson::Null);
    let raw = encode(T::COLLECTION, &doc! {"_id": id.clone()})?;
    raw.get("_id").ok().flatten().and_then(T::Id::from_raw).ok_or_else(|| Error::Decode {
        collection: T::COLLECTION.into(),
        id: show_id(&id),
        rust_type: std::any::type_name::<T::Id>(),
        path: "_id".into(),
        message: "the upsert inserted the document with an `_id` the server generated, of another type; \
                  it is stored. Give the `_id` in the filter (`fields().id.eq(..)`) or with `set_on_insert`"
            .into(),
    })
}
