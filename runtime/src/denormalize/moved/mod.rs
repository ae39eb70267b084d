//! Both shapes of a move kept equal (`#[document(moved_from = ..)]`): after
//! a write of either shape, in the write's transaction, the other shape of
//! each parent it touched is made to hold what the written one holds. The
//! repository wraps a write of a mirrored collection in that transaction
//! (`repository/moved.rs`); the change running the move copies what was
//! there before with the same rule.

mod linked;
mod marks;
mod reconcile;

pub(crate) use marks::mark;
pub use marks::MARKS_COLLECTION;
pub(crate) use reconcile::{arrays_from_collection, collection_from_arrays, read, Reach};
