//! References between documents: the typed relation handles, batched
//! loaders and joins, two-way link/unlink/reassign, and `on_delete` rules.

pub mod elements;
pub mod handles;
pub mod inverse_check;
pub mod join;
pub mod loaded;
pub mod on_delete;
pub mod two_way;
pub(crate) mod two_way_new;
pub mod with_parents;
