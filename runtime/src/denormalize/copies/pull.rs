//! What a rule of `on_delete` does to the documents referring to a deleted
//! one: the rule in force on a reference, and the pull of the references
//! to given ids with the copies and records made through them. `on_delete`
//! applies it when a document is deleted; a repair, to a reference left
//! dangling by a referrer written while its target was deleted.

use crate::schema::document::{OnDelete, Relation, RelationKind, Schema};
use crate::schema::graph::Graph;
use mongodb::bson::{doc, Bson, Document as BsonDoc};

/// The rule applied to `rel`: as declared, except that the array or
/// optional side of a two-way reference is pulled by default, so both
/// sides keep agreeing when a document is deleted.
pub(crate) fn rule(rel: &Relation) -> OnDelete {
    let pullable = matches!(rel.kind, RelationKind::RefMany { .. } | RelationKind::RefOne { optional: true });
    match rel.on_delete {
        OnDelete::Nothing if rel.inverse.is_some() && pullable => OnDelete::Pull,
        declared => declared,
    }
}

/// The filter and update that pull the references of `rel` (declared on
/// `schema`) to `ids`, with what was copied through them.
pub(crate) fn pulled(
    g: &'static Graph,
    schema: &'static Schema,
    rel: &'static Relation,
    ids: &[Bson],
) -> (BsonDoc, BsonDoc) {
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
            let mut unset = super::leftovers::cleared_through(g, schema, rel.field);
            unset.insert(rel.field, "");
            doc! {"$unset": unset}
        }
    };
    (filter, update)
}
