//! Runtime of docrel. Use it through the `docrel` crate, which re-exports
//! everything here together with the derive macros.

mod bucket;
mod codec;
mod connect;
mod document;
mod error;
pub mod fanout;
mod id;
pub mod indexes;
mod join;
mod loaded;
mod monitor;
mod on_delete;
mod query;
pub mod registry;
mod relation;
mod repair;
pub mod report;
mod repository;
mod subset;
mod sync;
pub mod testing;
mod two_way;

#[doc(hidden)]
pub mod __private;

pub use bson;
pub use bucket::{Appended, Bucket};
pub use connect::{connect, connect_from_env, connect_with, options, DEFAULT_SERVER_SELECTION_TIMEOUT, URI_VARIABLE};
pub use document::{
    Copy, Document, ElemCopy, Embedded, FieldInfo, IndexSpec, OnDelete, Relation, RelationKind, Schema, View,
};
pub use error::{Error, Result, MAX_DOCUMENT_BYTES};
pub use id::DocId;
pub use join::{join, join_chunked, Children, JoinSet, Latest, Referenced, Request, DEFAULT_CHUNK};
pub use loaded::Loaded;
pub use mongodb;
pub use monitor::{Mark, RoundTrips};
pub use query::{Field, Filter, Sort, Update};
pub use relation::{ParentRef, RefMany, RefOne};
pub use repository::{Find, Repository, UpdateOutcome};
pub use subset::Subset;
pub use two_way::LinkOutcome;
