//! Paging through the documents a filter matches by `_id`, so that memory
//! and every `$in` built from a page stay bounded however many match.

use crate::error::Result;
use crate::store::session::{collect, primary};
use mongodb::bson::{doc, Bson, Document as BsonDoc, RawDocumentBuf};
use mongodb::{ClientSession, Collection};

/// How many ids a page holds (`docrel::on_delete::BATCH`).
pub const ID_PAGE: usize = 1000;

/// The next page of at most [`ID_PAGE`] ids matching `filter`, after
/// `after` in `_id` order, read from the primary (the page decides a write).
pub(crate) async fn id_page(
    raw: &Collection<RawDocumentBuf>,
    filter: &BsonDoc,
    after: Option<Bson>,
    session: Option<&mut ClientSession>,
) -> Result<Option<Vec<Bson>>> {
    let filter = match after {
        Some(after) => doc! {"$and": [filter.clone(), {"_id": {"$gt": after}}]},
        None => filter.clone(),
    };
    let find = raw
        .find(filter)
        .projection(doc! {"_id": 1})
        .sort(doc! {"_id": 1})
        .limit(ID_PAGE as i64)
        .batch_size(ID_PAGE as u32)
        .selection_criteria(primary());
    let collection = raw.name().to_owned();
    let ids = collect(find, session, &collection, |raw| {
        Ok(raw.get("_id").ok().flatten().and_then(|id| Bson::try_from(id).ok()))
    })
    .await?;
    let page: Vec<Bson> = ids.into_iter().flatten().collect();
    Ok((!page.is_empty()).then_some(page))
}
