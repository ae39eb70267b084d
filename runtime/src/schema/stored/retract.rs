//! Removing a rule from the stored schema: the step of an online change
//! that takes a copy, subset, reference or delete rule out of every
//! process that follows it from the store.

use super::form::StoredType;
use super::publish::rewrite;
use crate::error::Result;
use mongodb::Database;

/// Removes the rule on `field` (the stored name of a reference, subset,
/// bucket or top-level copy; `refs.name` for a copy inside the elements of
/// the reference array `refs`) from the stored schema of `collection`.
/// Returns whether it was there. Processes follow the removal within
/// their lease; a program that still declares the rule keeps following
/// its own declaration. Removing one side of a two-way pair of reference
/// arrays leaves the other side one-way.
///
/// ```no_run
/// # async fn f(db: docrel::mongodb::Database) -> docrel::Result<()> {
/// let removed = docrel::schema::stored::retract(&db, "products", "part_name").await?;
/// # Ok(()) }
/// ```
pub async fn retract(db: &Database, collection: &str, field: &str) -> Result<bool> {
    // One side of a two-way pair going leaves the other one-way.
    let partner = super::publish::load(db).await?.into_iter().find(|t| t.collection == collection).and_then(|t| {
        let r = t.relations.into_iter().find(|r| r.field == field)?;
        Some((r.target?, r.inverse?))
    });
    let removed = rewrite(db, collection, |t| without(t, field), &format!("`{field}` was removed from it")).await?;
    if let (true, Some((target, inverse))) = (removed, partner) {
        super::rebound::uninverse(db, &target, &inverse, field).await?;
    }
    Ok(removed)
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
