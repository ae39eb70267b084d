//! Removing a rule from the stored schema: the step of an online change
//! that takes a copy, subset, reference or delete rule out of every
//! process that follows it from the store.

use super::form::StoredType;
use super::publish::{load_documents, stored_document, SCHEMA_COLLECTION};
use crate::error::{Error, Misuse, Result};
use mongodb::bson::{doc, Document as BsonDoc};
use mongodb::Database;

/// Removes the rule on `field` (the stored name of a reference, subset,
/// bucket or top-level copy; `refs.name` for a copy inside the elements of
/// the reference array `refs`) from the stored schema of `collection`.
/// Returns whether it was there. Processes follow the removal within
/// their lease; a program that still declares the rule keeps following
/// its own declaration.
///
/// ```no_run
/// # async fn f(db: docrel::mongodb::Database) -> docrel::Result<()> {
/// let removed = docrel::schema::stored::retract(&db, "products", "part_name").await?;
/// # Ok(()) }
/// ```
pub async fn retract(db: &Database, collection: &str, field: &str) -> Result<bool> {
    for _ in 0..super::publish::ATTEMPTS {
        let stored = load_documents(db).await?;
        let Some((t, print)) = stored.into_iter().find(|(t, _)| t.collection == collection) else {
            return Ok(false);
        };
        let Some(without) = without(&t, field) else { return Ok(false) };
        let filter = doc! {"_id": collection, "fingerprint": print};
        let replaced = db
            .collection::<BsonDoc>(SCHEMA_COLLECTION)
            .replace_one(filter, stored_document(&without)?)
            .await
            .map_err(|e| Error::driver("replace", SCHEMA_COLLECTION, e))?;
        if replaced.matched_count == 1 {
            return Ok(true);
        }
    }
    Err(Error::Invalid {
        what: Misuse::Schema,
        message: format!(
            "the schema of `{collection}` kept changing while `{field}` was removed from it; run it again"
        ),
    })
}

/// `t` without its rule on `field`, or `None` when it has none there.
pub(crate) fn without(t: &StoredType, field: &str) -> Option<StoredType> {
    let mut out = t.clone();
    if let Some((relation, copy)) = field.split_once('.') {
        let r = out.relations.iter_mut().find(|r| r.field == relation)?;
        let before = r.copies.len();
        r.copies.retain(|c| c.field != copy);
        return (r.copies.len() < before).then_some(out);
    }
    let before = out.relations.len() + out.copies.len();
    out.relations.retain(|r| r.field != field);
    out.copies.retain(|c| c.field != field);
    (out.relations.len() + out.copies.len() < before).then_some(out)
}
