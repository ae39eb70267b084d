//! The traits that `#[derive(Document)]` and `#[derive(View)]` implement, and
//! the static description of a schema that they generate.

pub use super::index_spec::{IndexCollation, IndexSpec, PartialFilter};
use super::repository::Repository;
use crate::error::Result;
use crate::id::DocId;
use mongodb::bson;
use serde::{de::DeserializeOwned, Serialize};

/// A struct stored as one document of one collection.
///
/// Derive it; do not implement it by hand:
///
/// ```
/// use docrel::{Document, bson::oid::ObjectId};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Document, Serialize, Deserialize, Debug)]
/// #[document(collection = "parts")]
/// struct Part {
///     #[serde(rename = "_id")]
///     id: ObjectId,
///     partno: String,
///     name: String,
/// }
///
/// assert_eq!(<Part as docrel::Document>::COLLECTION, "parts");
/// assert_eq!(Part::fields().name.path(), "name");
/// assert_eq!(Part::fields().id.path(), "_id");
/// ```
///
/// The module `docrel::attributes` lists every attribute the derive reads
/// (`#[document]`, `#[embed]`, `#[reference]`, `#[parent_ref]`,
/// `#[denormalize]`, `#[bucket]`), each key with its default and an
/// example, and the warnings with how to acknowledge each one.
#[diagnostic::on_unimplemented(
    message = "`{Self}` must derive `docrel::Document`",
    label = "not a document",
    note = "a document type is a struct with named fields, `#[derive(docrel::Document, Serialize, Deserialize)]` and `#[document(collection = \"..\")]`"
)]
pub trait Document: View<Of = Self> + Serialize + DeserializeOwned + Send + Sync + Unpin + 'static {
    /// The type of the `_id` field.
    type Id: DocId;
    /// The collection the documents live in.
    const COLLECTION: &'static str;
    /// The stored names of the shard key, in order (`#[document(shard_key(tenant, id))]`
    /// gives `["tenant", "_id"]`); empty when none is declared.
    const SHARD_KEY: &'static [&'static str] = &[];
    /// The Rust names of its two-way references (`inverse = ..`), read by
    /// the other side's derive. Not public API.
    #[doc(hidden)]
    const TWO_WAY: &'static [&'static str] = &[];
    /// The document's `_id`: `None` only for a document whose `_id` field
    /// is an `Option` not set yet (docrel generates it on insert, see
    /// [`crate::GeneratedId`]); a document read from the database has one.
    fn id(&self) -> Option<&Self::Id>;
    /// A new id for a document inserted without one: `Some` only for a
    /// type whose `_id` field is an `Option` of a [`crate::GeneratedId`].
    /// Not public API.
    #[doc(hidden)]
    fn generate_id() -> Option<Self::Id> {
        None
    }
    /// The static description of this document type.
    fn schema() -> &'static Schema;
    /// Checks every declared bound (`#[embed(max = N)]`, `#[reference(many, max = N)]`)
    /// before a write; the error names the field, bound and length.
    fn check_bounds(&self) -> Result<()>;

    /// The typed repository of this document type in `db`, for code generic
    /// over any document (`T::repo(&db)`); the derive's `Part::repo(&db)`
    /// is the same repository.
    ///
    /// ```
    /// # docrel::testing::doc_test(|db| async move {
    /// use docrel::{Document, Filter, bson::oid::ObjectId, mongodb::Database};
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(Document, Serialize, Deserialize)]
    /// # #[document(collection = "parts")]
    /// # struct Part { #[serde(rename = "_id")] id: ObjectId, name: String }
    ///
    /// async fn total<T: Document>(db: &Database) -> docrel::Result<u64> {
    ///     T::repo(db).count(Filter::all()).await
    /// }
    ///
    /// Part::repo(&db).insert(&Part { id: ObjectId::new(), name: "bolt".into() }).await?;
    /// assert_eq!(total::<Part>(&db).await?, 1);
    /// # Ok(()) });
    /// ```
    fn repo(db: &mongodb::Database) -> Repository<Self> {
        Repository::on(db, Self::COLLECTION)
    }

    /// The type's lifecycle hooks when it implements `docrel::repository::Hooks` (the
    /// derive finds out), type-erased: the schema layer cannot name them.
    /// Not public API.
    #[doc(hidden)]
    fn __hooks() -> Option<&'static (dyn std::any::Any + Send + Sync)> {
        None
    }
}

