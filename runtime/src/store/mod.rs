//! How every capability reads and writes: typed field handles, filters and
//! sorts (`query`), updates (`update`), the `Find` builder, decoding, and
//! BSON path helpers.

pub mod codec;
pub mod find;
pub mod path;
pub mod query;
pub mod update;
