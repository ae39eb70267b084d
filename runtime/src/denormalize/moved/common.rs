//! What both kinds of reconcile share: how far one reaches, the parents
//! each once, reads in the call's session, and the new version's subsets
//! of the moved documents rebuilt.

use crate::error::Result;
use crate::schema::stored::ActiveMove;
use crate::store::path::id_key;
use crate::store::session::{collect, Cx};
use mongodb::bson::{doc, Bson, Document as BsonDoc, RawDocumentBuf};

/// How much of the collection's difference a reconcile writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    /// Deletes and updates only: while some process may not know of the
    /// move yet (`announced`), the collection never gains an element its
    /// array could lose without a mirror.
    DeletesAndUpdates,
    /// Every difference.
    Full,
}

/// `parents` each once (by id key, as the reconciles key them): a parent
/// named twice would be reconciled the second time against documents the
/// first already took.
pub(super) fn distinct(parents: &[Bson]) -> Vec<Bson> {
    let mut seen = std::collections::HashSet::new();
    parents.iter().filter(|p| seen.insert(id_key(p))).cloned().collect()
}

/// The documents `filter` finds in `collection` (only the `projection`'s
/// fields when given), read in the call's session from the primary.
pub(crate) async fn read(
    cx: &mut Cx<'_>,
    collection: &str,
    filter: BsonDoc,
    projection: Option<BsonDoc>,
) -> Result<Vec<BsonDoc>> {
    let coll = cx.db.collection::<RawDocumentBuf>(collection);
    let mut find = coll.find(filter).sort(doc! {"_id": 1}).selection_criteria(crate::store::primary());
    if let Some(p) = projection {
        find = find.projection(p);
    }
    collect(find, cx.session(), collection, |raw| crate::store::session::plain(collection, raw)).await
}

/// Rebuilds the parents' subsets of the move's collection (the new
/// version's newest N): documents written by a reconcile, not by a write of
/// their own type, change what they summarize.
pub(super) async fn summaries(cx: &mut Cx<'_>, mv: &ActiveMove, parents: &[Bson]) -> Result<()> {
    let graph = cx.graph;
    for target in graph.subsets_of(&mv.spec.to.collection).iter().filter(|t| t.parent == mv.spec.from.collection) {
        target.rebuild_many(cx, parents).await?;
    }
    Ok(())
}

/// Bumps `_docrel.links` of `parents`, in the call's transaction, before
/// anything else is written: two transactions keeping the same parent's
/// other shape then conflict on the parent (one is retried whole), rather
/// than each adding what the other does not see (a page, a document).
pub(super) async fn bump(cx: &mut Cx<'_>, mv: &ActiveMove, parents: &[Bson]) -> crate::error::Result<()> {
    let coll = cx.db.collection::<mongodb::bson::Document>(&mv.spec.from.collection);
    let bump = doc! {"$inc": {"_docrel.links": 1_i64}};
    crate::store::session::in_session!(coll.update_many(doc! {"_id": {"$in": parents}}, bump), cx.session())
        .map_err(|e| crate::error::Error::driver("update", mv.spec.from.collection.clone(), e))?;
    Ok(())
}

/// Refuses an old array of `parent` that would hold `len` items, past the
/// bound the move keeps while both shapes are kept ([`Error::EmbedFull`]):
/// old readers keep a complete array.
pub(super) fn within_bound(mv: &'static ActiveMove, parent: &Bson, len: usize) -> crate::error::Result<()> {
    match mv.bound.filter(|max| len > *max as usize) {
        Some(max) => Err(crate::error::Error::EmbedFull {
            collection: &mv.spec.from.collection,
            id: crate::bson_compat::relaxed_extjson(parent),
            field: &mv.field,
            max,
            len,
        }),
        None => Ok(()),
    }
}
