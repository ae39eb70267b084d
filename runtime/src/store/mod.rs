//! How every capability reads and writes: typed field handles, filters,
//! updates and sorts, the `Find` builder, decoding, and BSON path helpers.

pub mod codec;
pub mod find;
pub mod path;
pub mod query;
