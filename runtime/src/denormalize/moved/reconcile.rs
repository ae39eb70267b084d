//! The two reconciles of a move, per parent: the new collection from the
//! old arrays (after a write of the arrays, and the copy), and the arrays
//! from the collection (after a write of the new documents). Both read the
//! parent's whole array and documents: correct whatever the write was, at
//! a cost of the array's length, paid only while a move runs.

use super::common::{bump, distinct, read, summaries, within_bound, Reach};
use crate::error::{Error, Misuse, Result};
use crate::schema::stored::{ActiveMove, OldArray};
use crate::store::path::id_key;
use crate::store::session::Cx;
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use std::collections::HashMap;

/// Each parent's array, by the parent's id key. One embedded document
/// ([`OldArray::One`]) is an array of that one element, its key the
/// parent's `_id`.
async fn arrays(cx: &mut Cx<'_>, mv: &ActiveMove, parents: &[Bson]) -> Result<HashMap<String, Vec<BsonDoc>>> {
    let filter = doc! {"_id": {"$in": parents.to_vec()}};
    let found = read(cx, &mv.spec.from.collection, filter, Some(doc! {&mv.field: 1})).await?;
    Ok(found
        .into_iter()
        .map(|d| {
            let id = d.get("_id").cloned().unwrap_or(Bson::Null);
            let elements = match mv.old {
                OldArray::One => d.get_document(&mv.field).ok().map(|one| {
                    let mut one = one.clone();
                    one.insert(&mv.spec.key, id.clone());
                    vec![one]
                }),
                _ => d.get_array(&mv.field).ok().map(|a| a.iter().filter_map(|e| e.as_document().cloned()).collect()),
            };
            (id_key(&id), elements.unwrap_or_default())
        })
        .collect())
}

/// Each parent's documents in the move's collection, by the parent's id key.
async fn documents(cx: &mut Cx<'_>, mv: &ActiveMove, parents: &[Bson]) -> Result<HashMap<String, Vec<BsonDoc>>> {
    let filter = doc! {&mv.spec.parent_field: {"$in": parents.to_vec()}};
    let mut out: HashMap<String, Vec<BsonDoc>> = HashMap::new();
    for d in read(cx, &mv.spec.to.collection, filter, None).await? {
        out.entry(d.get(&mv.spec.parent_field).map(id_key).unwrap_or_default()).or_default().push(d);
    }
    Ok(out)
}

/// Whether two documents hold the same fields, whatever their order, apart
/// from docrel's bookkeeping.
fn same(a: &BsonDoc, b: &BsonDoc) -> bool {
    let fields = |d: &BsonDoc| d.keys().filter(|k| *k != "_docrel").count();
    fields(a) == fields(b) && a.iter().filter(|(k, _)| *k != "_docrel").all(|(k, v)| b.get(k) == Some(v))
}

/// Makes the documents of the move's collection of each of `parents` what
/// their arrays hold: an element is a document with its parent's `_id` in
/// the parent reference; a document no array holds any more goes. A parent
/// that is gone has no array: its documents go.
pub(super) async fn collection_from_arrays(
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
    let mut documents = documents(cx, mv, parents).await?;
    let (mut gone, mut statements) = (Vec::new(), Vec::new());
    for parent in parents {
        let key = id_key(parent);
        let mut existing: HashMap<String, BsonDoc> = documents
            .remove(&key)
            .unwrap_or_default()
            .into_iter()
            .map(|d| (d.get("_id").map(id_key).unwrap_or_default(), d))
            .collect();
        let elements = match arrays.get(&key) {
            Some(one) if mv.old == OldArray::One => identified(cx, mv, parent, one, &existing),
            Some(elements) => elements.clone(),
            None => Vec::new(),
        };
        for e in &elements {
            let Some(id) = e.get(&mv.spec.key) else { continue };
            let mut want = e.clone();
            want.insert(&mv.spec.parent_field, parent.clone());
            match existing.remove(&id_key(id)) {
                Some(have) if same(&have, &want) => {}
                Some(have) => {
                    if let Ok(bookkeeping) = have.get_document("_docrel") {
                        want.insert("_docrel", bookkeeping.clone());
                    }
                    statements.push(doc! {"q": {"_id": id.clone()}, "u": want, "upsert": false});
                }
                None if reach == Reach::Full => {
                    statements.push(doc! {"q": {"_id": id.clone()}, "u": want, "upsert": true})
                }
                None => {}
            }
        }
        gone.extend(existing.into_values().filter_map(|d| d.get("_id").cloned()));
    }
    let to = &mv.spec.to.collection;
    let changed = !gone.is_empty() || !statements.is_empty();
    if !gone.is_empty() {
        let coll = cx.db.collection::<BsonDoc>(to);
        crate::store::session::in_session!(coll.delete_many(doc! {"_id": {"$in": gone}}), cx.session())
            .map_err(|e| Error::driver("delete", to.clone(), e))?;
    }
    if !statements.is_empty() {
        crate::store::updates::send_updates(cx, to, statements).await?;
    }
    if changed {
        summaries(cx, mv, parents).await?;
    }
    Ok(())
}

