//! The subset and bucket patterns: arrays of summaries kept from a child
//! collection, children stored in pages or time windows, and counts per
//! time window.

pub(crate) mod bucket;
pub(crate) mod bucket_check;
mod bucket_many;
mod bucket_moving;
mod bucket_opened;
pub(crate) mod bucket_whole;
pub(crate) mod counter;
mod counter_many;
pub(crate) mod subset;
pub(crate) mod subset_carried;
pub(crate) mod subset_check;
pub(crate) mod subset_delete;
pub(crate) mod subset_rebuild;
mod subset_rebuild_many;

pub use bucket::{Appended, Bucket};
pub use counter::{Counter, WindowCount};
pub use subset::Subset;
