//! The typed repository of a document type: insert, get, find, update,
//! replace, delete, count and ensure_indexes.

mod connect;
mod delete;
mod documents;
mod repo;
mod update;
mod upsert;

pub use crate::denormalize::write::{UpdateOutcome, UpsertOutcome};
pub use connect::{connect, connect_from_env, connect_with};
pub use repo::{ops, Call, Operation, Repository};
