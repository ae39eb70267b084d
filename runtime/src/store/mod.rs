//! How every capability reads and writes: typed field handles, filters and
//! sorts (`query`), updates (`update`), the `Find` builder, decoding, and
//! BSON path helpers.

pub mod codec;
pub mod find;
mod ids;
pub mod path;
pub mod query;
pub(crate) mod session;
pub mod transaction;
pub mod update;

pub(crate) use ids::{id_page, ID_PAGE};

/// Reads that decide a write go to the primary, whatever the client's read
/// preference: a secondary may be behind, and a guard checked against old
/// data lets a stale write through.
pub(crate) fn primary() -> mongodb::options::SelectionCriteria {
    mongodb::options::SelectionCriteria::ReadPreference(mongodb::options::ReadPreference::Primary)
}
