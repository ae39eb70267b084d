//! Denormalized copies: the fan-out that rewrites every copy of a changed
//! source field, the fill of copies on insert, the copies a holder keeps
//! and their refresh, verify/repair, and the change-stream sync worker of
//! deferred mode. Public as `docrel::fanout`.

pub(crate) mod chain;
pub(crate) mod copies;
pub mod fanout;
pub(crate) mod fill;
pub(crate) mod repair;
pub mod sync;
pub(crate) mod write;

pub use crate::schema::graph::{Shape, Target};
pub use fanout::{FanOutReport, VERSION_PATH};
pub use repair::{repair, repair_collection, verify, verify_collection};
pub use sync::{
    repair_dead_letters, touched_fields, verify_dead_letters, Applied, HistoryLost, SyncWorker, DEAD_LETTER_COLLECTION,
    SYNC_COLLECTION,
};