/// A [`Document`] whose writes by `_id` alone reach one shard: it declares
/// no shard key, or `shard_key(id)`. The derive implements it; the
/// repository's `update_by_id` and `delete_by_id` require it, so that a
/// type sharded on more than `_id` cannot write by id alone:
///
/// ```compile_fail,E0277
/// use docrel::{Document, bson::oid::ObjectId};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "orders", shard_key(tenant, id))]
/// struct Order { #[serde(rename = "_id")] id: ObjectId, tenant: String, total: i64 }
///
/// async fn pay(repo: &docrel::repository::Repository<Order>, id: &ObjectId) -> docrel::Result<()> {
///     // error[E0277]: `Order` is sharded on more than `_id`
///     repo.update_by_id(id, Order::fields().total.set(0)).await?;
///     Ok(())
/// }
/// ```
///
/// Write such a type through a filter that fixes the whole key
/// (`update_one`, `delete_one`), or with the document in hand
/// (`replace`, `save`, `delete`); the same update, routed by the key,
/// compiles:
///
/// ```
/// use docrel::{Document, bson::oid::ObjectId};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "orders", shard_key(tenant, id))]
/// struct Order { #[serde(rename = "_id")] id: ObjectId, tenant: String, total: i64 }
///
/// async fn pay(repo: &docrel::repository::Repository<Order>, order: &Order) -> docrel::Result<()> {
///     let key = Order::fields().tenant.eq(order.tenant.as_str()).and(Order::fields().id.eq(order.id));
///     repo.update_one(key, Order::fields().total.set(0)).await?;
///     Ok(())
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is sharded on more than `_id`: a write by id alone cannot be routed to one shard",
    label = "needs the whole shard key",
    note = "use `update_one`/`delete_one` with a filter that fixes every shard key field, or `replace`/`save`/`delete` with the document"
)]
pub trait RoutedById: Document {}

/// A typed partial view of a [`Document`]: only its fields travel from the
/// server (a projection), as in rule 4 of the reference texts.
///
/// Every `Document` is a view of itself (no projection). Derive narrower ones:
///
/// ```
/// use docrel::{Document, View, bson::oid::ObjectId};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "parts")]
/// struct Part { #[serde(rename = "_id")] id: ObjectId, name: String, price: f64, qty: i32 }
///
/// #[derive(View, Deserialize)]
/// #[view(of = Part)]
/// struct PartName { #[serde(rename = "_id")] id: ObjectId, name: String }
///
/// assert_eq!(<PartName as View>::PROJECTION, Some(&["_id", "name"][..]));
/// assert_eq!(<Part as View>::PROJECTION, None);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a view of a document",
    label = "derive `docrel::View` on it, with `#[view(of = ..)]`",
    note = "a view names the document it reads (`#[view(of = Review)]`) and the fields that travel"
)]
pub trait View: DeserializeOwned + Send + Sync + Unpin + 'static {
    /// The document type this is a view of.
    type Of: Document;
    /// The stored fields the view reads; `None` reads the whole document.
    const PROJECTION: Option<&'static [&'static str]>;

    /// The projection document for the driver (`{_id: 1, name: 1}`).
    fn projection() -> Option<bson::Document> {
        Self::PROJECTION.map(|fields| fields.iter().map(|f| ((*f).to_owned(), bson::Bson::Int32(1))).collect())
    }
}

/// A type that carries the field `F` of the document `D`: the document
/// itself, or a [`View`] of it that includes the field. `F` is
/// [`field_key`] of the field's Rust name.
///
/// Both derives implement it: `#[derive(Document)]` for each reference
/// field, `#[derive(View)]` for each field of the view. A loader takes as
/// parents any type that carries its relation's field, so a page can read
/// its parents with only what it shows and still load their relations;
/// a view without the field does not compile:
///
/// ```
/// use docrel::{schema::Carries, Document, View, bson::oid::ObjectId};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "parts")]
/// struct Part { #[serde(rename = "_id")] id: ObjectId, name: String }
///
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "products")]
/// struct Product {
///     #[serde(rename = "_id")] id: ObjectId,
///     name: String,
///     #[reference(many, to = Part, max = 100)]
///     parts: Vec<ObjectId>,
/// }
///
/// /// What a product list shows: the name, and the parts to load.
/// #[derive(View, Deserialize)]
/// #[view(of = Product)]
/// struct ProductCard { name: String, parts: Vec<ObjectId> }
///
/// fn parts_of<Q: Carries<Product, { docrel::schema::field_key("parts") }, Vec<ObjectId>>>(q: &Q) -> usize {
///     q.carried().len()
/// }
/// assert_eq!(parts_of(&ProductCard { name: "shifter".into(), parts: vec![ObjectId::new()] }), 1);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not carry the field of `{D}` that this relation reads",
    label = "the parents given to this loader",
    note = "load from the document itself, or from a view of it that includes the relation's field (`#[derive(View)]` with the field, same name and type)"
)]
///
/// The field's type `V` is a parameter, not an associated type: a field whose
/// type is private to its module (a library's private element struct) then
/// makes the impl as private as the field, where an associated type would
/// put the private type in a public interface (E0446).
pub trait Carries<D, const F: u64, V> {
    /// The field.
    fn carried(&self) -> &V;
}

