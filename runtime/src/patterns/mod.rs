//! The subset and bucket patterns: arrays of summaries kept from a child
//! collection, and children stored in pages or time windows.

pub mod bucket;
pub mod bucket_check;
mod bucket_opened;
pub mod subset;
pub(crate) mod subset_check;
pub(crate) mod subset_delete;
mod subset_rebuild;
