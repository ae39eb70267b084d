//! The `on_delete` rules of references, applied when a referred document is
//! deleted through docrel: plan the whole cascade first (refusing on any
//! `restrict`, before anything is written), then pull and delete.

use crate::error::{show_id, Error, Result};
use crate::schema::document::{OnDelete, Relation, RelationKind, Schema};
use crate::schema::graph::graph;
use crate::store::session::{in_session, Cx};
use mongodb::bson::{doc, Bson, Document as BsonDoc, RawDocumentBuf};

/// Cascades deeper than this are refused: the schema has a cycle of
/// `on_delete = cascade`.
const MAX_CASCADE_DEPTH: usize = 16;

/// How many ids one step of a cascade reads, pulls from and deletes: one
/// `find` page, one `updateMany` per pulling reference, one `deleteMany`.
/// Memory holds at most this many ids per level of the cascade.
pub const BATCH: usize = crate::store::ID_PAGE;

/// Whether deleting a document of `collection` has anything to apply.
pub(crate) fn has_rules(collection: &str) -> bool {
    graph().references_to(collection).iter().any(|(_, r)| rule(r) != OnDelete::Nothing)
}

/// [`apply`] for ids already [`check`]ed (a delete of many documents checks
/// every page before it writes any).
pub(crate) async fn apply_checked(cx: &mut Cx<'_>, collection: &'static str, ids: &[Bson]) -> Result<()> {
    if ids.is_empty() || !has_rules(collection) {
        return Ok(());
    }
    run(cx, collection, ids, 0).await
}

/// Refuses, before anything is written, when a `restrict` anywhere in the
/// cascade from `collection` finds a referrer of `ids`, or the cascade goes
/// deeper than [`MAX_CASCADE_DEPTH`]. Reads nothing when no rule below
/// could refuse.
pub(crate) async fn check(cx: &mut Cx<'_>, collection: &'static str, ids: &[Bson]) -> Result<()> {
    if !may_refuse(collection, 0) {
        return Ok(());
    }
    check_level(cx, collection, ids.to_vec(), 0).await
}

/// Whether a `restrict`, or a cascade too deep, is reachable from `collection`.
fn may_refuse(collection: &str, depth: usize) -> bool {
    if depth > MAX_CASCADE_DEPTH {
        return true;
    }
    graph().references_to(collection).iter().any(|&(schema, rel)| match rule(rel) {
        OnDelete::Restrict => true,
        OnDelete::Cascade => may_refuse(schema.collection, depth + 1),
        _ => false,
    })
}

fn too_deep(collection: &str) -> Error {
    Error::Invalid {
        what: crate::error::Misuse::OnDelete,
        message: format!(
            "cascade from `{collection}` goes deeper than {MAX_CASCADE_DEPTH} levels; the schema has a \
             cycle of `on_delete = cascade`: break it with `pull` or `restrict`"
        ),
    }
}