/// The key of a field name in [`Carries`]: FNV-1a (64 bits) of its Rust
/// name. Were two fields of one type and one field type ever to share a
/// key, their two `Carries` impls would conflict and the build would stop:
/// a mix-up cannot compile.
pub const fn field_key(name: &str) -> u64 {
    let bytes = name.as_bytes();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    hash
}

/// The static description of one document type, generated by the derive
/// and registered at link time so that the whole program's schema can be
/// walked (see [`crate::schema::registry`]).
#[derive(Debug)]
pub struct Schema {
    /// The Rust type's name.
    pub rust_name: &'static str,
    /// The module path the type is declared in.
    pub module: &'static str,
    /// The collection.
    pub collection: &'static str,
    /// The stored fields, in declaration order.
    pub fields: &'static [FieldInfo],
    /// The relationships declared on its fields.
    pub relations: &'static [Relation],
    /// The indexes it declares: `#[document(index(..))]` on the struct,
    /// `#[document(index)]`, `unique` and `text` on fields.
    pub indexes: &'static [IndexSpec],
    /// Its top-level denormalized copies (`#[denormalize(from = .., via = ..)]`).
    pub copies: &'static [FieldCopy],
    /// The rules of thumb its attributes were checked against.
    pub advice: &'static [Advice],
    /// The stored names of its shard key (`#[document(shard_key(..))]`), in
    /// order; empty when none is declared.
    pub shard_key: &'static [&'static str],
}

/// A rule of thumb checked at compile time on one field: the warning it
/// gave, or would have given had it not been acknowledged.
#[derive(Debug)]
pub struct Advice {
    /// The rule's name (`docrel_rule_3_unbounded_embed`), as the warning shows it.
    pub rule: &'static str,
    /// The Rust field.
    pub field: &'static str,
    /// What the warning says.
    pub note: &'static str,
    /// Whether the attribute acknowledges it (`allow_unbounded`, ...).
    pub acknowledged: bool,
    /// Whether the rule applies (some depend on other types: is the embedded
    /// type a document? is the other side an array?).
    pub applies: fn() -> bool,
}

impl Schema {
    /// Looks a relationship up by the stored name of its field.
    pub fn relation(&self, field: &str) -> Option<&'static Relation> {
        self.relations.iter().find(|r| r.field == field)
    }
}

/// One stored field of a document type.
#[derive(Debug, Clone, Copy)]
pub struct FieldInfo {
    /// The Rust field name.
    pub rust: &'static str,
    /// The stored (BSON) name, after serde renames.
    pub bson: &'static str,
    /// The Rust type, as written.
    pub rust_type: &'static str,
    /// What the field is: plain, or which kind of reference.
    pub kind: LinkKind,
    /// The collection a reference field refers to.
    pub target: Option<&'static str>,
}

/// What a stored field of a document is ([`FieldInfo::kind`]); other
/// documents' derives check their `inverse = ..` against it when the
/// program is compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkKind {
    /// A plain field, an embed or a bucket.
    Plain,
    /// An array of ids (`#[reference(many)]` on `Vec<Id>`).
    Ids,
    /// An array of `{id, ..}` structs.
    Structs,
    /// A single reference (`#[reference(to = ..)]`).
    One,
    /// A parent reference.
    Parent,
    /// The type failed its derive: nothing is known, nothing is reported.
    #[doc(hidden)]
    Stub,
}

