//! The indexes a move needs before it is announced: the new type's (its
//! parent reference first of all: the mirrors read a parent's documents
//! by it) and the old array's by element key.

use crate::error::{Error, Result};
use crate::schema::stored::{StoredMove, StoredType};
use mongodb::bson::{doc, Document as BsonDoc};
use mongodb::{Database, IndexModel};

/// Builds what `mv` needs that `db` lacks, saying each.
pub(super) async fn build(
    db: &Database,
    program: &[StoredType],
    mv: &StoredMove,
    field: &str,
    step: &mut impl FnMut(&str),
) -> Result<()> {
    let to: Vec<StoredType> = program.iter().filter(|t| t.collection == mv.to.collection).cloned().collect();
    let mut models = crate::admin::missing_indexes::missing_indexes(db, &to).await?;
    let key = format!("{field}.{}", mv.key);
    let have = crate::admin::index_plan::present(db, &mv.from.collection).await.unwrap_or_default();
    if !have.iter().any(|p| p.shape.keys.keys().next().map(String::as_str) == Some(key.as_str())) {
        models.push((mv.from.collection.clone(), IndexModel::builder().keys(doc! {key: 1}).build()));
    }
    let parent = doc! {&mv.parent_field: 1};
    let has_parent = models.iter().any(|(c, m)| *c == mv.to.collection && m.keys.keys().next() == parent.keys().next());
    let present_parent = crate::admin::index_plan::present(db, &mv.to.collection).await.unwrap_or_default();
    if !has_parent && !present_parent.iter().any(|p| p.shape.keys.keys().next() == parent.keys().next()) {
        models.push((mv.to.collection.clone(), IndexModel::builder().keys(parent).build()));
    }
    for (collection, model) in models {
        step(&format!("index build: {collection} {}", crate::admin::index_plan::show(&model.keys)));
        db.collection::<BsonDoc>(&collection)
            .create_index(model)
            .await
            .map_err(|e| Error::driver("createIndexes", collection.clone(), e))?;
    }
    Ok(())
}
