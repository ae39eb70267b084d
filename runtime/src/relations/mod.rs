//! References between documents: the typed relation handles, batched
//! loaders and joins, two-way link/unlink/reassign, and `on_delete` rules.

pub(crate) mod elements;
pub(crate) mod handles;
pub(crate) mod inverse_check;
pub(crate) mod join;
pub(crate) mod loaded;
pub mod on_delete;
pub(crate) mod two_way;
pub(crate) mod two_way_inserted;
pub(crate) mod with_parents;

pub use elements::{EachRef, Elements, EmbedArray, RefInElement};
pub use handles::{ParentRef, RefMany, RefOne};
pub use two_way::{LinkOutcome, LinkWrite};
