//! What generated code may touch. Not public API: no stability promise.

pub use crate::bson_compat;
pub use crate::error::{Error, Result};
pub use crate::id::{DocId, GeneratedId};
pub use crate::schema::document::{
    field_key, Advice, BucketSpec, Carries, ElemCopy, ElemRef, FieldInfo, IndexCollation, IndexSpec, LinkKind,
    OnDelete, PartialFilter, Relation, RelationKind, Schema, SubsetSpec,
};
// The descriptor of a top-level copy, under the short name the derive writes.
pub use crate::schema::document::FieldCopy as Copy;
pub use crate::schema::elements::{ElementsOf, NoElements};
pub use crate::schema::entries::{embed_relation, link_field, plain_field, ref_relation};
pub use crate::schema::moves::{Move, MoveKind, MovedBuckets, RegisteredMove};
pub use crate::schema::registry::Registered;
pub use inventory;
pub use mongodb;
pub use mongodb::bson;
pub use serde;

// The facade's items, so that generated code names everything through the
// one alias `use ::docrel::__private as __docrel;`: shorter paths are fewer
// tokens for every derive to emit and rustc to read.
pub use crate::patterns::{Bucket, Counter, Subset};
pub use crate::relations::{EmbedArray, ParentRef, RefInElement, RefMany, RefOne};
pub use crate::repository::hooks::{FoundHooks, HookProbe, NoHooks};
pub use crate::repository::Repository;
pub use crate::schema::shard::routes_by_id;
use crate::schema::shard::str_eq;
pub use crate::schema::{Handles, RoutedById};
pub use crate::{Document, Embedded, Field, View};
pub use core::option::Option::{None, Some};
use std::marker::PhantomData;

/// Checks a bound before a write (generated `check_bounds` calls it).
#[inline]
pub fn check_len<I: DocId>(
    collection: &'static str,
    id: Option<&I>,
    field: &'static str,
    max: u32,
    len: usize,
) -> Result<()> {
    if len > max as usize {
        let id = id.map_or_else(|| "(no id yet)".to_owned(), crate::id::show);
        return Err(Error::EmbedFull { collection, id, field, max, len });
    }
    Ok(())
}

/// Whether every copy of an element struct comes from `collection` (checked
/// at compile time by the derive).
pub const fn copies_come_from(copies: &[ElemCopy], collection: &str) -> bool {
    let mut i = 0;
    while i < copies.len() {
        if !str_eq(copies[i].source, collection) {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether a view reading `projection` (`None`: every field) holds the
/// stored field `name` (a subset's summary holds its sort keys and `key`).
pub const fn view_holds(projection: Option<&[&str]>, name: &str) -> bool {
    match projection {
        Some(fields) => contains(fields, name),
        None => true,
    }
}

/// Whether `names` holds `name` (the write-heavy probe of the derive).
pub const fn contains(names: &[&str], name: &str) -> bool {
    let mut i = 0;
    while i < names.len() {
        if str_eq(names[i], name) {
            return true;
        }
        i += 1;
    }
    false
}

// ---- the visits of reference fields ------------------------------------
//
// What a relation handle calls to read the ids a parent's field holds, one
// generic function per shape rather than a closure per reference: the
// derive names one (`visit_vec::<Id>`), which costs rustc no item of the
// user's crate to check.

/// The id of a field holding one.
pub fn visit_id<I>(value: &I, f: &mut dyn FnMut(&I)) {
    f(value)
}

/// The id of an optional reference, if set.
pub fn visit_option<I>(value: &Option<I>, f: &mut dyn FnMut(&I)) {
    if let Some(id) = value {
        f(id)
    }
}

/// Each id of an array of references, in order.
#[allow(clippy::ptr_arg)] // the field's own type: `FieldVisit<Vec<I>, I>`
pub fn visit_vec<I>(value: &Vec<I>, f: &mut dyn FnMut(&I)) {
    for id in value {
        f(id)
    }
}

/// Each id of an optional array of references, in order.
pub fn visit_option_vec<I>(value: &Option<Vec<I>>, f: &mut dyn FnMut(&I)) {
    for id in value.iter().flatten() {
        f(id)
    }
}

// ---- compile-time checks of the derives ----------------------------------
//
// One mistake, one error: a check that fails makes the type alias built on
// it an error type, and rustc reports nothing more about an error type. The
// derive writes `type __DocrelTo0 = <Pick<Part, { is_document::<Part>() }>
// as Resolve>::Out;` once and uses the alias everywhere else, so a `Part`
// that is not a document is reported once, at `to = Part`, in words.

// ---- the probes of the warnings ------------------------------------------
//
// A warning is the use of a deprecated method of the user's type; advice
// that holds only for some types (is the embedded type a document? is the
// source field write-heavy?) reaches either that method or a quiet twin of
// the same name, through `pick`, decided when the program is compiled.

/// Picks `Y` when `T` is a document, `N` otherwise: `WhenDocument` applies
/// to the probe itself, `Otherwise` only after an autoref, so method lookup
/// tries the first and falls back to the second (both must be in scope).
pub struct Probe<T: ?Sized, Y, N>(PhantomData<fn() -> Y>, PhantomData<fn() -> N>, PhantomData<fn() -> *const T>);

impl<T: ?Sized, Y, N> Probe<T, Y, N> {
    /// The probe.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        Probe(PhantomData, PhantomData, PhantomData)
    }
}

/// The probe of a document type.
pub trait WhenDocument {
    /// What is picked.
    type Pick: 'static;
    /// Whether the advice applies.
    fn holds(&self) -> bool;
    /// A value of the picked type, for its method to be named (never called).
    fn pick(&self) -> &'static Self::Pick {
        unreachable!("docrel: a probe is only type-checked")
    }
}

impl<T: Document, Y: 'static, N> WhenDocument for Probe<T, Y, N> {
    type Pick = Y;
    fn holds(&self) -> bool {
        true
    }
}

