//! The typed repository of a document type: insert, get, find, update,
//! replace, delete, count and ensure_indexes.

mod delete;
mod documents;
pub mod hooks;
mod repo;
mod update;
mod upsert;

pub use crate::denormalize::write::{UpdateOutcome, UpsertOutcome};
pub use repo::{ops, Call, Operation, Repository};
