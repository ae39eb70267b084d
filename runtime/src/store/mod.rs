//! How every capability reads and writes: typed field handles, filters and
//! sorts (`query`), updates (`update`), the `Find` builder, decoding, and
//! BSON path helpers.

pub mod codec;
pub mod find;
mod ids;
pub mod path;
pub mod query;
pub(crate) mod session;
pub mod transaction;
pub mod update;

pub(crate) use ids::{id_page, ID_PAGE};
pub(crate) use session::primary;
