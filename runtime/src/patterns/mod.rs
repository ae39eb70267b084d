//! The subset and bucket patterns: arrays of summaries kept from a child
//! collection, children stored in pages or time windows, and counts per
//! time window.

pub mod bucket;
pub mod bucket_check;
mod bucket_opened;
pub mod counter;
pub mod subset;
pub(crate) mod subset_check;
pub(crate) mod subset_delete;
pub(crate) mod subset_rebuild;