/// The probe of any other type.
pub trait Otherwise {
    /// What is picked.
    type Pick: 'static;
    /// Whether the advice applies.
    fn holds(&self) -> bool;
    /// A value of the picked type, for its method to be named (never called).
    fn pick(&self) -> &'static Self::Pick {
        unreachable!("docrel: a probe is only type-checked")
    }
}

impl<T: ?Sized, Y, N: 'static> Otherwise for &Probe<T, Y, N> {
    type Pick = N;
    fn holds(&self) -> bool {
        false
    }
}

/// Picks `Y` when `HOLDS`, `N` otherwise.
pub struct Select<const HOLDS: bool, Y, N>(PhantomData<fn() -> (Y, N)>);

impl<const HOLDS: bool, Y, N> Select<HOLDS, Y, N> {
    /// The selector.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        Select(PhantomData)
    }
}

impl<Y: 'static, N> Select<true, Y, N> {
    /// A value of `Y`, for its method to be named (never called).
    pub fn pick(&self) -> &'static Y {
        unreachable!("docrel: a selection is only type-checked")
    }
}

impl<Y, N: 'static> Select<false, Y, N> {
    /// A value of `N`, for its method to be named (never called).
    pub fn pick(&self) -> &'static N {
        unreachable!("docrel: a selection is only type-checked")
    }
}

/// The quiet twin of every probed piece of advice (see the derive's
/// `warn.rs`): a probe that finds the advice does not apply calls the
/// method of this name here, which says nothing, instead of the deprecated
/// one on the user's type. The names are the rules'; a derive with two
/// probed pieces of advice of one rule (whose names then carry the field)
/// declares its own twins.
pub struct Quiet;

#[allow(non_snake_case)]
impl Quiet {
    /// Rule 2's twin.
    pub fn docrel_rule_2_embedded_document(&self) {}
    /// The relationship balance twin.
    pub fn docrel_relationship_balance(&self) {}
    /// Rule 5's twin.
    pub fn docrel_rule_5_write_heavy_copy(&self) {}
}

/// `T`, once a check on it holds (see [`Resolve`]).
pub struct Pick<T: ?Sized, const OK: bool>(PhantomData<T>);

/// `<Pick<T, true> as Resolve>::Out` is `T`.
pub trait Resolve {
    /// The checked type.
    type Out: ?Sized;
}

impl<T: ?Sized> Resolve for Pick<T, true> {
    type Out = T;
}

