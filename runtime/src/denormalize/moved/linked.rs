//! The two reconciles of a move whose old array holds ids (one-to-many →
//! one-to-squillions): a parent's array of ids and the parent reference of
//! the documents it names are one relation kept in two places. After a
//! write of the arrays (and the copy), each document an array names refers
//! to that parent and no other document does; after a write of the
//! documents, each array names exactly the documents that refer to it. Both
//! read the parents' arrays and their documents' ids, paid only while a
//! move runs.

use super::common::{distinct, read, summaries, within_bound, Reach};
use crate::error::Result;
use crate::schema::stored::ActiveMove;
use crate::store::path::id_key;
use crate::store::session::Cx;
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use std::collections::HashMap;

/// Each parent's ids, by the parent's id key; a parent not stored is absent.
async fn arrays(cx: &mut Cx<'_>, mv: &ActiveMove, parents: &[Bson]) -> Result<HashMap<String, Vec<Bson>>> {
    let filter = doc! {"_id": {"$in": parents.to_vec()}};
    let found = read(cx, &mv.spec.from.collection, filter, Some(doc! {&mv.field: 1})).await?;
    Ok(found
        .into_iter()
        .map(|d| {
            let ids = d.get_array(&mv.field).map(|a| a.iter().filter(|i| **i != Bson::Null).cloned().collect());
            (d.get("_id").map(id_key).unwrap_or_default(), ids.unwrap_or_default())
        })
        .collect())
}

/// The documents `filter` finds in the move's collection: (id, parent).
async fn links(cx: &mut Cx<'_>, mv: &ActiveMove, filter: BsonDoc) -> Result<Vec<(Bson, Option<Bson>)>> {
    let projection = doc! {"_id": 1, &mv.spec.parent_field: 1};
    let found = read(cx, &mv.spec.to.collection, filter, Some(projection)).await?;
    Ok(found
        .into_iter()
        .filter_map(|d| {
            let parent = d.get(&mv.spec.parent_field).filter(|p| **p != Bson::Null).cloned();
            Some((d.get("_id")?.clone(), parent))
        })
        .collect())
}

/// Makes the parent reference of the documents of `parents` what their
/// arrays say: a document an array names refers to that parent (taken out
/// of the array of the parent it referred to before, so it has one), and
/// a document referring to one of them that its array no longer names (or
/// whose parent is gone) refers to none.
pub(super) async fn children_from_arrays(
    cx: &mut Cx<'_>,
    mv: &ActiveMove,
    parents: &[Bson],
    reach: Reach,
) -> Result<()> {
    if parents.is_empty() {
        return Ok(());
    }
    let parents = &distinct(parents)[..];
    let arrays = arrays(cx, mv, parents).await?;
    let named: Vec<Bson> = arrays.values().flatten().cloned().collect();
    let mut current: HashMap<String, Option<Bson>> = HashMap::new();
    if !named.is_empty() {
        for (id, parent) in links(cx, mv, doc! {"_id": {"$in": named}}).await? {
            current.insert(id_key(&id), parent);
        }
    }
    let linked = links(cx, mv, doc! {&mv.spec.parent_field: {"$in": parents.to_vec()}}).await?;
    let (field, parent_field) = (&mv.field, &mv.spec.parent_field);
    let (mut children, mut pulls, mut touched) = (Vec::new(), Vec::new(), parents.to_vec());
    for parent in parents {
        let ids = arrays.get(&id_key(parent)).map(Vec::as_slice).unwrap_or_default();
        let held: std::collections::HashSet<String> = ids.iter().map(id_key).collect();
        for (id, was) in linked.iter().filter(|(_, p)| p.as_ref().map(id_key) == Some(id_key(parent))) {
            if !held.contains(&id_key(id)) {
                children.push(
                    doc! {"q": {"_id": id.clone(), parent_field: was.clone()}, "u": {"$unset": {parent_field: ""}}},
                );
            }
        }
        if reach != Reach::Full {
            continue;
        }
        for id in ids {
            // An id naming no document makes nothing.
            let Some(was) = current.get(&id_key(id)).cloned() else { continue };
            if was.as_ref().map(id_key) == Some(id_key(parent)) {
                continue;
            }
            children.push(doc! {"q": {"_id": id.clone()}, "u": {"$set": {parent_field: parent.clone()}}});
            if let Some(other) = was {
                pulls.push(doc! {"q": {"_id": other.clone()}, "u": {"$pull": {field: id.clone()}}});
                touched.push(other.clone());
            }
            // Named by two of these arrays: the later one has it.
            current.insert(id_key(id), Some(parent.clone()));
        }
    }
    if children.is_empty() && pulls.is_empty() {
        return Ok(());
    }
    if !pulls.is_empty() {
        crate::store::updates::send_updates(cx, &mv.spec.from.collection, pulls).await?;
    }
    if !children.is_empty() {
        crate::store::updates::send_updates(cx, &mv.spec.to.collection, children).await?;
    }
    summaries(cx, mv, &distinct(&touched)).await
}

/// Makes each of `parents`' arrays name exactly the documents that refer
/// to it: ids keep their places, an id whose document no longer refers to
/// it (or is gone) goes, and the ids of documents newly referring to it
/// are appended in `_id` order. An array that would pass the old bound
/// refuses the write ([`Error::EmbedFull`]): old readers keep a complete
/// array.
pub(super) async fn arrays_from_children(cx: &mut Cx<'_>, mv: &'static ActiveMove, parents: &[Bson]) -> Result<()> {
    if parents.is_empty() {
        return Ok(());
    }
    let parents = &distinct(parents)[..];
    let arrays = arrays(cx, mv, parents).await?;
    let mut children: HashMap<String, Vec<Bson>> = HashMap::new();
    for (id, parent) in links(cx, mv, doc! {&mv.spec.parent_field: {"$in": parents.to_vec()}}).await? {
        children.entry(parent.as_ref().map(id_key).unwrap_or_default()).or_default().push(id);
    }
    let mut statements = Vec::new();
    for parent in parents {
        let key = id_key(parent);
        // A parent that is not stored holds nothing: a dangling parent
        // reference is the reference checks' to report.
        let Some(old) = arrays.get(&key) else { continue };
        let mine = children.remove(&key).unwrap_or_default();
        let keys: std::collections::HashSet<String> = mine.iter().map(id_key).collect();
        let mut ids: Vec<Bson> = old.iter().filter(|i| keys.contains(&id_key(i))).cloned().collect();
        let kept: std::collections::HashSet<String> = ids.iter().map(id_key).collect();
        ids.extend(mine.into_iter().filter(|i| !kept.contains(&id_key(i))));
        within_bound(mv, parent, ids.len())?;
        if ids != *old {
            statements.push(doc! {"q": {"_id": parent.clone()}, "u": {"$set": {&mv.field: ids}}});
        }
    }
    if !statements.is_empty() {
        crate::store::updates::send_updates(cx, &mv.spec.from.collection, statements).await?;
    }
    Ok(())
}
