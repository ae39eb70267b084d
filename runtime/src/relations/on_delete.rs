//! The `on_delete` rules of references, applied when a referred document is
//! deleted through docrel: plan the whole cascade first (refusing on any
//! `restrict`, before anything is written), then pull and delete.

use crate::error::{show_id, Error, Result};
use crate::id::DocId;
use crate::schema::document::{Document, OnDelete, Relation, RelationKind};
use crate::schema::graph::graph;
use crate::store::session::{collect, in_session};
use mongodb::bson::{doc, Bson, Document as BsonDoc, RawDocumentBuf};
use mongodb::{ClientSession, Database};

/// Cascades deeper than this are refused: the schema has a cycle of
/// `on_delete = cascade`.
const MAX_CASCADE_DEPTH: usize = 16;

/// Applies the rules of every reference to `T` for the documents `ids`
/// about to be deleted (the caller deletes them afterwards), in the
/// caller's session when given.
pub(crate) async fn apply<T: Document>(
    db: &Database,
    ids: &[T::Id],
    mut session: Option<&mut ClientSession>,
) -> Result<()> {
    if ids.is_empty() || graph().references_to(T::COLLECTION).iter().all(|(_, r)| rule(r) == OnDelete::Nothing) {
        return Ok(());
    }
    let ids: Vec<Bson> = ids.iter().map(DocId::to_bson).collect();
    let mut plan = Plan::default();
    plan.visit(db, T::COLLECTION, ids, 0, session.as_deref_mut()).await?;
    plan.run(db, session).await
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

#[derive(Default)]
struct Plan {
    pulls: Vec<(&'static str, &'static Relation, Vec<Bson>)>,
    deletes: Vec<(&'static str, Vec<Bson>)>,
}

impl Plan {
    fn visit<'a>(
        &'a mut self,
        db: &'a Database,
        collection: &'static str,
        ids: Vec<Bson>,
        depth: usize,
        mut session: Option<&'a mut ClientSession>,
    ) -> futures::future::BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            if depth > MAX_CASCADE_DEPTH {
                return Err(Error::Invalid {
                    what: "on_delete",
                    message: format!(
                        "cascade from `{collection}` goes deeper than {MAX_CASCADE_DEPTH} levels; the schema has a \
                         cycle of `on_delete = cascade`: break it with `pull` or `restrict`"
                    ),
                });
            }
            for &(schema, rel) in graph().references_to(collection) {
                let referrers = db.collection::<RawDocumentBuf>(schema.collection);
                let filter = doc! { rel.id_path(): {"$in": ids.clone()} };
                match rule(rel) {
                    OnDelete::Nothing => {}
                    OnDelete::Restrict => {
                        let count = in_session!(referrers.count_documents(filter), session.as_deref_mut())
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
                    OnDelete::Pull => self.pulls.push((schema.collection, rel, ids.clone())),
                    OnDelete::Cascade => {
                        let find = referrers.find(filter).projection(doc! {"_id": 1});
                        let found = collect(find, session.as_deref_mut(), schema.collection, |raw| {
                            Ok(match raw.get("_id") {
                                Ok(Some(id)) => Some(Bson::try_from(id).unwrap_or(Bson::Null)),
                                _ => None,
                            })
                        })
                        .await?;
                        let dependants: Vec<Bson> = found.into_iter().flatten().collect();
                        if !dependants.is_empty() {
                            let deeper = session.as_deref_mut();
                            self.visit(db, schema.collection, dependants.clone(), depth + 1, deeper).await?;
                            self.deletes.push((schema.collection, dependants));
                        }
                    }
                }
            }
            Ok(())
        })
    }

    async fn run(self, db: &Database, mut session: Option<&mut ClientSession>) -> Result<()> {
        for (collection, rel, ids) in self.pulls {
            let coll = db.collection::<BsonDoc>(collection);
            let filter = doc! { rel.id_path(): {"$in": ids.clone()} };
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
                _ => doc! {"$unset": { rel.field: "" }},
            };
            in_session!(coll.update_many(filter, update), session.as_deref_mut())
                .map_err(|e| Error::driver("update_many", collection, e))?;
        }
        for (collection, ids) in self.deletes {
            let coll = db.collection::<BsonDoc>(collection);
            in_session!(coll.delete_many(doc! {"_id": {"$in": ids}}), session.as_deref_mut())
                .map_err(|e| Error::driver("delete_many", collection, e))?;
        }
        Ok(())
    }
}
