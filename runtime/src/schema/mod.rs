//! What the derives describe: the traits, the static descriptors each type
//! registers at link time, and the schema graph built once from them that
//! answers every question the runtime asks about relationships.

pub(crate) mod document;
pub(crate) mod elements;
pub(crate) mod entries;
pub mod graph;
pub(crate) mod graph_moves;
pub(crate) mod handles;
pub(crate) mod index_spec;
pub mod indexes;
pub mod moves;
pub(crate) mod pattern;
pub mod registry;
pub(crate) mod repository;
pub mod shard;
pub mod stored;

pub use crate::error::MAX_DOCUMENT_BYTES;
pub use document::{
    field_key, Advice, BucketSpec, Carries, ElemCopy, ElemRef, FieldCopy, FieldInfo, IndexCollation, IndexSpec,
    LinkKind, OnDelete, PartialFilter, Relation, RelationKind, RoutedById, Schema, SubsetSpec, EMBED_WARN_ABOVE,
    REFERENCE_WARN_ABOVE, TIME_BUCKET_SIZE, TWO_WAY_WARN_FROM,
};
pub use handles::Handles;

pub use pattern::Pattern;
pub use stored::{
    confirmed_ago, export, lease, lease_for, load, obey, publish, set_lease, set_lease_for, DEFAULT_LEASE,
};
