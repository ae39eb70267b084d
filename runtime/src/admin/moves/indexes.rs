//! The indexes a move needs: the new type's, its parent reference first of
//! all (the mirrors and the settles read a parent's documents by it; the
//! old array is read by the parent's `_id`). They are built before the
//! move is announced; an offline move builds its non-unique ones after the
//! copy, as a bulk load does.

use crate::error::{Error, Result};
use crate::schema::stored::{OldArray, StoredMove, StoredType};
use mongodb::bson::{doc, Document as BsonDoc};
use mongodb::{Database, IndexModel};

/// The indexes `mv` needs that `db` lacks: the new type's, one led by its
/// parent reference when the type declares none, and, when the old array
/// holds ids (`field`), one on it: a read before the switch finds a
/// document's parent by it.
pub(super) async fn needed(
    db: &Database,
    program: &[StoredType],
    mv: &StoredMove,
    holds: OldArray,
    field: &str,
) -> Result<Vec<(String, IndexModel)>> {
    let to: Vec<StoredType> = program.iter().filter(|t| t.collection == mv.to.collection).cloned().collect();
    let mut models = crate::admin::missing_indexes::missing_indexes(db, &to).await?;
    let parent = doc! {&mv.parent_field: 1};
    let leads = |keys: &BsonDoc| keys.keys().next() == parent.keys().next();
    let has_parent = models.iter().any(|(c, m)| *c == mv.to.collection && leads(&m.keys));
    let present = crate::admin::index_plan::present(db, &mv.to.collection).await.unwrap_or_default();
    if !has_parent && !present.iter().any(|p| leads(&p.shape.keys)) {
        models.push((mv.to.collection.clone(), IndexModel::builder().keys(parent).build()));
    }
    if holds == OldArray::Ids {
        let ids = doc! {field: 1};
        let present = crate::admin::index_plan::present(db, &mv.from.collection).await.unwrap_or_default();
        if !present.iter().any(|p| p.shape.keys.keys().next() == ids.keys().next()) {
            models.push((mv.from.collection.clone(), IndexModel::builder().keys(ids).build()));
        }
    }
    Ok(models)
}

/// Which of a move's indexes a step builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Which {
    /// Every one it needs.
    All,
    /// The unique ones only: the copy merges a bucket's pages by one, and
    /// the others must refuse what breaks them before anything is copied.
    Unique,
}

/// Builds `which` of what `mv` needs that `db` lacks, saying each. Online,
/// all of them before the move is announced, so that every mirrored write
/// finds a parent's documents by them while the copy runs (and the
/// embedded test server loses index entries of documents written while an
/// index is built).
pub(super) async fn build(
    db: &Database,
    program: &[StoredType],
    (mv, holds, field): (&StoredMove, OldArray, &str),
    which: Which,
    step: &mut impl FnMut(&str),
) -> Result<()> {
    let unique = |m: &IndexModel| m.options.as_ref().and_then(|o| o.unique).unwrap_or(false);
    for (collection, model) in needed(db, program, mv, holds, field).await? {
        if which == Which::Unique && !unique(&model) {
            continue;
        }
        step(&format!("index build: {collection} {}", crate::admin::index_plan::show(&model.keys)));
        db.collection::<BsonDoc>(&collection)
            .create_index(model)
            .await
            .map_err(|e| Error::driver("createIndexes", collection.clone(), e))?;
    }
    Ok(())
}
