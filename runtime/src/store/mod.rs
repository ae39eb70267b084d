//! How every capability reads and writes: typed field handles (`field`),
//! the conditions they build (`conditions`), filters and sorts (`query`),
//! updates (`update`, their bounds in `bounds`), the `Find` builder and the
//! options every read builder holds (`options`), `_id` keyset paging
//! (`page`), reads through the old shape of a move (`moving`), the
//! verify/repair engine every kind of derived data runs on
//! (`scan`), decoding, and BSON path helpers.

pub(crate) mod bounds;
pub(crate) mod bulk;
pub mod codec;
mod conditions;
pub mod field;
pub mod find;
pub(crate) mod moving;
mod moving_ids;
pub mod options;
pub(crate) mod page;
pub mod path;
pub mod query;
pub mod scan;
pub(crate) mod session;
pub mod transaction;
mod unbuilt;
pub mod update;
pub(crate) mod updates;

pub use conditions::escape_regex;
pub use field::{ByRef, ByValue, Compares, Element, Field, Holds, Orders, Text};
pub use find::{Find, FindIn};
pub(crate) use page::{id_page, ID_PAGE};
pub use query::{Filter, Sort};
pub(crate) use session::primary;
pub use update::{DateLike, Update};
