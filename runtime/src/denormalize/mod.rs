//! Denormalized copies: the fan-out that rewrites every copy of a changed
//! source field, the fill of copies on insert, the copies a holder keeps
//! and their refresh, verify/repair, and the change-stream sync worker of
//! deferred mode. Verify and repair of copies: [`crate::check::copies`].

pub(crate) mod chain;
pub(crate) mod copies;
pub(crate) mod fanout;
pub(crate) mod fill;
pub(crate) mod moved;
pub(crate) mod repair;
pub(crate) mod sync;
pub(crate) mod write;

pub use fanout::{FanOutReport, VERSION_PATH};
pub use sync::{touched_fields, Applied, HistoryLost, SyncWorker, DEAD_LETTER_COLLECTION, SYNC_COLLECTION};
