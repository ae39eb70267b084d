//! The indexes a program's types declare or their relationships need that
//! a database lacks: what a change or a move builds before it backfills.

use crate::admin::index_plan::{existing_collections, present};
use crate::admin::index_shape::Shape;
use crate::error::Result;
use crate::schema::stored::{self, StoredType};
use mongodb::{Database, IndexModel};

/// The indexes the types of `program` declare or their relationships need
/// that `db` lacks, by collection.
pub(crate) async fn missing_indexes(db: &Database, program: &[StoredType]) -> Result<Vec<(String, IndexModel)>> {
    missing_in(db, program, &existing_collections(db).await?).await
}

/// [`missing_indexes`], given the collections `db` has.
pub(crate) async fn missing_in(
    db: &Database,
    program: &[StoredType],
    existing: &[String],
) -> Result<Vec<(String, IndexModel)>> {
    let mut out = Vec::new();
    for t in program {
        let have = if existing.contains(&t.collection) { present(db, &t.collection).await? } else { Vec::new() };
        for model in crate::schema::indexes::needed_by(stored::descriptor(t))? {
            let shape = Shape::of(&model);
            // An index on the same keys with other options is the plan's
            // to recreate; a missing one is built here.
            if !have.iter().any(|p| p.shape.keys == shape.keys) {
                out.push((t.collection.clone(), model));
            }
        }
    }
    Ok(out)
}
