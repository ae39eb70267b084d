//! The const constructors of the usual schema entries. The derive writes
//! most entries as a call of one of these rather than as a struct literal:
//! the fields every such entry has the same value in are written here once,
//! and rustc builds, checks and evaluates a call of a few arguments in a
//! crate of documents for less than a literal of every field (and reads
//! fewer tokens from the derive). The runtime's own tests build entries
//! with them too.

use crate::schema::document::{ElemRef, FieldInfo, LinkKind, OnDelete, Relation, RelationKind};

/// A stored field that refers to nothing (`LinkKind::Plain`).
pub const fn plain_field(rust: &'static str, bson: &'static str, rust_type: &'static str) -> FieldInfo {
    FieldInfo { rust, bson, rust_type, kind: LinkKind::Plain, target: None }
}

/// A stored field of another kind, or referring to `target`.
pub const fn link_field(
    rust: &'static str,
    bson: &'static str,
    rust_type: &'static str,
    kind: LinkKind,
    target: Option<&'static str>,
) -> FieldInfo {
    FieldInfo { rust, bson, rust_type, kind, target }
}

/// A reference (`RefOne`, `RefMany` of ids, `ParentRef`) to the documents of
/// `target` with no inverse, no `on_delete`, order or copies.
pub const fn ref_relation(
    field: &'static str,
    rust_field: &'static str,
    kind: RelationKind,
    target: &'static str,
    target_type: &'static str,
    warn_above: Option<u32>,
) -> Relation {
    Relation {
        field,
        rust_field,
        kind,
        target: Some(target),
        target_type: Some(target_type),
        inverse: None,
        on_delete: OnDelete::Nothing,
        order: &[],
        copies: &[],
        elements: &[],
        subset: None,
        bucket: None,
        warn_above,
    }
}

/// An embedded value or array that is no subset, whose elements hold
/// the references `elements`.
pub const fn embed_relation(
    field: &'static str,
    rust_field: &'static str,
    many: bool,
    max: Option<u32>,
    elements: &'static [ElemRef],
    warn_above: Option<u32>,
) -> Relation {
    Relation {
        field,
        rust_field,
        kind: RelationKind::Embed { many, max },
        target: None,
        target_type: None,
        inverse: None,
        on_delete: OnDelete::Nothing,
        order: &[],
        copies: &[],
        elements,
        subset: None,
        bucket: None,
        warn_above,
    }
}
