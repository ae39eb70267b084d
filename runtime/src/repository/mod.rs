//! The typed repository of a document type: insert, get, find, update,
//! replace, delete, count and ensure_indexes.

mod call;
mod delete;
mod documents;
mod repo;
mod update;

pub use crate::denormalize::write::UpdateOutcome;
pub use call::{ops, Call, Operation};
pub use repo::Repository;
