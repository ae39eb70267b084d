//! Filling the copies of documents about to be written from their sources:
//! one read per source collection for the whole batch.

use crate::denormalize::fanout::{version_of, VERSION_PATH};
use crate::error::{Error, Result};
use crate::schema::document::RelationKind;
use crate::store::path::{id_key, lookup};
use bson::{doc, Bson, Document as BsonDoc};
use mongodb::Database;
use std::collections::HashMap;

/// Fills the copies of documents about to be inserted from their sources:
/// one read per source collection for the whole batch. A reference to a
/// source that does not exist leaves the copy as given.
pub(crate) async fn fill(db: &Database, schema: &crate::schema::document::Schema, docs: &mut [BsonDoc]) -> Result<()> {
    // source collection -> (distinct ids, fields to read)
    let mut needs: Vec<(&'static str, Vec<Bson>, Vec<&'static str>)> = Vec::new();
    let mut need = |source: &'static str, id: &Bson, field: &'static str| {
        let entry = match needs.iter_mut().position(|n| n.0 == source) {
            Some(i) => &mut needs[i],
            None => {
                needs.push((source, Vec::new(), Vec::new()));
                needs.last_mut().expect("just pushed")
            }
        };
        if !entry.1.contains(id) {
            entry.1.push(id.clone());
        }
        if !entry.2.contains(&field) {
            entry.2.push(field);
        }
    };
    for doc in docs.iter() {
        for copy in schema.copies {
            if let Some(id) = doc.get(copy.via).filter(|b| **b != Bson::Null) {
                need(copy.source, id, copy.source_field);
            }
        }
        for rel in schema.relations.iter().filter(|r| !r.copies.is_empty()) {
            let RelationKind::RefMany { key: Some(key), .. } = rel.kind else { continue };
            for element in doc.get_array(rel.field).into_iter().flatten().filter_map(Bson::as_document) {
                if let Some(id) = element.get(key) {
                    for copy in rel.copies {
                        need(copy.source, id, copy.source_field);
                    }
                }
            }
        }
    }
    let mut sources: HashMap<(&'static str, String), BsonDoc> = HashMap::new();
    for (source, ids, fields) in needs {
        let mut projection: BsonDoc = fields.iter().map(|f| ((*f).to_owned(), Bson::Int32(1))).collect();
        projection.insert(VERSION_PATH, 1);
        let coll = db.collection::<BsonDoc>(source);
        let mut cursor = coll
            .find(doc! {"_id": {"$in": ids}})
            .projection(projection)
            .batch_size(i32::MAX as u32)
            .await
            .map_err(|e| Error::driver("find", source, e))?;
        while cursor.advance().await.map_err(|e| Error::driver("find", source, e))? {
            let found: BsonDoc = cursor.deserialize_current().map_err(|e| Error::driver("find", source, e))?;
            let key = id_key(found.get("_id").unwrap_or(&Bson::Null));
            sources.insert((source, key), found);
        }
    }
    for doc in docs.iter_mut() {
        let mut versions = BsonDoc::new();
        for copy in schema.copies {
            let Some(id) = doc.get(copy.via).cloned() else { continue };
            let Some(src) = sources.get(&(copy.source, id_key(&id))) else { continue };
            if let Some(value) = lookup(src, copy.source_field) {
                doc.insert(copy.field, value.clone());
            }
            versions.insert(copy.via, version_of(src));
        }
        for rel in schema.relations.iter().filter(|r| !r.copies.is_empty()) {
            let RelationKind::RefMany { key: Some(key), .. } = rel.kind else { continue };
            let Ok(array) = doc.get_array_mut(rel.field) else { continue };
            let mut array_versions = BsonDoc::new();
            for element in array.iter_mut().filter_map(|b| match b {
                Bson::Document(d) => Some(d),
                _ => None,
            }) {
                let Some(id) = element.get(key).cloned() else { continue };
                for copy in rel.copies {
                    let Some(src) = sources.get(&(copy.source, id_key(&id))) else { continue };
                    if let Some(value) = lookup(src, copy.source_field) {
                        element.insert(copy.field, value.clone());
                    }
                    array_versions.insert(id_key(&id), version_of(src));
                }
            }
            if !array_versions.is_empty() {
                versions.insert(rel.field, array_versions);
            }
        }
        if !versions.is_empty() {
            doc.insert("_docrel", doc! {"copies": versions});
        }
    }
    Ok(())
}
