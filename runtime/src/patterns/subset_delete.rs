//! Deleting documents that subsets may summarize: the subsets of the
//! parents they had are rebuilt after the delete, whoever deletes them (a
//! delete of the repository, or a cascade of `on_delete` rules).

use crate::error::{Error, Result};
use crate::patterns::subset::{after_delete, parents_of, subsets_of};
use crate::store::session::{in_session, Cx};
use mongodb::bson::{doc, Bson, Document as BsonDoc};

/// Deletes the documents `ids` of `collection` and rebuilds the subsets
/// that summarized them; how many were deleted.
pub(crate) async fn delete(cx: &mut Cx<'_>, collection: &'static str, ids: &[Bson]) -> Result<u64> {
    let filter = doc! {"_id": {"$in": ids}};
    let parents = match subsets_of(collection).is_empty() {
        true => Vec::new(),
        false => parents_of(cx, collection, &filter).await?,
    };
    let coll = cx.db.collection::<BsonDoc>(collection);
    let r = in_session!(coll.delete_many(filter), cx.session())
        .map_err(|e| Error::driver("delete_many", collection, e))?;
    if r.deleted_count > 0 && !parents.is_empty() {
        after_delete(cx, collection, parents).await?;
    }
    Ok(r.deleted_count)
}
