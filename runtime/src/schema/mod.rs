//! What the derives describe: the traits, the static descriptors each type
//! registers at link time, and the schema graph built once from them that
//! answers every question the runtime asks about relationships.

pub mod document;
pub mod elements;
pub(crate) mod entries;
pub mod graph;
pub mod handles;
pub mod index_spec;
pub mod indexes;
pub mod pattern;
pub mod registry;
pub mod repository;
pub mod shard;
pub mod stored;

pub use pattern::Pattern;
pub use stored::{
    confirmed_ago, export, lease, lease_for, load, obey, publish, set_lease, set_lease_for, DEFAULT_LEASE,
};
