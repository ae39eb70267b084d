//! The other side of an array made two-way, kept from the array
//! ([`crate::schema::stored::AdoptedInverse`]): after a write of the arrays
//! of some documents by a program that declares them one-way, and page by
//! page while the change builds the other side, each document an array
//! names holds the array's document in its inverse, and no other does.
//!
//! Every writer of a link of a document writes that document: the write
//! itself, `link`/`unlink` (both sides), and this reconcile, which bumps
//! `_docrel.links` on the documents it reads. In transactions, two writers
//! of one document's links therefore conflict and one is retried, so the
//! reconcile never acts on an array another transaction changed since its
//! snapshot (a write skew that would leave a link on one side only).

use super::common::{distinct, read};
use crate::error::{Error, Result};
use crate::schema::stored::AdoptedInverse;
use crate::store::path::id_key;
use crate::store::session::{in_session, Cx};
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use std::collections::{HashMap, HashSet};

/// The counter every reconcile of a document's links bumps.
const LINKS: &str = "_docrel.links";

/// What arrays named, by the id key of their documents.
pub(crate) type Named = HashMap<String, Vec<Bson>>;

/// Makes the inverses of `ids`' arrays agree with them (see the module's
/// head), refusing a link that would pass the inverse's bound
/// ([`Error::EmbedFull`]); in the caller's transaction. `before` is what
/// the arrays named before the write (empty when not known): the documents
/// they left are found by `_id`, besides by element, so that a pull does
/// not depend on the other side's multikey index alone (the embedded test
/// server's misses a key now and then).
pub(crate) async fn inverses_from_arrays(
    cx: &mut Cx<'_>,
    a: &'static AdoptedInverse,
    ids: &[Bson],
    before: &Named,
) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let ids = distinct(ids);
    let holders = cx.db.collection::<BsonDoc>(&a.collection);
    in_session!(holders.update_many(doc! {"_id": {"$in": &ids}}, doc! {"$inc": {LINKS: 1_i64}}), cx.session())
        .map_err(|e| Error::driver("update", a.collection.clone(), e))?;
    let arrays = named(cx, a, &ids).await?;
    let all: Vec<Bson> = distinct(&arrays.values().flatten().cloned().collect::<Vec<_>>());
    let full = full(cx, a, &all).await?;
    let mut statements = Vec::new();
    for id in &ids {
        // A document that is gone names nothing: it leaves every inverse.
        let named = arrays.get(&id_key(id)).cloned().unwrap_or_default();
        if let Some((at, max)) =
            named.iter().find_map(|c| full.get(&id_key(c)).filter(|f| !f.1.contains(&id_key(id))).map(|f| (c, f.0)))
        {
            return Err(Error::EmbedFull {
                collection: &a.target,
                id: crate::bson_compat::relaxed_extjson(at),
                field: &a.inverse,
                max,
                len: max as usize + 1,
            });
        }
        if !named.is_empty() {
            statements.push(doc! {
                "q": {"_id": {"$in": &named}, &a.inverse: {"$ne": id.clone()}},
                "u": {"$push": {&a.inverse: id.clone()}},
                "multi": true,
            });
        }
        let kept: HashSet<String> = named.iter().map(id_key).collect();
        let left: Vec<Bson> =
            before.get(&id_key(id)).into_iter().flatten().filter(|c| !kept.contains(&id_key(c))).cloned().collect();
        if !left.is_empty() {
            statements.push(doc! {
                "q": {"_id": {"$in": left}, &a.inverse: id.clone()},
                "u": {"$pull": {&a.inverse: id.clone()}},
                "multi": true,
            });
        }
        statements.push(doc! {
            "q": {&a.inverse: id.clone(), "_id": {"$nin": &named}},
            "u": {"$pull": {&a.inverse: id.clone()}},
            "multi": true,
        });
    }
    crate::store::updates::send_updates(cx, &a.target, statements).await.map(drop)
}

/// What the arrays of `ids` name, each id once, by the id key of their
/// documents (a document not stored is absent).
pub(crate) async fn named(cx: &mut Cx<'_>, a: &AdoptedInverse, ids: &[Bson]) -> Result<Named> {
    if ids.is_empty() {
        return Ok(Named::new());
    }
    let found = read(cx, &a.collection, doc! {"_id": {"$in": ids.to_vec()}}, Some(doc! {&a.field: 1})).await?;
    Ok(found
        .iter()
        .filter_map(|d| {
            let named: Vec<Bson> = d
                .get_array(&a.field)
                .map(|n| n.iter().filter(|i| **i != Bson::Null).cloned().collect())
                .unwrap_or_default();
            Some((id_key(d.get("_id")?), distinct(&named)))
        })
        .collect())
}

/// The documents of `named` whose inverse holds as many as its bound
/// allows, by id key: (the bound, the id keys they hold). One read.
async fn full(
    cx: &mut Cx<'_>,
    a: &'static AdoptedInverse,
    named: &[Bson],
) -> Result<HashMap<String, (u32, HashSet<String>)>> {
    let Some(max) = cx.graph.inverse_bound(a).filter(|_| !named.is_empty()) else { return Ok(HashMap::new()) };
    let last = format!("{}.{}", a.inverse, max.saturating_sub(1));
    let filter = doc! {"_id": {"$in": named}, last: {"$exists": true}};
    let found = read(cx, &a.target, filter, Some(doc! {&a.inverse: 1})).await?;
    Ok(found
        .iter()
        .filter_map(|d| {
            let held = d.get_array(&a.inverse).map(|h| h.iter().map(id_key).collect()).unwrap_or_default();
            Some((id_key(d.get("_id")?), (max, held)))
        })
        .collect())
}
