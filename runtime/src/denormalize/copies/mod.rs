//! The bookkeeping of copies, in one module: the versions of sources
//! (`versions.rs`), the records holders keep of them and the guarded write
//! of a copy (`records.rs`), and the copies a holder keeps, read from their
//! sources and refreshed under the guard (`holders.rs`), and what a holder
//! keeps of a source it no longer refers to (`leftovers.rs`). Fan-out, fill,
//! repair and the sync worker all go through here.

mod holders;
mod leftovers;
mod pull;
mod records;
mod versions;

pub(crate) use holders::*;
pub(crate) use leftovers::{clear as clear_leftovers, cleared_through};
pub(crate) use pull::{pulled, rule};
pub(crate) use records::{apply_to, apply_to_all, fan_out_model, Batched, Guard, Values};
pub use versions::VERSION_PATH;
pub(crate) use versions::{
    after_image, catch_up, first_version, inc_version, replace_outcome, replace_version, stamp, stamp_first_version,
    stampable, version_of, version_projection,
};
