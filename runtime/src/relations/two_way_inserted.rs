//! The two-way references of new documents (inserted, or created by a
//! save or an upsert): both sides agree from the start. The plan of a
//! write of whole documents ([`crate::denormalize::write::InsertPlan`])
//! runs in a layer below this one, so the repository hands it [`SIDES`],
//! and the plan calls back here at the points of the write where the
//! other side is owed.

use crate::denormalize::write::{Linking, TwoWaySides};
use crate::error::{Error, Result};
use crate::schema::document::{Relation, Schema};
use crate::schema::graph::Graph;
use crate::store::path::id_key;
use crate::store::session::{collect, Cx};
use mongodb::bson::{doc, Bson, Document as BsonDoc, RawDocumentBuf};
use std::collections::{HashMap, HashSet};

/// What the plan of a write of whole documents calls for their two-way references.
pub(crate) static SIDES: NewSides = NewSides;

/// The two-way side of new documents (see the module's doc).
pub(crate) struct NewSides;

impl TwoWaySides for NewSides {
    fn check(&self, g: &'static Graph, schema: &'static Schema, docs: &[BsonDoc]) -> Result<()> {
        listed_once(g, schema, docs)
    }

    fn link<'a>(
        &'a self,
        cx: &'a mut Cx<'_>,
        schema: &'static Schema,
        docs: &'a [BsonDoc],
        linking: Linking,
    ) -> futures::future::BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            for rel in cx.graph.two_way_of(schema) {
                if linking == Linking::Both {
                    link_named(cx, schema, rel, docs).await?;
                }
                link_referring(cx, schema, rel, docs).await?;
            }
            Ok(())
        })
    }
}

/// Links each of `docs` to the documents it names in `rel`, and those back.
async fn link_named(cx: &mut Cx<'_>, schema: &'static Schema, rel: &'static Relation, docs: &[BsonDoc]) -> Result<()> {
    for d in docs {
        let Some(x) = d.get("_id") else { continue };
        let targets: Vec<Bson> = match d.get(rel.field) {
            Some(Bson::Array(ids)) => ids.clone(),
            Some(Bson::Null) | None => Vec::new(),
            Some(id) => vec![id.clone()],
        };
        for y in targets {
            match super::two_way::link(cx, schema, rel, x.clone(), y).await {
                // A reference to a document not there yet: it links back when it is inserted.
                Err(Error::NotFound { collection, .. }) if Some(collection) == rel.target => {}
                other => {
                    other?;
                }
            }
        }
    }
    Ok(())
}

/// Links the new `docs` to the documents that already refer to them
/// through the inverse of `rel`: those written while they did not exist
/// (a task whose owner was inserted after it). One read per relation
/// and page of new ids; each referring document is matched to the new
/// ones it names by id, not against every new document. The single side
/// of a 1:N pair is settled as it stands when linked
/// (`two_way::link_back`): a new document naming another target keeps
/// it, as the two-way repair would.
async fn link_referring(
    cx: &mut Cx<'_>,
    schema: &'static Schema,
    rel: &'static Relation,
    docs: &[BsonDoc],
) -> Result<()> {
    let (Some(other), Some(inverse)) = (rel.target, rel.inverse) else { return Ok(()) };
    // New id -> (the id, what it declares in `rel` already).
    let mut new: HashMap<String, (&Bson, HashSet<String>)> = HashMap::new();
    for d in docs {
        let Some(x) = d.get("_id") else { continue };
        let declared = match d.get(rel.field) {
            Some(Bson::Array(held)) => held.iter().map(id_key).collect(),
            Some(Bson::Null) | None => HashSet::new(),
            Some(one) => HashSet::from([id_key(one)]),
        };
        new.insert(id_key(x), (x, declared));
    }
    let ids: Vec<Bson> = new.values().map(|(x, _)| (*x).clone()).collect();
    let coll = cx.db.collection::<RawDocumentBuf>(other);
    // A document naming new ids of several pages is read once per page.
    let mut linked: HashSet<(String, String)> = HashSet::new();
    let single = super::two_way::single_of_one_to_many(cx.graph, rel);
    for page in crate::store::page::id_pages(&ids) {
        let find = coll
            .find(doc! { inverse: {"$in": page} })
            .projection(doc! {"_id": 1, inverse: 1})
            .selection_criteria(crate::store::primary());
        let referring = collect(find, cx.session(), other, |raw| crate::store::session::plain(other, raw)).await?;
        for holder in referring {
            let Some(y) = holder.get("_id") else { continue };
            let named: Vec<&Bson> = match holder.get(inverse) {
                Some(Bson::Array(held)) => held.iter().collect(),
                Some(one) => vec![one],
                None => Vec::new(),
            };
            for x in named {
                let Some((x, declared)) = new.get(&id_key(x)) else { continue };
                if declared.contains(&id_key(y)) || !linked.insert((id_key(x), id_key(y))) {
                    continue;
                }
                let (x, y) = ((*x).clone(), y.clone());
                match single {
                    true => super::two_way::link_back(cx, schema, rel, x, y).await?,
                    false => super::two_way::link(cx, schema, rel, x, y).await?,
                };
            }
        }
    }
    Ok(())
}

/// Refuses a document that lists one document twice in an array of
/// two-way references: the other side refers back once, so the two could
/// never agree (I2). Nothing is written.
fn listed_once(g: &'static Graph, schema: &'static Schema, docs: &[BsonDoc]) -> Result<()> {
    for rel in g.two_way_of(schema) {
        for d in docs {
            let Some(Bson::Array(ids)) = d.get(rel.field) else { continue };
            let mut seen = HashSet::with_capacity(ids.len());
            if let Some(twice) = ids.iter().find(|id| !seen.insert(id_key(id))) {
                return Err(Error::Invalid {
                    what: crate::error::Misuse::Insert,
                    message: format!(
                        "document {} of `{}` lists {} twice in `{}`, a two-way reference, whose other side \
                         refers back once; nothing was written. List each document once",
                        d.get("_id").map(crate::error::show_id).unwrap_or_default(),
                        schema.collection,
                        crate::error::show_id(twice),
                        rel.field
                    ),
                });
            }
        }
    }
    Ok(())
}