fn check_level<'a>(
    cx: &'a mut Cx<'_>,
    collection: &'static str,
    ids: Vec<Bson>,
    depth: usize,
) -> futures::future::BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        if depth > MAX_CASCADE_DEPTH {
            return Err(too_deep(collection));
        }
        for &(schema, rel) in graph().references_to(collection) {
            match rule(rel) {
                OnDelete::Restrict => {
                    let referrers = cx.db.collection::<RawDocumentBuf>(schema.collection);
                    let filter = doc! { rel.id_path(): {"$in": ids.clone()} };
                    let count = in_session!(referrers.count_documents(filter), cx.session())
                        .map_err(|e| Error::driver("count", schema.collection, e))?;
                    if count > 0 {
                        return Err(Error::StillReferenced {
                            collection,
                            id: ids.iter().map(show_id).collect::<Vec<_>>().join(", "),
                            referrer: schema.collection,
                            field: rel.field,
                            count,
                        });
                    }
                }
                OnDelete::Cascade if may_refuse(schema.collection, depth + 1) => {
                    let mut after = None;
                    while let Some(page) = dependants(cx, schema, rel, &ids, after).await? {
                        after = page.last().cloned();
                        check_level(cx, schema.collection, page, depth + 1).await?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    })
}

/// The next page of at most [`BATCH`] ids of `schema` documents whose
/// reference `rel` holds one of `ids`, after the id `after` in `_id` order.
async fn dependants(
    cx: &mut Cx<'_>,
    schema: &'static crate::schema::document::Schema,
    rel: &'static Relation,
    ids: &[Bson],
    after: Option<Bson>,
) -> Result<Option<Vec<Bson>>> {
    let filter = doc! { rel.id_path(): {"$in": ids} };
    crate::store::id_page(&cx.db.collection(schema.collection), &filter, after, cx.session()).await
}

/// Applies the rules for `ids` of `collection`: one pull per pulling
/// reference, and for each cascading one, page by page, its dependants'
/// own rules and then their deletion.
fn run<'a>(
    cx: &'a mut Cx<'_>,
    collection: &'static str,
    ids: &'a [Bson],
    depth: usize,
) -> futures::future::BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        if depth > MAX_CASCADE_DEPTH {
            return Err(too_deep(collection));
        }
        for &(schema, rel) in graph().references_to(collection) {
            match rule(rel) {
                OnDelete::Nothing | OnDelete::Restrict => {}
                OnDelete::Pull => pull(cx, schema, rel, ids).await?,
                OnDelete::Cascade => {
                    let mut after = None;
                    while let Some(page) = dependants(cx, schema, rel, ids, after).await? {
                        after = page.last().cloned();
                        run(cx, schema.collection, &page, depth + 1).await?;
                        let coll = cx.db.collection::<BsonDoc>(schema.collection);
                        in_session!(coll.delete_many(doc! {"_id": {"$in": page}}), cx.session())
                            .map_err(|e| Error::driver("delete_many", schema.collection, e))?;
                    }
                }
            }
        }
        Ok(())
    })
}

/// Removes `ids` from the reference `rel` of every `schema` document,
/// with the copies and version records that came through them.
async fn pull(cx: &mut Cx<'_>, schema: &'static Schema, rel: &'static Relation, ids: &[Bson]) -> Result<()> {
    let collection = schema.collection;
    let coll = cx.db.collection::<BsonDoc>(collection);
    let filter = doc! { rel.id_path(): {"$in": ids} };
    let update = match rel.kind {
        RelationKind::RefMany { key: Some(key), .. } => {
            // The elements' version records go with them.
            let records: BsonDoc = ids
                .iter()
                .map(|id| {
                    let path = format!("_docrel.copies.{}.{}", rel.field, crate::store::path::id_key(id));
                    (path, Bson::String(String::new()))
                })
                .collect();
            if rel.copies.is_empty() {
                doc! {"$pull": { rel.field: { key: {"$in": ids} } }}
            } else {
                doc! {"$pull": { rel.field: { key: {"$in": ids} } }, "$unset": records}
            }
        }
        RelationKind::RefMany { key: None, .. } => doc! {"$pull": { rel.field: {"$in": ids} }},
        _ => {
            // The copies made through the reference, and their records, go
            // with it: they copy a document the holder no longer refers to.
            let mut unset = crate::denormalize::copies::cleared_through(schema, rel.field);
            unset.insert(rel.field, "");
            doc! {"$unset": unset}
        }
    };
    in_session!(coll.update_many(filter, update), cx.session())
        .map_err(|e| Error::driver("update_many", collection, e))?;
    Ok(())
}

/// The rule applied to `rel`: as declared, except that the array or
/// optional side of a two-way reference is pulled by default, so both
/// sides keep agreeing when a document is deleted.
fn rule(rel: &Relation) -> OnDelete {
    let pullable = matches!(rel.kind, RelationKind::RefMany { .. } | RelationKind::RefOne { optional: true });
    match rel.on_delete {
        OnDelete::Nothing if rel.inverse.is_some() && pullable => OnDelete::Pull,
        declared => declared,
    }
}