/// A relationship declared by an attribute on a field.
#[derive(Debug)]
pub struct Relation {
    /// The stored name of the field carrying it.
    pub field: &'static str,
    /// The Rust name of that field.
    pub rust_field: &'static str,
    /// What kind of relationship it is.
    pub kind: RelationKind,
    /// The collection referred to (references), or `None` for embeds.
    pub target: Option<&'static str>,
    /// The Rust name of the target type.
    pub target_type: Option<&'static str>,
    /// The stored name of the field on the other side that mirrors this one
    /// (two-way references).
    pub inverse: Option<&'static str>,
    /// What happens to this field when the referred document is deleted.
    pub on_delete: OnDelete,
    /// For parent references, the default order of the children
    /// (`sort = "-time"`), which also joins the relationship's index.
    pub order: &'static [(&'static str, i32)],
    /// For arrays of `{id, ..}` structs, the fields of each element that are
    /// copies of the referred document's fields.
    pub copies: &'static [ElemCopy],
    /// The references each element of an embedded array holds
    /// (`comments[].author`), when its struct derives [`Embedded`].
    pub elements: &'static [ElemRef],
    /// For a subset (`#[embed(max, subset_of = ..)]`): what it summarizes.
    pub subset: Option<SubsetSpec>,
    /// For a bucket array (`#[bucket(..)]`): how buckets are keyed and filled.
    pub bucket: Option<BucketSpec>,
    /// Rule 3's threshold on an array of embeds or references: the
    /// attribute's `warn_above`, else [`EMBED_WARN_ABOVE`] or
    /// [`REFERENCE_WARN_ABOVE`]; `None` where rule 3 does not apply. The
    /// compiler warns of a `max` above it and the doctor of lengths above
    /// it: one number for both.
    pub warn_above: Option<u32>,
}

/// Rule 3 for embedded arrays, "a couple of hundred" at most: where the
/// derive and the doctor draw the line unless `#[embed(warn_above = N)]`
/// says otherwise.
pub const EMBED_WARN_ABOVE: u32 = 200;

/// Rule 3 for arrays of references, "a few thousand" at most, unless
/// `#[reference(many, warn_above = N)]` says otherwise.
pub const REFERENCE_WARN_ABOVE: u32 = 5000;

/// Relationship balance: a side of a two-way N:M reference that may hold
/// this many ids or more is better kept one-way (the derive's
/// `docrel_relationship_balance`, the doctor's `balance`).
pub const TWO_WAY_WARN_FROM: u32 = 1000;

/// The subset pattern on an embedded array: the parent keeps summaries of
/// its N newest (or highest) children, whose full set has its own collection.
#[derive(Debug)]
pub struct SubsetSpec {
    /// The child collection.
    pub child: &'static str,
    /// The child's Rust type name.
    pub child_type: &'static str,
    /// The order of the summaries (`[("published_date", -1)]`).
    pub sort: &'static [(&'static str, i32)],
    /// Keep the last N in that order rather than the first N.
    pub keep_last: bool,
    /// The field identifying a child in its summary (for edits and deletes).
    pub key: Option<&'static str>,
    /// The child fields a summary holds (the element view's projection).
    pub fields: Option<&'static [&'static str]>,
    /// The size of one summary at most, in bytes.
    pub max_bytes: Option<u32>,
}

/// The bucket pattern: children stored in bucket documents of one parent,
/// by count (pages of `size`) or by time window.
#[derive(Debug)]
pub struct BucketSpec {
    /// The stored name of the bucket's parent reference.
    pub parent: &'static str,
    /// The stored name of the element count.
    pub count: &'static str,
    /// The stored name of the page number (count buckets).
    pub page: &'static str,
    /// The stored name of the window start (time buckets).
    pub start: &'static str,
    /// Elements per bucket (count buckets), or per bucket of a window
    /// (time buckets; see [`BucketSpec::bound`]).
    pub size: Option<u32>,
    /// The window length in milliseconds (time buckets).
    pub window_ms: Option<i64>,
    /// The size of one element at most, in bytes.
    pub max_bytes: Option<u32>,
    /// A counter bucket (`#[bucket(counter, window = ..)]`): one document
    /// per parent and window whose `count` field counts events that are
    /// not stored; no array, no page.
    pub counter: bool,
    /// The stored name of a counter's sum of the events' amounts.
    pub sum: Option<&'static str>,
}

/// Elements per bucket of a time bucket that declares no `size`: MongoDB's
/// own time-series buckets stop at 1,000 measurements too. A busy window
/// goes on in a second bucket of the same window, so no bucket grows
/// toward 16 MiB with the traffic (elements up to 16 KiB each fit).
pub const TIME_BUCKET_SIZE: u32 = 1_000;

impl BucketSpec {
    /// The most elements one bucket holds: `size`, or [`TIME_BUCKET_SIZE`]
    /// for a time bucket without one.
    pub fn bound(&self) -> Option<u32> {
        self.size.or(self.window_ms.map(|_| TIME_BUCKET_SIZE))
    }
}

/// A top-level field that copies a field of the document a single
/// reference leads to (`parts.product_name` from `Product::name` via `product`).
#[derive(Debug)]
pub struct FieldCopy {
    /// The stored name of the copy.
    pub field: &'static str,
    /// The source collection.
    pub source: &'static str,
    /// The source's Rust type name.
    pub source_type: &'static str,
    /// The stored path of the source field.
    pub source_field: &'static str,
    /// The stored name of the reference holding the source's id.
    pub via: &'static str,
}