/// One embedded document as the element of its parent: it is the
/// parent's one document whatever that one's `_id` (the old documents of
/// a move back keep theirs), or a new one, whose `_id` is the parent's
/// (or, for a move back whose old type's `_id` is an `ObjectId`, a new
/// one).
fn identified(
    cx: &Cx<'_>,
    mv: &ActiveMove,
    parent: &Bson,
    one: &[BsonDoc],
    existing: &HashMap<String, BsonDoc>,
) -> Vec<BsonDoc> {
    let id = match existing.values().next().and_then(|d| d.get("_id")) {
        Some(id) if existing.len() == 1 => id.clone(),
        _ if mv.spec.kind.is_back() && object_ids(cx, mv) => Bson::ObjectId(mongodb::bson::oid::ObjectId::new()),
        _ => parent.clone(),
    };
    one.iter()
        .map(|e| {
            let mut e = e.clone();
            e.insert(&mv.spec.key, id.clone());
            e
        })
        .collect()
}

/// Whether the old documents of `mv`, as a type of their collection
/// declares them, have `ObjectId`s for `_id`.
fn object_ids(cx: &Cx<'_>, mv: &ActiveMove) -> bool {
    let types = cx.graph.types_of(&mv.spec.to.collection);
    types.iter().flat_map(|s| s.fields.iter()).any(|f| f.bson == "_id" && f.rust_type.ends_with("ObjectId"))
}

/// Makes each of `parents`' arrays hold their documents in the move's
/// collection: elements keep their places, a changed one its new fields,
/// one whose document went goes, and new documents are appended in `_id`
/// order. An array that would pass the old bound refuses the write
/// ([`Error::EmbedFull`]): old readers keep a complete array.
pub(super) async fn arrays_from_collection(cx: &mut Cx<'_>, mv: &'static ActiveMove, parents: &[Bson]) -> Result<()> {
    if parents.is_empty() {
        return Ok(());
    }
    let parents = &distinct(parents)[..];
    let arrays = arrays(cx, mv, parents).await?;
    let mut documents = documents(cx, mv, parents).await?;
    let mut statements = Vec::new();
    for parent in parents {
        let key = id_key(parent);
        let documents = documents.remove(&key).unwrap_or_default();
        let Some(old) = arrays.get(&key) else {
            // A parent that is not stored holds nothing: a document written
            // for it would be in the new shape alone (deleting one is fine).
            if let Some(d) = documents.first() {
                return Err(moved_write(
                    mv,
                    format!(
                        "`{}` {} is not stored, so the other shape cannot hold the `{}` document {} written for it \
                         (deleted meanwhile?)",
                        mv.spec.from.collection,
                        crate::bson_compat::relaxed_extjson(parent),
                        mv.spec.to.collection,
                        d.get("_id").map(crate::bson_compat::relaxed_extjson).unwrap_or_default()
                    ),
                ));
            }
            continue;
        };
        let elements = elements_of(mv, old, documents);
        within_bound(mv, parent, elements.len())?;
        let key = |d: &BsonDoc| {
            let mut d = d.clone();
            // One document of a move back keeps its own `_id`.
            if mv.spec.kind.is_back() {
                d.remove(&mv.spec.key);
            }
            d
        };
        if elements.len() != old.len() || elements.iter().zip(old).any(|(a, b)| !same(&key(a), &key(b))) {
            statements.push(doc! {"q": {"_id": parent.clone()}, "u": written(mv, parent, old, elements)?});
        }
    }
    if !statements.is_empty() {
        crate::store::updates::send_updates(cx, &mv.spec.from.collection, statements).await?;
    }
    Ok(())
}