/// `T` is a document (`to = T`, `from = T::field`, `of = T`, `subset_of = T`):
/// its derive ran, stored with serde or not (that is its own derive's one
/// error), so the derives naming it report nothing more.
pub const fn is_document<T: DerivesDocument>() -> bool {
    true
}

/// A type `#[derive(Document)]` ran on. `Doc` is the type itself once it is
/// stored with serde, and an error type otherwise, reported once at the
/// struct: the derives naming it use `Doc`, about which rustc says nothing more.
#[diagnostic::on_unimplemented(
    message = "`{Self}` must derive `docrel::Document`",
    label = "not a document",
    note = "a document type is a struct with named fields, `#[derive(docrel::Document, Serialize, Deserialize)]` and `#[document(collection = \"..\")]`"
)]
pub trait DerivesDocument {
    /// The document type, once it is stored with serde.
    type Doc: ?Sized;
}

/// A document is stored with serde.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is stored with serde: derive `Serialize` and `Deserialize` on it",
    label = "needs `#[derive(Serialize, Deserialize)]`",
    note = "a document type derives `#[derive(docrel::Document, Serialize, Deserialize)]`"
)]
pub trait Stored {}
impl<T: serde::Serialize + serde::de::DeserializeOwned> Stored for T {}

/// `T` is stored with serde (the one check of a document's derive on it).
pub const fn is_stored<T: Stored>() -> bool {
    true
}

/// `T` is the element struct of a reference array.
pub const fn is_embedded<T: Embedded>() -> bool {
    true
}

/// `V` is a view of `D` (the summaries of a subset).
pub const fn is_view_of<V: View<Of = D>, D: Document>() -> bool {
    true
}

/// `D` has the field handed in (a name written in an attribute).
pub const fn has_field<D, V>(_field: Field<D, V>) -> bool {
    true
}

/// A copy holds its source field's type, or an `Option` of it (absent while
/// the reference leading to the source is).
#[diagnostic::on_unimplemented(
    message = "a copy has its source field's type: this copy is `{Self}`, its source field is `{S}`",
    label = "the source field is `{S}`",
    note = "write the copy as `{S}` (or `Option<{S}>`), or copy another field"
)]
pub trait CopyOf<S> {}
impl<T> CopyOf<T> for T {}
impl<T> CopyOf<T> for Option<T> {}

/// A field named in an attribute, checked against the type written next to
/// it. The field's type is fixed by the receiver before the bound on the
/// written type is tried, so a mismatch is reported as the unmet bound, in
/// words, rather than as a mismatch of two `Field` types inferred from it.
pub struct Named<D, T>(Field<D, T>);

impl<D, T> Named<D, T> {
    /// The field handle named.
    pub const fn field(field: Field<D, T>) -> Self {
        Named(field)
    }

    /// A copy written as `C` can hold this source field.
    pub const fn copied_as<C: CopyOf<T>>(self) -> bool {
        true
    }

    /// A view field written as `V`, stored as `stored`, reads this field
    /// (checked by [`view_reads_stored_name`]).
    pub const fn viewed_as<V: ViewFieldOf<T>>(self, stored: &str) -> bool {
        str_eq(self.0.path(), stored)
    }
}

/// A view field has the type of the document's field of the same name.
#[diagnostic::on_unimplemented(
    message = "a view field has the type of its document's field: `{Self}` here, `{T}` in the document",
    label = "the document's field is `{T}`",
    note = "write the view field as `{T}`"
)]
pub trait ViewFieldOf<T> {}
impl<T> ViewFieldOf<T> for T {}

/// `via` leads to the document a copy is taken from.
#[diagnostic::on_unimplemented(
    message = "`via` leads to `{Self}`, but the copy is taken from `{S}`",
    label = "this reference leads to `{Self}`",
    note = "name a `#[reference(to = {S})]` or `#[parent_ref(to = {S})]` field with `via`, or copy a field of `{Self}`"
)]
pub trait LeadsTo<S> {}
impl<T> LeadsTo<T> for T {}

/// A reference to `V` leads to `S`.
pub const fn leads_to<V: LeadsTo<S>, S>() -> bool {
    true
}