/// A field of the elements of a reference array that copies a field of the
/// referred document (`products.parts[].name` from `Part::name`).
#[derive(Debug)]
pub struct ElemCopy {
    /// The stored name of the copy inside the element.
    pub field: &'static str,
    /// The source collection.
    pub source: &'static str,
    /// The source's Rust type name.
    pub source_type: &'static str,
    /// The stored path of the source field.
    pub source_field: &'static str,
}

/// A single reference held by each element of an embedded array
/// (`posts.comments[].author`), with the copies the element makes through
/// it; the runtime keeps it as an array keyed by the element's field.
#[derive(Debug)]
pub struct ElemRef {
    /// The stored name of the reference inside the element.
    pub field: &'static str,
    /// Its Rust name.
    pub rust_field: &'static str,
    /// The collection referred to.
    pub target: &'static str,
    /// The Rust name of the target type.
    pub target_type: &'static str,
    /// Whether it may be absent (`Option<Id>`).
    pub optional: bool,
    /// What happens to the elements referring to a deleted document.
    pub on_delete: OnDelete,
    /// The element's fields copied through it from the referred document.
    pub copies: &'static [ElemCopy],
}

/// The element struct of a reference array (`{id, name}`): derive it with
/// `#[derive(docrel::Embedded)]`, marking copied fields with
/// `#[denormalize(from = Part::name)]`.
///
/// ```
/// use docrel::{Document, Embedded, bson::oid::ObjectId};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "parts")]
/// struct Part { #[serde(rename = "_id")] id: ObjectId, name: String }
///
/// #[derive(Embedded, Serialize, Deserialize)]
/// struct PartRef {
///     id: ObjectId,
///     #[denormalize(from = Part::name)]
///     name: String,
/// }
///
/// assert_eq!(<PartRef as Embedded>::COPIES[0].source_field, "name");
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is the element of a reference array but does not derive `docrel::Embedded`",
    label = "add `#[derive(docrel::Embedded)]` to this struct",
    note = "docrel reads the copies an element holds (`#[denormalize(from = ..)]`) from that derive"
)]
pub trait Embedded {
    /// The fields that copy a field of the referred document.
    const COPIES: &'static [ElemCopy];
    /// The references the element holds itself (`#[reference(to = User)]`
    /// on a field), when it is the element of an embedded array.
    const REFS: &'static [ElemRef] = &[];
}

impl Relation {
    /// The path that holds the referred ids: `parts`, or `parts.id` when the
    /// array holds `{id, name}` structs.
    pub fn id_path(&self) -> String {
        match self.kind {
            RelationKind::RefMany { key: Some(key), .. } => format!("{}.{key}", self.field),
            _ => self.field.to_owned(),
        }
    }

    /// Is this a reference (anything but an embed)?
    pub fn is_reference(&self) -> bool {
        matches!(self.kind, RelationKind::RefMany { .. } | RelationKind::RefOne { .. } | RelationKind::ParentRef)
    }
}

/// The kinds of relationship of the reference texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelationKind {
    /// The related data lives inside the document (`#[embed]`): one-to-few,
    /// or one-to-one when `many` is false.
    Embed {
        /// An array (`Vec<T>`) rather than one struct.
        many: bool,
        /// The bound of the array, if declared.
        max: Option<u32>,
    },
    /// An array of references (`#[reference(many, to = T)]`): one-to-many.
    RefMany {
        /// The bound of the array, if declared.
        max: Option<u32>,
        /// For arrays of structs (`[{id, name}]`), the stored name of the
        /// field holding the id.
        key: Option<&'static str>,
    },
    /// One reference (`#[reference(to = T)]`): many-to-one or one-to-one.
    RefOne {
        /// Whether it may be absent (`Option<Id>`).
        optional: bool,
    },
    /// A reference from child to parent (`#[parent_ref(to = P)]`): one-to-squillions.
    ParentRef,
    /// The array of a bucket document (`#[bucket(..)]`).
    Bucket,
}

/// What happens to the referring field when the referred document is deleted
/// through docrel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnDelete {
    /// Nothing: the reference dangles (loaders report it).
    #[default]
    Nothing,
    /// The id is pulled from the referring arrays (or the field is unset).
    Pull,
    /// The referring documents are deleted too.
    Cascade,
    /// The delete is refused while any document refers to it.
    Restrict,
}
