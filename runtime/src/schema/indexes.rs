//! The indexes a document type needs: the ones it declares and the ones its
//! relationships need to stay fast (rule 4: "if you index correctly").

use crate::error::Result;
use crate::schema::document::{RelationKind, Schema};
use mongodb::bson::{self, Bson, Document as BsonDoc};
use mongodb::options::IndexOptions;
use mongodb::IndexModel;

/// The index models for a schema, declared ones first (with their options:
/// unique, sparse, TTL, partial, collation, text), then the ones its
/// relationships need, each key pattern once.
///
/// A reference array gets a multikey index on the path holding the ids
/// (`books.categories`, `products.parts.id`): reverse lookups, `on_delete`
/// and fan-outs use it. A parent reference gets `{parent: 1}` followed by its
/// declared order (`{host: 1, time: -1}`), so "the latest 5000 messages of a
/// host" reads the index in order. A single reference gets `{field: 1}`.
///
/// With a shard key declared (`#[document(shard_key(tenant, id))]`), the
/// key gets its index (sharding a collection needs one), and the unique
/// bucket index starts with it, as a sharded collection requires of every
/// unique index.
///
/// An error only when a declared partial filter is not valid extended JSON.
pub fn needed_by(schema: &Schema) -> Result<Vec<IndexModel>> {
    let mut models: Vec<IndexModel> = Vec::new();
    let mut add = |model: IndexModel| {
        if !models.iter().any(|existing| existing.keys == model.keys) {
            models.push(model);
        }
    };
    let plain = |keys: BsonDoc, unique: bool| {
        let options = unique.then(|| IndexOptions::builder().unique(true).build());
        IndexModel::builder().keys(keys).options(options).build()
    };
    if !schema.shard_key.is_empty() && schema.shard_key != ["_id"] {
        add(plain(schema.shard_key.iter().map(|f| ((*f).to_owned(), Bson::Int32(1))).collect(), false));
    }
    for index in schema.indexes {
        add(index.model()?);
    }
    for (keys, unique) in relation_keys(schema) {
        add(plain(keys, unique));
    }
    Ok(models)
}

/// The keys each relationship needs, and whether unique.
fn relation_keys(schema: &Schema) -> Vec<(BsonDoc, bool)> {
    let mut out = Vec::new();
    for rel in schema.relations {
        match rel.kind {
            // The references inside its elements are found by `comments.author`.
            RelationKind::Embed { .. } => {
                for element in rel.elements {
                    out.push((bson::doc! { format!("{}.{}", rel.field, element.field): 1 }, false));
                }
            }
            RelationKind::RefMany { .. } | RelationKind::RefOne { .. } => {
                out.push((bson::doc! { rel.id_path(): 1 }, false))
            }
            RelationKind::Bucket => {
                // One bucket per (parent, page) or (parent, window, spill):
                // concurrent appends that would open the same bucket twice
                // collide here. A window's first bucket has no spill number,
                // indexed as null.
                if let Some(b) = &rel.bucket {
                    let rest: &[&str] = match b.window_ms {
                        // A counter has one document per window, never a spill.
                        Some(_) if b.counter => &[b.parent, b.start],
                        Some(_) => &[b.parent, b.start, b.page],
                        None => &[b.parent, b.page],
                    };
                    let mut k: BsonDoc = schema.shard_key.iter().map(|f| ((*f).to_owned(), Bson::Int32(1))).collect();
                    for f in rest {
                        if !k.contains_key(*f) {
                            k.insert(*f, 1);
                        }
                    }
                    out.push((k, true));
                }
            }
            RelationKind::ParentRef => {
                let mut k = bson::doc! { rel.field: 1 };
                for (f, d) in rel.order {
                    k.insert(*f, *d);
                }
                out.push((k, false));
            }
        }
    }
    out
}

/// The `$jsonSchema` validator that makes the server itself refuse a write
/// that passes a bound, whoever writes: `maxItems` for every bounded array
/// (embedded, of references, a subset, a bucket's page), and `required` for
/// every reference that is not an `Option`. `None` when the type declares
/// neither.
pub fn validator(schema: &Schema) -> Option<BsonDoc> {
    let mut properties = BsonDoc::new();
    let required: Vec<&str> = schema
        .relations
        .iter()
        .filter(|rel| matches!(rel.kind, RelationKind::RefOne { optional: false } | RelationKind::ParentRef))
        .filter(|rel| !schema.fields.iter().any(|f| f.bson == rel.field && is_option(f.rust_type)))
        .map(|rel| rel.field)
        .collect();
    for rel in schema.relations {
        if let Some(b) = &rel.bucket {
            if let Some(size) = b.size {
                properties.insert(rel.field, bson::doc! {"bsonType": "array", "maxItems": i64::from(size)});
            }
            continue;
        }
        let max = match rel.kind {
            RelationKind::Embed { many: true, max: Some(m) } | RelationKind::RefMany { max: Some(m), .. } => m,
            _ => continue,
        };
        // An `Option<Vec<T>>` is stored as `null` when absent (serde's `None`).
        let optional = schema.fields.iter().any(|f| f.bson == rel.field && is_option(f.rust_type));
        let kind = if optional { Bson::from(vec!["array", "null"]) } else { Bson::from("array") };
        properties.insert(rel.field, bson::doc! {"bsonType": kind, "maxItems": i64::from(max)});
    }
    if properties.is_empty() && required.is_empty() {
        return None;
    }
    let mut schema = bson::doc! {"bsonType": "object"};
    if !required.is_empty() {
        schema.insert("required", required);
    }
    if !properties.is_empty() {
        schema.insert("properties", properties);
    }
    Some(bson::doc! {"$jsonSchema": schema})
}

/// `Option<..>` as written (`Option<Vec<T>>`, `std::option::Option<..>`).
pub(crate) fn is_option(rust_type: &str) -> bool {
    rust_type.split('<').next().is_some_and(|head| head.trim_end().ends_with("Option"))
}

/// Creates the indexes of every document type linked into the program (one
/// `createIndexes` per collection that needs any), returning the names per
/// collection: the admin tool's "ensure indexes".
pub async fn ensure_all(db: &mongodb::Database) -> Result<Vec<(&'static str, Vec<String>)>> {
    let mut out = Vec::new();
    for schema in crate::schema::graph::all_types(db) {
        let models = needed_by(schema)?;
        if models.is_empty() {
            continue;
        }
        let coll = db.collection::<bson::Document>(schema.collection);
        let created = coll
            .create_indexes(models)
            .await
            .map_err(|e| crate::error::Error::driver("createIndexes", schema.collection, e))?;
        out.push((schema.collection, created.index_names));
    }
    Ok(out)
}
