//! The types a document's `_id` may have.

use mongodb::bson::{self, oid::ObjectId, Bson, RawBsonRef};
use std::fmt::Debug;
use std::hash::Hash;

/// A type usable as a document's `_id` and as a reference to it.
///
/// Implemented for [`ObjectId`], [`String`], `i32`, `i64` and [`bson::Uuid`],
/// the `_id` types of the reference texts (`ObjectID('AAAA')`, `"joe"`, `1`).
/// The `_id` field is one of these, or an `Option` of one that docrel
/// fills on insert ([`GeneratedId`]).
///
/// A newtype id (`struct PartId(ObjectId)`) keeps part ids and product
/// ids apart in signatures and is stored as the plain value: derive serde
/// with `#[serde(transparent)]` and implement this trait (and
/// [`GeneratedId`], to let docrel make new ones) by delegating to the
/// inner id. Name it `…Id`: an array of it (`Vec<PartId>`) is then read as
/// an array of ids, not of `{id, ..}` elements.
///
/// ```
/// use docrel::{DocId, Document, GeneratedId, bson::{oid::ObjectId, Bson, RawBsonRef}};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Hash)]
/// #[serde(transparent)]
/// struct PartId(ObjectId);
///
/// impl DocId for PartId {
///     fn to_bson(&self) -> Bson { self.0.to_bson() }
///     fn from_raw(raw: RawBsonRef<'_>) -> Option<Self> { ObjectId::from_raw(raw).map(PartId) }
/// }
/// impl GeneratedId for PartId {
///     fn generate() -> Self { PartId(ObjectId::new()) }
/// }
///
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "parts")]
/// struct Part { #[serde(rename = "_id")] id: PartId, name: String }
///
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "products")]
/// struct Product {
///     #[serde(rename = "_id")] id: ObjectId,
///     #[reference(many, to = Part, max = 100)] parts: Vec<PartId>,
/// }
///
/// let id = PartId(ObjectId::new());
/// assert_eq!(id.to_bson(), Bson::ObjectId(id.0)); // stored as the plain ObjectId
/// ```
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
    note = "an `_id` is an `ObjectId`, `String`, `i32`, `i64` or `bson::Uuid`, an `Option` of one docrel generates (`Option<ObjectId>`), or a newtype implementing `DocId`"
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

/// An id type docrel can make a new value of: the `_id` of a document
/// declared as an `Option` of it (`id: Option<ObjectId>`) is generated on
/// insert when it is `None`.
///
/// The id is made by docrel on the client, before the insert, not by the
/// server: the copies filled from the new document, the other side of its
/// two-way references, the subsets it is summarized in and the document
/// `insert(..).returning()` gives all need it before the write. (MongoDB's
/// drivers make `_id`s on the client too; the server adds one only to a
/// document sent without any.)
///
/// Implemented for [`ObjectId`] and [`bson::Uuid`] (a random, version 4
/// UUID); a `String` or integer id carries meaning, so it is yours to set.
///
/// ```
/// # docrel::testing::doc_test(|db| async move {
/// use docrel::{Document, bson::oid::ObjectId};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "notes")]
/// struct Note { #[serde(rename = "_id")] id: Option<ObjectId>, text: String }
///
/// let note = Note::repo(&db).insert(&Note { id: None, text: "hi".into() }).returning().await?;
/// let id = note.id.expect("generated on insert");
/// assert_eq!(Note::repo(&db).require(&id).await?.text, "hi");
/// # Ok(()) });
/// ```
#[diagnostic::on_unimplemented(
    message = "docrel cannot generate a `{Self}` for an `Option` `_id`",
    label = "an `Option` id is generated on insert",
    note = "docrel generates `ObjectId` and `bson::Uuid` ids (and newtypes implementing `docrel::GeneratedId`); a `String` or integer id carries meaning: make the field `{Self}` and set it yourself"
)]
pub trait GeneratedId: DocId {
    /// A new, unique id.
    fn generate() -> Self;
}

impl GeneratedId for ObjectId {
    fn generate() -> Self {
        ObjectId::new()
    }
}

impl GeneratedId for bson::Uuid {
    fn generate() -> Self {
        bson::Uuid::new()
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
