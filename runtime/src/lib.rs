//! Runtime of docrel. Use it through the `docrel` crate, which re-exports
//! everything here together with the derive macros.
//!
//! One folder per capability, data flowing one way (a module imports only
//! from the layers below it; `tests/layers.rs` checks it):
//!
//! | layer | modules | what lives there |
//! |---|---|---|
//! | facade | [`Repository`], `client`, `testing` | the write lifecycle: each write calls the hooks of the capabilities |
//! | admin | [`admin`] | the schema report, the doctor, verify/repair of everything, the command line |
//! | relations | `relations` | handles, loaders, joins, two-way writes, `on_delete` |
//! | denormalize | `denormalize` (public as [`fanout`]) | fan-out, fill, verify/repair, sync worker |
//! | patterns | `patterns` | subset, bucket |
//! | store | `store` | field handles, filters, updates, `Find`, decoding, BSON paths |
//! | schema | `schema` | descriptors, the registry, the schema graph, indexes |
//! | base | `error`, `id`, [`bson_compat`] | errors, id types, the bson 2/3 differences |

pub mod admin;
pub mod bson_compat;
mod client;
mod denormalize;
mod error;
mod id;
mod patterns;
mod relations;
mod repository;
pub mod schema;
mod store;
#[cfg(feature = "testing")]
pub mod testing;

#[doc(hidden)]
pub mod __private;

/// Denormalized copies: fan-out, verify/repair, the sync worker.
pub mod fanout {
    pub use crate::denormalize::fanout::targets_of;
    pub use crate::denormalize::*;
}
pub use admin::report;
/// Verify and repair of bucket documents: counts, sizes, pages (I4).
pub use patterns::bucket_check;
/// Verify and repair of two-way references: both sides agree (I2).
pub use relations::inverse_check;
pub use schema::handles::Handles;
pub use schema::{graph, indexes, registry, shard};
/// Verify and repair of derived data: the one engine behind the scans of
/// copies, two-way references, subsets and buckets.
pub use store::scan;

pub use client::connect::{options, redact, DEFAULT_SERVER_SELECTION_TIMEOUT, URI_VARIABLE};
/// What the deployment supports, and the minimum versions.
pub use client::deployment;
pub use client::monitor::{Mark, RoundTrips};
pub use client::trace;
/// The `on_delete` rules' paging and their bound on cycles.
pub mod on_delete {
    pub use crate::relations::on_delete::{BATCH, MAX_CYCLE_DOCUMENTS};
}
pub use error::{Error, Misuse, Result, MAX_DOCUMENT_BYTES};
pub use id::{DocId, GeneratedId};
pub use mongodb;
pub use mongodb::bson;
pub use patterns::bucket::{Appended, Bucket};
pub use patterns::counter::{Counter, WindowCount};
pub use patterns::subset::Subset;
pub use relations::elements::{EachRef, Elements, EmbedArray, RefInElement};
pub use relations::handles::{ParentRef, RefMany, RefOne};
pub use relations::join::{
    join, join_chunked, Children, Join, JoinSet, Latest, Load, Referenced, Referrers, Request, DEFAULT_CHUNK,
};
pub use relations::loaded::Loaded;
pub use relations::two_way::{LinkOutcome, LinkWrite};
pub use relations::with_parents::{Strategy, WithParents, WithParentsIn};
pub use repository::hooks::{abort, commit, Hooks};
pub use repository::{
    connect, connect_from_env, connect_with, hooks, ops, Call, Operation, Repository, UpdateOutcome, UpsertOutcome,
};
pub use schema::document::{
    field_key, Carries, Copy, Document, ElemCopy, ElemRef, Embedded, FieldInfo, IndexCollation, IndexSpec, LinkKind,
    OnDelete, PartialFilter, Relation, RelationKind, RoutedById, Schema, View, TIME_BUCKET_SIZE,
};
pub use store::{escape_regex, DateLike, Element, Field, Filter, Find, FindIn, Holds, Sort, Text, Update};
/// The two kinds of [`Holds`]: values of the field itself, or of its elements.
pub mod holds {
    pub use crate::store::field::{Each, Whole};
}
