//! The doctor's reads against the database, each bounded: a collection of
//! more than [`Options::sample`](super::Options::sample) documents is read
//! through `$sample` of that many, and only lengths, sizes and ids travel
//! (computed by the server with `$size` and `$bsonSize`). What they return
//! are figures; the rules judge them.

mod indexes;
mod profiled;
mod read;
pub(crate) use read::as_u64;
mod references;
mod shape;
mod usage;

pub(super) use indexes::indexes;
pub(super) use references::references;
pub(super) use shape::shape;
pub(super) use usage::copies;
