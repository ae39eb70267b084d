//! Stored types turned into the descriptors the runtime acts on, for the
//! collections this program does not link: the rules are the same, by
//! stored name and path, whichever program declared them.
//!
//! The runtime keeps descriptors for the life of the process (the schema
//! graph hands out `&'static` references to them), so these are allocated
//! once per stored schema this process obeys, and never freed: a process
//! obeys a handful of schema versions in its life.

use super::form::{on_delete_of, Key, StoredKind, StoredType};
use crate::schema::document::{
    BucketSpec, ElemCopy, ElemRef, FieldCopy, FieldInfo, IndexCollation, IndexSpec, LinkKind, PartialFilter, Relation,
    RelationKind, Schema, SubsetSpec,
};
use std::time::Duration;

fn text(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}

fn opt(s: &Option<String>) -> Option<&'static str> {
    s.as_deref().map(text)
}

fn slice<T>(v: Vec<T>) -> &'static [T] {
    Box::leak(v.into_boxed_slice())
}

fn keys(k: &[Key]) -> &'static [(&'static str, i32)] {
    slice(k.iter().map(|(f, d)| (text(f), *d)).collect())
}

/// The descriptor of a stored type. Its advice is empty: rules of thumb
/// are the declaring program's compile-time business.
pub(crate) fn schema(t: &StoredType) -> &'static Schema {
    Box::leak(Box::new(Schema {
        rust_name: text(&t.rust_name),
        module: text(&t.module),
        collection: text(&t.collection),
        fields: slice(t.fields.iter().map(field).collect()),
        relations: slice(t.relations.iter().map(relation).collect()),
        indexes: slice(t.indexes.iter().map(index).collect()),
        copies: slice(
            t.copies
                .iter()
                .map(|c| FieldCopy {
                    field: text(&c.field),
                    source: text(&c.source),
                    source_type: text(&c.source_type),
                    source_field: text(&c.source_field),
                    via: text(&c.via),
                })
                .collect(),
        ),
        advice: &[],
        shard_key: slice(t.shard_key.iter().map(|s| text(s)).collect()),
    }))
}

fn index(i: &super::form::StoredIndex) -> IndexSpec {
    IndexSpec {
        keys: keys(&i.keys),
        unique: i.unique,
        text: slice(i.text.iter().map(|(f, w)| (text(f), *w)).collect()),
        name: opt(&i.name),
        sparse: i.sparse,
        expire_after: i.expire_after_seconds.map(Duration::from_secs),
        partial: i.partial.as_ref().map(|p| PartialFilter::Json(text(&p.to_string()))),
        collation: i.collation.as_ref().map(collation),
        default_language: opt(&i.default_language),
        language_override: opt(&i.language_override),
    }
}

/// A stored collation (`{"locale": "fr", "strength": 2}`), in the server's names.
fn collation(c: &serde_json::Value) -> IndexCollation {
    let s = |key: &str| c.get(key).and_then(serde_json::Value::as_str).map(text);
    let b = |key: &str| c.get(key).and_then(serde_json::Value::as_bool);
    IndexCollation {
        locale: s("locale").unwrap_or("simple"),
        strength: c.get("strength").and_then(serde_json::Value::as_u64).and_then(|v| u8::try_from(v).ok()),
        case_level: b("caseLevel"),
        case_first: s("caseFirst"),
        numeric_ordering: b("numericOrdering"),
        alternate: s("alternate"),
        max_variable: s("maxVariable"),
        normalization: b("normalization"),
        backwards: b("backwards"),
    }
}

fn field(f: &super::form::StoredField) -> FieldInfo {
    let kind = match f.kind.as_str() {
        "ids" => LinkKind::Ids,
        "structs" => LinkKind::Structs,
        "one" => LinkKind::One,
        "parent" => LinkKind::Parent,
        "plain" => LinkKind::Plain,
        _ => LinkKind::Stub,
    };
    FieldInfo { rust: text(&f.rust), bson: text(&f.bson), rust_type: text(&f.rust_type), kind, target: opt(&f.target) }
}

fn elem_copies(copies: &[super::form::StoredElemCopy]) -> &'static [ElemCopy] {
    slice(
        copies
            .iter()
            .map(|c| ElemCopy {
                field: text(&c.field),
                source: text(&c.source),
                source_type: text(&c.source_type),
                source_field: text(&c.source_field),
            })
            .collect(),
    )
}

/// The descriptor's kind of a stored kind (a `RefMany`'s key leaked, as
/// every name of a stored schema's descriptors is).
fn relation_kind(kind: &StoredKind) -> RelationKind {
    match kind {
        StoredKind::Embed { many, max } => RelationKind::Embed { many: *many, max: *max },
        StoredKind::RefMany { max, key } => RelationKind::RefMany { max: *max, key: opt(key) },
        StoredKind::RefOne { optional } => RelationKind::RefOne { optional: *optional },
        StoredKind::ParentRef => RelationKind::ParentRef,
        StoredKind::Bucket => RelationKind::Bucket,
    }
}

fn relation(r: &super::form::StoredRelation) -> Relation {
    Relation {
        field: text(&r.field),
        rust_field: text(&r.rust_field),
        kind: relation_kind(&r.kind),
        target: opt(&r.target),
        target_type: opt(&r.target_type),
        inverse: opt(&r.inverse),
        on_delete: on_delete_of(&r.on_delete),
        order: keys(&r.order),
        copies: elem_copies(&r.copies),
        elements: slice(
            r.elements
                .iter()
                .map(|e| ElemRef {
                    field: text(&e.field),
                    rust_field: text(&e.rust_field),
                    target: text(&e.target),
                    target_type: text(&e.target_type),
                    optional: e.optional,
                    on_delete: on_delete_of(&e.on_delete),
                    copies: elem_copies(&e.copies),
                })
                .collect(),
        ),
        subset: r.subset.as_ref().map(|s| SubsetSpec {
            child: text(&s.child),
            child_type: text(&s.child_type),
            sort: keys(&s.sort),
            keep_last: s.keep_last,
            key: opt(&s.key),
            fields: s.fields.as_ref().map(|f| slice(f.iter().map(|f| text(f)).collect())),
            max_bytes: s.max_bytes,
        }),
        bucket: r.bucket.as_ref().map(|b| BucketSpec {
            parent: text(&b.parent),
            count: text(&b.count),
            page: text(&b.page),
            start: text(&b.start),
            size: b.size,
            window_ms: b.window_ms,
            max_bytes: b.max_bytes,
            counter: b.counter,
            sum: opt(&b.sum),
        }),
        warn_above: r.warn_above,
    }
}
