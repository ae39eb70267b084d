//! Deleting documents that subsets may summarize: the subsets rebuilt are
//! those of the parents the documents had when they were deleted, whoever
//! deletes them (a delete of the repository, or a cascade of `on_delete`
//! rules).
//!
//! The parents are read first, then the delete is pinned to them: it
//! deletes a document only while it still has the parents read. A child
//! moved in between is not deleted by that write; it is read again with
//! its new parents and deleted then, so its new parent's subset is the one
//! rebuilt (reading the parents before an unpinned delete rebuilt the old
//! parent and left the child in the new one's subset). Two round trips, as
//! before, and one more read and delete per round a move came in.

use crate::error::{Error, Result};
use crate::patterns::subset::after_delete;
use crate::schema::graph::Graph;
use crate::store::path::id_key;
use crate::store::primary;
use crate::store::session::{collect, in_session, plain, Cx};
use mongodb::bson::{doc, Bson, Document as BsonDoc};

/// How many times a delete reads the parents again after a move of its
/// documents came in between; then the rest is deleted unpinned, with the
/// parents of the last read.
const ROUNDS: u32 = 8;

/// Deletes the documents `ids` of `collection` and rebuilds the subsets
/// that summarized them; how many were deleted.
pub(crate) async fn delete(cx: &mut Cx<'_>, collection: &'static str, ids: &[Bson], gone: Gone<'_>) -> Result<u64> {
    delete_matching(cx, collection, doc! {"_id": {"$in": ids}}, true, gone).await
}

/// Whether a parent (its collection, its id) is deleted by the same
/// operation, so its subset is not rebuilt (a cascade deleting a recipe
/// and its comments rebuilds no newest-comments list of that recipe).
pub(crate) type Gone<'a> = &'a (dyn Fn(&str, &Bson) -> bool + Sync);

/// No parent is deleted by the same operation.
pub(crate) fn none_gone(_: &str, _: &Bson) -> bool {
    false
}

/// Deletes what `filter` matches in `collection` (one document at most
/// unless `many`; a filter of one page of ids when `many`), then rebuilds
/// the subsets of the parents those documents had when deleted; how many
/// were deleted.
pub(crate) async fn delete_matching(
    cx: &mut Cx<'_>,
    collection: &'static str,
    filter: BsonDoc,
    many: bool,
    gone: Gone<'_>,
) -> Result<u64> {
    let coll = cx.db.collection::<BsonDoc>(collection);
    if cx.graph.subsets_of(collection).is_empty() {
        let r = match many {
            true => in_session!(coll.delete_many(filter), cx.session()),
            false => in_session!(coll.delete_one(filter), cx.session()),
        };
        return Ok(r.map_err(|e| Error::driver("delete", collection, e))?.deleted_count);
    }
    let mut deleted = 0;
    for round in 1..=ROUNDS {
        let found = images(cx, collection, &filter, many).await?;
        if found.is_empty() {
            break;
        }
        let pinned = match round < ROUNDS {
            true => doc! {"$and": [filter.clone(), pin(cx.graph, collection, &found)]},
            false => filter.clone(),
        };
        let r = match many {
            true => in_session!(coll.delete_many(pinned), cx.session()),
            false => in_session!(coll.delete_one(pinned), cx.session()),
        }
        .map_err(|e| Error::driver("delete", collection, e))?;
        deleted += r.deleted_count;
        if r.deleted_count > 0 {
            let targets = cx.graph.subsets_of(collection);
            let mut kept = parents(cx.graph, collection, &found);
            kept.retain(|(i, parent)| targets.get(*i).is_some_and(|t| !gone(t.parent, parent)));
            after_delete(cx, collection, kept).await?;
        }
        if r.deleted_count as usize == found.len() {
            break;
        }
    }
    Ok(deleted)
}

/// The `_id` and subset parents of the documents `filter` matches (one
/// unless `many`), read on the primary: they decide the rebuilds.
async fn images(cx: &mut Cx<'_>, collection: &'static str, filter: &BsonDoc, many: bool) -> Result<Vec<BsonDoc>> {
    let mut projection = doc! {"_id": 1};
    for target in cx.graph.subsets_of(collection) {
        projection.insert(target.parent_field, 1);
    }
    let coll = cx.db.collection::<BsonDoc>(collection);
    let find =
        coll.find(filter.clone()).projection(projection).limit(if many { 0 } else { 1 }).selection_criteria(primary());
    collect(find, cx.session(), collection, |raw| plain(collection, raw)).await
}

/// The documents `found` with the parents they were read with: one clause
/// per set of parents (an absent parent is pinned as absent).
fn pin(g: &'static Graph, collection: &str, found: &[BsonDoc]) -> BsonDoc {
    let mut groups: Vec<(BsonDoc, Vec<Bson>)> = Vec::new();
    for d in found {
        let key: BsonDoc = g
            .subsets_of(collection)
            .iter()
            .map(|t| (t.parent_field.to_owned(), d.get(t.parent_field).cloned().unwrap_or(Bson::Null)))
            .collect();
        let id = d.get("_id").cloned().unwrap_or(Bson::Null);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, ids)) => ids.push(id),
            None => groups.push((key, vec![id])),
        }
    }
    let mut clauses: Vec<BsonDoc> = groups
        .into_iter()
        .map(|(key, ids)| {
            let mut clause = doc! {"_id": {"$in": ids}};
            clause.extend(key);
            clause
        })
        .collect();
    match clauses.len() {
        1 => clauses.remove(0),
        _ => doc! {"$or": clauses},
    }
}

/// The parents `found` had, per subset of `collection`, once each.
fn parents(g: &'static Graph, collection: &str, found: &[BsonDoc]) -> Vec<(usize, Bson)> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (i, target) in g.subsets_of(collection).iter().enumerate() {
        for parent in found.iter().filter_map(|d| d.get(target.parent_field)).filter(|p| **p != Bson::Null) {
            if seen.insert((i, id_key(parent))) {
                out.push((i, parent.clone()));
            }
        }
    }
    out
}
