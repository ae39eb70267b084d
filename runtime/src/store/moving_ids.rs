//! Reads of a collection whose parent reference a move fills from an
//! array of ids (one-to-many → one-to-squillions), before the move's reads
//! are switched: the documents are all there, and until then their
//! parents' arrays say which parent each has. A read that pins the parent
//! reference (equality or `$in`) runs on those parents, their ids joined to
//! the documents; any other runs on the documents, each given the parent
//! whose array names it (none when no array does).

use super::moving::pinned;
use crate::schema::graph_moves::ReadThrough;
use mongodb::bson::{doc, Bson, Document as BsonDoc};

/// Where the joined documents are, inside a pipeline.
const JOINED: &str = "__docrel_c";
/// Where a document's parents are, inside a pipeline.
const PARENTS: &str = "__docrel_p";

impl ReadThrough {
    /// The collection a read of the new documents matching `filter` runs on.
    pub(crate) fn runs_on(&self, filter: &BsonDoc) -> &str {
        match self.old {
            crate::schema::stored::OldArray::Ids if self.pinned(filter, &self.spec.parent_field).is_none() => {
                &self.spec.to.collection
            }
            _ => &self.spec.from.collection,
        }
    }

    /// The values `filter` pins `field` to (equality or `$in`, at the top
    /// or in an `$and`).
    fn pinned(&self, filter: &BsonDoc, field: &str) -> Option<Bson> {
        let mut conditions: Vec<(&String, &Bson)> = filter.iter().collect();
        if let Ok(all) = filter.get_array("$and") {
            conditions.extend(all.iter().filter_map(Bson::as_document).flat_map(|d| d.iter()));
        }
        conditions.into_iter().find(|(name, _)| *name == field).and_then(|(_, value)| pinned(value))
    }

    /// The stages making the documents `filter` may match, with their
    /// parent reference as the arrays say ([`ReadThrough::runs_on`] says
    /// on which collection); the read's own `$match` follows.
    pub(super) fn linked(&self, filter: &BsonDoc) -> Vec<BsonDoc> {
        let field = &self.field;
        if let Some(parents) = self.pinned(filter, &self.spec.parent_field) {
            let mut out = vec![doc! {"$match": {format!("{field}.0"): {"$exists": true}, "_id": parents}}];
            out.extend(self.joined());
            return out;
        }
        let mut out = Vec::new();
        if let Some(ids) = self.pinned(filter, "_id") {
            out.push(doc! {"$match": {"_id": ids}});
        }
        out.extend(self.annotated());
        out
    }

    /// On parents: their ids joined to the documents they name, each given
    /// its parent reference.
    fn joined(&self) -> [BsonDoc; 4] {
        let field = &self.field;
        let joined = format!("${JOINED}");
        [
            doc! {"$project": {field: 1}},
            doc! {"$lookup": {"from": &self.spec.to.collection, "localField": field, "foreignField": "_id", "as": JOINED}},
            doc! {"$unwind": &joined},
            doc! {"$replaceRoot": {"newRoot": {"$mergeObjects": [&joined, {&self.spec.parent_field: "$_id"}]}}},
        ]
    }

    /// On documents: each given the parent whose array names it, none
    /// when no array does.
    fn annotated(&self) -> [BsonDoc; 3] {
        let ids = doc! {"$map": {"input": format!("${PARENTS}"), "in": "$$this._id"}};
        [
            doc! {"$lookup": {"from": &self.spec.from.collection, "localField": "_id", "foreignField": &self.field, "as": PARENTS}},
            doc! {"$set": {&self.spec.parent_field: {"$arrayElemAt": [ids, 0]}}},
            doc! {"$unset": PARENTS},
        ]
    }

    /// A `$lookup` from the new documents: by the parent reference, from
    /// the parents (their ids joined to the documents); by any other
    /// field, from the documents, each given its parent first.
    pub(super) fn lookup_linked(&self, mut spec: BsonDoc) -> BsonDoc {
        let inner = match spec.remove("pipeline") {
            Some(Bson::Array(stages)) => stages,
            _ => Vec::new(),
        };
        let mut pipeline: Vec<Bson> = Vec::new();
        if spec.get_str("foreignField").ok() == Some(self.spec.parent_field.as_str()) {
            spec.insert("from", self.spec.from.collection.clone());
            spec.insert("foreignField", "_id");
            pipeline.extend(self.joined().map(Bson::Document));
        } else {
            pipeline.extend(self.annotated().map(Bson::Document));
        }
        pipeline.extend(inner);
        spec.insert("pipeline", pipeline);
        spec
    }
}
