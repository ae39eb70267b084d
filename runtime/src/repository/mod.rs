//! The typed repository of a document type: insert, get, find, update,
//! replace, delete, count and ensure_indexes.

mod affected;
mod call;
mod caller_transaction;
pub(crate) mod connect;
mod delete;
mod documents;
pub(crate) mod hooks;
mod moved;
mod repo;
mod update;
mod upsert;
mod validator;

pub use crate::denormalize::write::{UpdateOutcome, UpsertOutcome};
pub use crate::schema::repository::Repository;
pub use caller_transaction::{abort, commit};
pub use hooks::{Committed, HookTable, Hooks, Write};
pub use repo::{ops, Call, Operation};

/// The id of `doc`, for `call`, a write that names the stored document by
/// it: a document whose `Option` id is still `None` was never stored, and
/// is refused before anything is sent.
fn stored_id<'d, T: crate::schema::document::Document>(doc: &'d T, call: &str) -> crate::error::Result<&'d T::Id> {
    doc.id().ok_or_else(|| crate::error::Error::Invalid {
        what: crate::error::Misuse::Id,
        message: format!(
            "`{call}` of a document of `{}` with no `_id` (its id is `None`): nothing was written. A document \
             gets its id when inserted: insert it (`insert(..).returning()` gives it back with its id), or set the id",
            T::COLLECTION
        ),
    })
}