/// A reference holds its target's `_id` type.
#[diagnostic::on_unimplemented(
    message = "a reference holds the `_id` type of its target: this field holds `{Self}`, the target's `_id` is `{I}`",
    label = "the target's `_id` is `{I}`",
    note = "write the ids as `{I}` (in a `Vec` or `Option` as the relationship needs)"
)]
pub trait IdOf<I> {}
impl<I> IdOf<I> for I {}

/// A reference holding `H` refers to documents whose `_id` is `I`.
pub const fn holds_id<H: IdOf<I>, I>() -> bool {
    true
}

/// A check the derive computes when the program is compiled, read as a
/// trait bound: a failed one is an error in words at the user's tokens, not
/// a panic of `const` evaluation.
pub struct Verdict<const OK: bool>;

/// A view field reads the stored field of the document's field of its name.
#[diagnostic::on_unimplemented(
    message = "a view reads its document's stored names, and `{D}` stores this field under another name than `{V}` reads",
    label = "stored under another name in `{D}`",
    note = "give this field of `{V}` the `#[serde(rename = ..)]` its field in `{D}` has (or none if it has none)"
)]
pub trait ViewReadsStoredName<V, D> {}
impl<V, D> ViewReadsStoredName<V, D> for Verdict<true> {}

/// The view `V` of `D` reads its field under the document's stored name.
pub const fn view_reads_stored_name<C: ViewReadsStoredName<V, D>, V, D>() -> bool {
    true
}

/// The links of a type whose derive failed.
pub const STUB_LINKS: &[FieldInfo] =
    &[FieldInfo { rust: "", bson: "", rust_type: "", kind: LinkKind::Stub, target: None }];

/// What `inverse = rust` finds on a document with `links`, for a reference
/// declared on collection `back_to`: `0` a reference back (ids or single),
/// `1` no such stored field, `2` not a reference, `3` a reference to another
/// collection, `4` an array of `{id, ..}` structs.
pub const fn inverse_check(links: &[FieldInfo], rust: &str, back_to: &str) -> u8 {
    let mut i = 0;
    while i < links.len() {
        let link = &links[i];
        if matches!(link.kind, LinkKind::Stub) {
            return 0;
        }
        if str_eq(link.rust, rust) {
            return match (link.kind, link.target) {
                (LinkKind::Plain, _) | (_, None) => 2,
                (_, Some(target)) if !str_eq(target, back_to) => 3,
                (LinkKind::Structs, _) => 4,
                _ => 0,
            };
        }
        i += 1;
    }
    1
}

/// The stored name of the field of a document with `links` that `name`
/// names, by its stored name or else its Rust name (a `sort` or `key` of a
/// subset: `_id` or `id`); `""` when none does, which [`names_field`] checks.
pub const fn field_named(links: &[FieldInfo], name: &str) -> &'static str {
    match find_link(links, name, true) {
        Some(i) => links[i].bson,
        None => link_path(links, name),
    }
}

/// Whether `name` names a field of a document with `links` (see
/// [`field_named`]); a type whose derive failed names every one (its own
/// error is reported).
pub const fn names_field(links: &[FieldInfo], name: &str) -> bool {
    matches!(links.first(), Some(FieldInfo { kind: LinkKind::Stub, .. })) || !str_eq(field_named(links, name), "")
}

/// The stored name of the field `rust` of a document with `links` (`""` when
/// it has none: a check reports that).
pub const fn link_path(links: &[FieldInfo], rust: &str) -> &'static str {
    match find_link(links, rust, false) {
        Some(i) => links[i].bson,
        None => "",
    }
}

/// The index of the field of `links` whose stored name (`stored`) or Rust
/// name is `name`.
const fn find_link(links: &[FieldInfo], name: &str, stored: bool) -> Option<usize> {
    let mut i = 0;
    while i < links.len() {
        if str_eq(if stored { links[i].bson } else { links[i].rust }, name) {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// Whether the field `rust` of a document with `links` is an array of references.
pub const fn link_is_array(links: &[FieldInfo], rust: &str) -> bool {
    match find_link(links, rust, false) {
        Some(i) => matches!(links[i].kind, LinkKind::Ids | LinkKind::Structs),
        None => false,
    }
}
