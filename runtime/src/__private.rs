//! What generated code may touch. Not public API: no stability promise.

pub use crate::error::{Error, Result};
pub use crate::id::DocId;
pub use crate::schema::document::{
    field_key, Advice, BucketSpec, Carries, Copy, ElemCopy, FieldInfo, IndexSpec, OnDelete, Relation, RelationKind,
    Schema, SubsetSpec,
};
pub use crate::schema::registry::Registered;
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

/// Whether every copy of an element struct comes from `collection` (checked
/// at compile time by the derive).
pub const fn copies_come_from(copies: &[ElemCopy], collection: &str) -> bool {
    let mut i = 0;
    while i < copies.len() {
        if !str_eq(copies[i].source, collection) {
            return false;
        }
        i += 1;
    }
    true
}

const fn str_eq(a: &str, b: &str) -> bool {
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

/// Whether `names` holds `name` (the write-heavy probe of the derive).
pub const fn contains(names: &[&str], name: &str) -> bool {
    let mut i = 0;
    while i < names.len() {
        if str_eq(names[i], name) {
            return true;
        }
        i += 1;
    }
    false
}
