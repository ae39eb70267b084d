//! The types a document's `_id` may have.

use mongodb::bson::{self, oid::ObjectId, Bson, RawBsonRef};
use std::fmt::Debug;
use std::hash::Hash;

/// A type usable as a document's `_id` and as a reference to it.
///
/// Implemented for [`ObjectId`], [`String`], `i32`, `i64` and [`bson::Uuid`],
/// the `_id` types of the reference texts (`ObjectID('AAAA')`, `"joe"`, `1`).
///
/// ```
/// use docrel::DocId;
/// use docrel::bson::{oid::ObjectId, Bson};
/// let id = ObjectId::new();
/// assert_eq!(id.to_bson(), Bson::ObjectId(id));
/// assert_eq!(<i32 as DocId>::from_raw(docrel::bson::RawBsonRef::Int32(7)), Some(7));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a document `_id`",
    label = "not an id type",
    note = "an `_id` is an `ObjectId`, `String`, `i32`, `i64` or `bson::Uuid`; it is always present, so never an `Option`"
)]
pub trait DocId: Clone + Eq + Hash + Debug + Send + Sync + Unpin + 'static {
    /// The value as BSON, for filters.
    fn to_bson(&self) -> Bson;
    /// Reads the value from a raw BSON element; `None` when it has another type.
    fn from_raw(raw: RawBsonRef<'_>) -> Option<Self>;
}

impl DocId for ObjectId {
    fn to_bson(&self) -> Bson {
        Bson::ObjectId(*self)
    }
    fn from_raw(raw: RawBsonRef<'_>) -> Option<Self> {
        raw.as_object_id()
    }
}

impl DocId for String {
    fn to_bson(&self) -> Bson {
        Bson::String(self.clone())
    }
    fn from_raw(raw: RawBsonRef<'_>) -> Option<Self> {
        raw.as_str().map(str::to_owned)
    }
}

impl DocId for i32 {
    fn to_bson(&self) -> Bson {
        Bson::Int32(*self)
    }
    fn from_raw(raw: RawBsonRef<'_>) -> Option<Self> {
        match raw {
            RawBsonRef::Int32(v) => Some(v),
            RawBsonRef::Int64(v) => i32::try_from(v).ok(),
            _ => None,
        }
    }
}

impl DocId for i64 {
    fn to_bson(&self) -> Bson {
        Bson::Int64(*self)
    }
    fn from_raw(raw: RawBsonRef<'_>) -> Option<Self> {
        match raw {
            RawBsonRef::Int64(v) => Some(v),
            RawBsonRef::Int32(v) => Some(i64::from(v)),
            _ => None,
        }
    }
}

impl DocId for bson::Uuid {
    fn to_bson(&self) -> Bson {
        Bson::from(*self)
    }
    fn from_raw(raw: RawBsonRef<'_>) -> Option<Self> {
        match raw {
            RawBsonRef::Binary(b) if b.subtype == bson::spec::BinarySubtype::Uuid => {
                bson::Uuid::from_bytes(b.bytes.try_into().ok()?).into()
            }
            _ => None,
        }
    }
}

/// Renders an id for error messages.
pub(crate) fn show<I: DocId>(id: &I) -> String {
    crate::error::show_id(&id.to_bson())
}

impl crate::error::ShowId for Bson {
    fn show_id(&self) -> String {
        crate::bson_compat::relaxed_extjson(self)
    }
}
