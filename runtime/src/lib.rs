//! Runtime of docrel. Use it through the `docrel` crate, which re-exports
//! everything here together with the derive macros.
//!
//! One folder per capability, data flowing one way (a module imports only
//! from the layers below it; `tests/layers.rs` checks it):
//!
//! | layer | modules | what lives there |
//! |---|---|---|
//! | facade | [`repository`], `testing` | the write lifecycle: each write calls the hooks of the capabilities |
//! | admin | [`admin`], [`check`] | the schema report, the doctor, verify/repair of everything, the command line |
//! | relations | [`relations`], [`load`] | handles, loaders, joins, two-way writes, `on_delete` |
//! | denormalize | [`denormalize`] | fan-out, fill, verify/repair, sync worker |
//! | patterns | [`patterns`] | subset, bucket, counter |
//! | store | [`query`] | field handles, filters, updates, `Find`, decoding, BSON paths |
//! | schema | [`schema`], [`client`] | descriptors, the registry, the schema graph, indexes; connecting |
//! | base | `error`, `id`, [`bson_compat`] | errors, id types, the bson 2/3 differences |

pub mod admin;
pub mod bson_compat;
pub mod client;
pub mod denormalize;
mod error;
mod id;
mod kept;
pub mod patterns;
pub mod relations;
pub mod repository;
pub mod schema;
mod store;
#[cfg(feature = "testing")]
pub mod testing;

#[doc(hidden)]
pub mod __private;

/// Verify and repair of derived data: one [`Check`](check::Check) per
/// kind (copies, two-way references, subsets, buckets, dead letters), run
/// on the one scan engine ([`Scan`](check::Scan)).
pub mod check {
    pub use crate::admin::check::{buckets, copies, dead_letters, inverse, named, subsets, Check, CheckKind};
    pub use crate::patterns::bucket_check::{bucket_arrays, BucketArray};
    pub use crate::relations::inverse_check::{pairs, Pair, Shape as PairShape, Side};
    pub use crate::store::scan::{Checkpoint, Progress, Report, Scan, PROBLEMS_LISTED};
}

/// Loading related documents: joins of several relations at once, the
/// loaders' requests and strategies, and what they return.
pub mod load {
    pub use crate::relations::join::{
        join_chunked, Children, Join, JoinSet, Latest, Load, Referenced, Referrers, Request, DEFAULT_CHUNK,
    };
    pub use crate::relations::loaded::Loaded;
    pub use crate::relations::with_parents::{Strategy, WithParents, WithParentsIn};
}

/// Filters, sorts, updates and reads beyond the four at the root
/// ([`Field`], [`Filter`], [`Update`], [`Sort`]): the `Find` builders, the
/// bounds of comparisons, regex escaping.
pub mod query {
    pub use crate::store::field::{Each, Whole};
    pub use crate::store::{
        escape_regex, ByRef, ByValue, Compares, DateLike, Element, Find, FindIn, Holds, Orders, Text,
    };
}

pub use error::{Error, Misuse, Result};
pub use id::{DocId, GeneratedId};
pub use mongodb;
pub use mongodb::bson;
pub use relations::join::join;
pub use repository::connect::{connect, connect_from_env, connect_with};
pub use schema::document::{Document, Embedded, View};
pub use store::{Field, Filter, Sort, Update};
