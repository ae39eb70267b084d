//! Shard keys (`#[document(shard_key(tenant, id))]`): every write docrel
//! aims at one document carries the whole key in its filter, so that a
//! sharded cluster routes it to one shard instead of broadcasting it, and
//! an upsert (`save`) is legal at all.
//!
//! Where the key cannot be known at a write the derive refuses the design
//! at compile time (a two-way reference or a subset into a collection
//! sharded on more than `_id`, a bucket sharded on fields its appends do
//! not know, a unique index that does not start with the key). What is left
//! to check at run time is a filter the caller writes (`check_routed`).

use crate::error::{Error, Misuse, Result};
use crate::schema::document::Schema;
use mongodb::bson::{Bson, Document as BsonDoc};

/// Whether a document type sharded on `key` (empty: not sharded) can be
/// written by its `_id` alone and still reach one shard.
///
/// ```
/// assert!(docrel::schema::shard::routes_by_id(&[]));
/// assert!(docrel::schema::shard::routes_by_id(&["_id"]));
/// assert!(!docrel::schema::shard::routes_by_id(&["tenant", "_id"]));
/// ```
pub const fn routes_by_id(key: &[&str]) -> bool {
    match key {
        [] => true,
        [only] => str_eq(only, "_id"),
        _ => false,
    }
}

/// String equality in a `const fn` (the derives' compile-time checks use it too).
pub(crate) const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The filter that finds the document `doc` (its stored form) of `schema`
/// and routes to its shard: `{_id, ..every other shard key field}`. A key
/// field the document lacks is matched as `null`, as the server stores it.
pub(crate) fn key_filter(schema: &Schema, id: Bson, doc: &BsonDoc) -> BsonDoc {
    let mut filter = BsonDoc::new();
    filter.insert("_id", id);
    for field in schema.shard_key.iter().filter(|f| **f != "_id") {
        filter.insert(*field, doc.get(*field).cloned().unwrap_or(Bson::Null));
    }
    filter
}

/// Whether a document of `schema` can move to another shard key value: its
/// shard key has a field besides `_id`, which a replace may change.
pub(crate) fn movable(schema: &Schema) -> bool {
    schema.shard_key.iter().any(|f| *f != "_id")
}

/// Checks that a caller's filter for a single-document write pins every
/// field of the shard key by equality (at the top level, or in a top-level
/// `$and`); otherwise the error names the missing fields and how to add them.
pub(crate) fn check_routed(schema: &Schema, filter: &BsonDoc, op: &str) -> Result<()> {
    let missing: Vec<&str> = schema.shard_key.iter().copied().filter(|field| !pins(filter, field)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::Invalid {
        what: Misuse::ShardKey,
        message: format!(
            "`{op}` on `{}` targets one document, but `{}` is sharded on ({}) and the filter does not fix {}: \
             add an equality on each (`{}::fields().{}.eq(..)`), or use `replace`/`save` with the document",
            schema.collection,
            schema.rust_name,
            schema.shard_key.join(", "),
            missing.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", "),
            schema.rust_name,
            rust_name(schema, missing[0]),
        ),
    })
}

fn rust_name<'a>(schema: &'a Schema, stored: &'a str) -> &'a str {
    schema.fields.iter().find(|f| f.bson == stored).map_or(stored, |f| f.rust)
}

/// Whether `filter` fixes `field` to one value.
fn pins(filter: &BsonDoc, field: &str) -> bool {
    let here = match filter.get(field) {
        Some(Bson::Document(d)) => match d.keys().next() {
            Some(k) if k.starts_with('$') => d.len() == 1 && d.contains_key("$eq"),
            _ => true,
        },
        Some(_) => true,
        None => false,
    };
    here || matches!(filter.get("$and"), Some(Bson::Array(all)) if all.iter().any(|c| matches!(c, Bson::Document(d) if pins(d, field))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::doc;

    #[test]
    fn a_filter_pins_a_field_by_equality_only() {
        assert!(pins(&doc! {"tenant": "a"}, "tenant"));
        assert!(pins(&doc! {"tenant": {"$eq": "a"}}, "tenant"));
        assert!(pins(&doc! {"$and": [{"x": 1}, {"tenant": "a"}]}, "tenant"));
        assert!(!pins(&doc! {"tenant": {"$in": ["a", "b"]}}, "tenant"));
        assert!(!pins(&doc! {"$or": [{"tenant": "a"}]}, "tenant"));
        assert!(!pins(&doc! {"_id": 1}, "tenant"));
    }
}
