//! What generated code may touch. Not public API: no stability promise.

pub use crate::document::{FieldInfo, IndexSpec, OnDelete, Relation, RelationKind, Schema};
pub use crate::error::{Error, Result};
pub use crate::id::DocId;
pub use crate::registry::Registered;
pub use bson;
pub use inventory;
pub use mongodb;
pub use serde;

/// Checks a bound before a write (generated `check_bounds` calls it).
#[inline]
pub fn check_len<I: DocId>(collection: &'static str, id: &I, field: &'static str, max: u32, len: usize) -> Result<()> {
    if len > max as usize {
        return Err(Error::EmbedFull { collection, id: crate::id::show(id), field, max, len });
    }
    Ok(())
}