/// The array of a parent that held `old`, given its documents now.
fn elements_of(mv: &ActiveMove, old: &[BsonDoc], documents: Vec<BsonDoc>) -> Vec<BsonDoc> {
    let mut by_id: HashMap<String, BsonDoc> = HashMap::new();
    let mut order = Vec::new();
    for mut d in documents {
        d.remove(&mv.spec.parent_field);
        d.remove("_docrel");
        let id = d.get("_id").map(id_key).unwrap_or_default();
        order.push(id.clone());
        by_id.insert(id, d);
    }
    let mut out: Vec<BsonDoc> = old.iter().filter_map(|e| by_id.remove(&e.get(&mv.spec.key).map(id_key)?)).collect();
    out.extend(order.into_iter().filter_map(|id| by_id.remove(&id)));
    out
}

/// The update making a parent's old field hold `elements`: the array, or
/// for one embedded document the document without its key (`$unset` when
/// none is left). One document refuses what the old version could not
/// read: a document whose `_id` is not its parent's, or none where the old
/// type requires one.
fn written(mv: &ActiveMove, parent: &Bson, old: &[BsonDoc], elements: Vec<BsonDoc>) -> Result<BsonDoc> {
    if mv.old != OldArray::One {
        let array: Vec<Bson> = elements.into_iter().map(Bson::Document).collect();
        return Ok(doc! {"$set": {&mv.field: array}});
    }
    let refused = |why: String| moved_write(mv, why);
    let parent_text = crate::bson_compat::relaxed_extjson(parent);
    let Some(mut one) = elements.into_iter().next() else {
        if mv.required && !old.is_empty() {
            return Err(refused(format!(
                "the old version's `{}::{}` is required, so `{}` {parent_text} keeps its `{}` until the old field \
                 is retired (delete the parent, or replace its `{}`)",
                mv.spec.from.rust_type, mv.field, mv.spec.from.collection, mv.spec.to.rust_type, mv.spec.to.rust_type
            )));
        }
        return Ok(doc! {"$unset": {&mv.field: ""}});
    };
    match one.remove(&mv.spec.key) {
        _ if mv.spec.kind.is_back() => Ok(doc! {"$set": {&mv.field: one}}),
        Some(id) if id_key(&id) == id_key(parent) => Ok(doc! {"$set": {&mv.field: one}}),
        id => Err(refused(format!(
            "a `{}` of `{}` {parent_text} has `_id` {}, and while `{}.{}` holds one document its `_id` is its \
             parent's: insert it with `_id` {parent_text}",
            mv.spec.to.rust_type,
            mv.spec.from.collection,
            id.map_or_else(|| "none".to_owned(), |i| crate::bson_compat::relaxed_extjson(&i).to_string()),
            mv.spec.from.collection,
            mv.field
        ))),
    }
}

/// The refusal of a write the other shape of `mv` cannot hold.
pub(super) fn moved_write(mv: &ActiveMove, why: String) -> Error {
    Error::Invalid {
        what: Misuse::MovedWrite,
        message: format!("`{}` is moving ({}): {why}; nothing was written", mv.spec.label(), mv.state),
    }
}

/// Refuses a write that left a parent of `parents` with more than the one
/// document a move back keeps, before its field is kept (`announced`):
/// the field could hold only one of them. It bumps the parents'
/// `_docrel.links` first, so that a process already keeping the field
/// (`maintained`) and writing it conflicts with this write, and one of
/// them is retried, rather than each adding a document the other misses.
pub(super) async fn one_each(cx: &mut Cx<'_>, mv: &'static ActiveMove, parents: &[Bson]) -> Result<()> {
    let parents = distinct(parents);
    bump(cx, mv, &parents).await?;
    let documents = documents(cx, mv, &parents).await?;
    if let Some((parent, docs)) = documents.into_iter().find(|(_, d)| d.len() > 1) {
        return Err(Error::EmbedFull {
            collection: &mv.spec.from.collection,
            id: parent,
            field: &mv.field,
            max: 1,
            len: docs.len(),
        });
    }
    Ok(())
}
