//! A bucket document written whole (an insert, a replace, a save) is held
//! to what an append keeps: no more elements than the bucket's bound, a
//! `count` equal to the array's length, and no element that is not a
//! finite number where a number is. An append checks these as it writes;
//! a whole document is checked here before anything is sent, so a bad one
//! is refused rather than found later by a verify.

use crate::error::{show_id, Error, Misuse, Result};
use crate::schema::document::{RelationKind, Schema};
use mongodb::bson::Document as BsonDoc;

/// Refuses `docs` (documents of `schema`) when a bucket array of one
/// breaks I4; nothing to do (and nothing encoded) for a type with no
/// bucket array, so other documents pay nothing.
pub(crate) fn check_all<T: serde::Serialize>(schema: &Schema, docs: &[T]) -> Result<()> {
    if !schema.relations.iter().any(|r| r.bucket.as_ref().is_some_and(|b| !b.counter)) {
        return Ok(());
    }
    for d in docs {
        let doc = crate::bson_compat::to_document(d).map_err(|e| Error::Encode {
            what: format!("a document of `{}`", schema.collection),
            message: e.to_string(),
        })?;
        check(schema, &doc)?;
    }
    Ok(())
}

/// Refuses `doc` (a document of `schema`, as it would be stored) when a
/// bucket array of it breaks I4: over its bound, or miscounted.
fn check(schema: &Schema, doc: &BsonDoc) -> Result<()> {
    for rel in schema.relations.iter().filter(|r| r.kind == RelationKind::Bucket) {
        let Some(spec) = rel.bucket.as_ref().filter(|b| !b.counter) else { continue };
        let Ok(elements) = doc.get_array(rel.field) else { continue };
        let id = doc.get("_id").map_or_else(|| "(new)".to_owned(), show_id);
        let refuse = |why: String| Error::Invalid {
            what: Misuse::BucketElement,
            message: format!(
                "bucket document {id} of `{}` {why}; nothing was written. Write buckets with \
                 `rels().{}.append(..)`, which opens the next bucket when one is full",
                schema.collection, rel.rust_field
            ),
        };
        if let Some(bound) = spec.bound().filter(|b| elements.len() > *b as usize) {
            return Err(refuse(format!(
                "holds {} elements in `{}`, above its bound of {bound}",
                elements.len(),
                rel.field
            )));
        }
        let count = super::bucket_check::as_i64(doc.get(spec.count));
        if count != Some(elements.len() as i64) {
            let stored =
                doc.get(spec.count).map_or_else(|| "no count".to_owned(), |c| format!("`{}: {c}`", spec.count));
            return Err(refuse(format!("has {stored} for {} elements in `{}`", elements.len(), rel.field)));
        }
    }
    Ok(())
}
