//! The stored form of the derives' descriptors: owned, serializable, and
//! the same whichever program wrote it, so two programs' parts of one
//! schema can be compared rule by rule.

use crate::schema::document::{
    BucketSpec, ElemCopy, ElemRef, FieldCopy, FieldInfo, IndexSpec, LinkKind, OnDelete, PartialFilter, Relation,
    RelationKind, Schema, SubsetSpec,
};
use serde::{Deserialize, Serialize};

/// The version of the stored form; a reader refuses one it does not know.
pub const FORMAT: u32 = 1;

/// A sort or index key: the stored field and its direction (`1` or `-1`).
pub type Key = (String, i32);

/// One document type, as stored: what every rule of derived data needs,
/// by stored names and paths (no Rust type is needed to obey it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredType {
    /// The collection.
    pub collection: String,
    /// The Rust type's name in the program that published it.
    pub rust_name: String,
    /// Its module path there.
    pub module: String,
    /// The stored fields, in declaration order.
    pub fields: Vec<StoredField>,
    /// The relationships declared on its fields.
    pub relations: Vec<StoredRelation>,
    /// The indexes it declares.
    pub indexes: Vec<StoredIndex>,
    /// Its top-level denormalized copies.
    pub copies: Vec<StoredCopy>,
    /// The stored names of its shard key, in order; empty when none.
    pub shard_key: Vec<String>,
}

/// One stored field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredField {
    /// The Rust name.
    pub rust: String,
    /// The stored name.
    pub bson: String,
    /// The Rust type, as written.
    pub rust_type: String,
    /// `plain`, `ids`, `structs`, `one` or `parent`.
    pub kind: String,
    /// The collection a reference refers to.
    pub target: Option<String>,
}

/// An index. The options after `unique` are left out when not declared,
/// and read as not declared from a schema stored before they existed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredIndex {
    /// The keys, in order (in a text index, those before the text keys).
    pub keys: Vec<Key>,
    /// Whether it is unique.
    pub unique: bool,
    /// The text keys and their weights.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub text: Vec<(String, u32)>,
    /// The declared name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Sparse.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sparse: bool,
    /// A TTL index's `expireAfterSeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expire_after_seconds: Option<u64>,
    /// A partial index's filter, as relaxed extended JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<serde_json::Value>,
    /// The collation, in the server's names (`{"locale": "fr", "strength": 2}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collation: Option<serde_json::Value>,
    /// A text index's language.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_language: Option<String>,
    /// A text index's language field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language_override: Option<String>,
}

/// A relationship, with every rule it carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredRelation {
    /// The stored name of its field.
    pub field: String,
    /// The Rust name of that field.
    pub rust_field: String,
    /// The pattern and its bound.
    pub kind: StoredKind,
    /// The collection referred to.
    pub target: Option<String>,
    /// The Rust name of the target type.
    pub target_type: Option<String>,
    /// The field of the other side of a two-way reference.
    pub inverse: Option<String>,
    /// `nothing`, `pull`, `cascade` or `restrict`.
    pub on_delete: String,
    /// A parent reference's default order.
    pub order: Vec<Key>,
    /// Copies inside the elements of a reference array.
    pub copies: Vec<StoredElemCopy>,
    /// The references each element of an embedded array holds; read as none
    /// from a schema stored before they existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub elements: Vec<StoredElemRef>,
    /// What a subset summarizes.
    pub subset: Option<StoredSubset>,
    /// How a bucket array is keyed and filled.
    pub bucket: Option<StoredBucket>,
    /// Rule 3's threshold.
    pub warn_above: Option<u32>,
}

/// The kind of a relationship.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "pattern", rename_all = "snake_case")]
pub enum StoredKind {
    /// `#[embed]`.
    Embed {
        /// An array rather than one struct.
        many: bool,
        /// Its bound.
        max: Option<u32>,
    },
    /// `#[reference(many)]`.
    RefMany {
        /// Its bound.
        max: Option<u32>,
        /// The id field of `{id, ..}` elements.
        key: Option<String>,
    },
    /// `#[reference]` to one document.
    RefOne {
        /// Whether it may be absent.
        optional: bool,
    },
    /// `#[parent_ref]`.
    ParentRef,
    /// `#[bucket]`.
    Bucket,
}

/// A top-level copy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredCopy {
    /// The stored name of the copy.
    pub field: String,
    /// The source collection.
    pub source: String,
    /// The source's Rust type name.
    pub source_type: String,
    /// The stored path of the source field.
    pub source_field: String,
    /// The reference holding the source's id.
    pub via: String,
}

/// A copy inside the elements of a reference array.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredElemCopy {
    /// The stored name inside the element.
    pub field: String,
    /// The source collection.
    pub source: String,
    /// The source's Rust type name.
    pub source_type: String,
    /// The stored path of the source field.
    pub source_field: String,
}

/// A reference inside the elements of an embedded array.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredElemRef {
    /// The stored name inside the element.
    pub field: String,
    /// Its Rust name.
    pub rust_field: String,
    /// The collection referred to.
    pub target: String,
    /// The Rust name of the target type.
    pub target_type: String,
    /// Whether it may be absent.
    pub optional: bool,
    /// `nothing`, `pull`, `cascade` or `restrict`.
    pub on_delete: String,
    /// The element's copies made through it.
    pub copies: Vec<StoredElemCopy>,
}

/// A subset's rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredSubset {
    /// The child collection.
    pub child: String,
    /// The child's Rust type name.
    pub child_type: String,
    /// The order of the summaries.
    pub sort: Vec<Key>,
    /// Keep the last N rather than the first.
    pub keep_last: bool,
    /// The field identifying a child in its summary.
    pub key: Option<String>,
    /// The child fields a summary holds.
    pub fields: Option<Vec<String>>,
    /// The size of one summary at most.
    pub max_bytes: Option<u32>,
}

/// A bucket's rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredBucket {
    /// The parent reference.
    pub parent: String,
    /// The element count.
    pub count: String,
    /// The page number.
    pub page: String,
    /// The window start.
    pub start: String,
    /// Elements per bucket.
    pub size: Option<u32>,
    /// The window, in milliseconds.
    pub window_ms: Option<i64>,
    /// The size of one element at most.
    pub max_bytes: Option<u32>,
    /// A counter bucket: counts (and sums) per window, no elements.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub counter: bool,
    /// A counter's sum field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum: Option<String>,
}

/// This program's part of the schema: every linked document type, in
/// stored form, ordered by collection.
pub fn program() -> Vec<StoredType> {
    crate::schema::registry::sorted().into_iter().map(StoredType::from).collect()
}

fn owned(s: &[&str]) -> Vec<String> {
    s.iter().map(|s| (*s).to_owned()).collect()
}

fn keys(k: &[(&str, i32)]) -> Vec<Key> {
    k.iter().map(|(f, d)| ((*f).to_owned(), *d)).collect()
}

fn opt(s: Option<&str>) -> Option<String> {
    s.map(str::to_owned)
}

impl From<&Schema> for StoredType {
    fn from(s: &Schema) -> Self {
        StoredType {
            collection: s.collection.to_owned(),
            rust_name: s.rust_name.to_owned(),
            module: s.module.to_owned(),
            fields: s.fields.iter().map(StoredField::from).collect(),
            relations: s.relations.iter().map(StoredRelation::from).collect(),
            indexes: s.indexes.iter().map(StoredIndex::from).collect(),
            copies: s.copies.iter().map(StoredCopy::from).collect(),
            shard_key: owned(s.shard_key),
        }
    }
}

impl From<&FieldInfo> for StoredField {
    fn from(f: &FieldInfo) -> Self {
        let kind = match f.kind {
            LinkKind::Plain => "plain",
            LinkKind::Ids => "ids",
            LinkKind::Structs => "structs",
            LinkKind::One => "one",
            LinkKind::Parent => "parent",
            LinkKind::Stub => "unknown",
        };
        StoredField {
            rust: f.rust.to_owned(),
            bson: f.bson.to_owned(),
            rust_type: f.rust_type.to_owned(),
            kind: kind.to_owned(),
            target: opt(f.target),
        }
    }
}

impl From<&IndexSpec> for StoredIndex {
    fn from(i: &IndexSpec) -> Self {
        let json = |d: mongodb::bson::Document| crate::bson_compat::relaxed_json(&mongodb::bson::Bson::Document(d));
        StoredIndex {
            keys: keys(i.keys),
            unique: i.unique,
            text: i.text.iter().map(|(f, w)| ((*f).to_owned(), *w)).collect(),
            name: opt(i.name),
            sparse: i.sparse,
            expire_after_seconds: i.expire_after.map(|d| d.as_secs()),
            // A filter that is not valid extended JSON is stored as written:
            // `ensure_indexes` reports it.
            partial: i.partial.map(|p| match (p, p.document()) {
                (_, Ok(d)) => json(d),
                (PartialFilter::Json(text), Err(_)) => serde_json::Value::String(text.to_owned()),
                (PartialFilter::Build(_), Err(_)) => serde_json::Value::Null,
            }),
            collation: i.collation.map(|c| json(c.document())),
            default_language: opt(i.default_language),
            language_override: opt(i.language_override),
        }
    }
}

impl From<&Relation> for StoredRelation {
    fn from(r: &Relation) -> Self {
        let kind = match r.kind {
            RelationKind::Embed { many, max } => StoredKind::Embed { many, max },
            RelationKind::RefMany { max, key } => StoredKind::RefMany { max, key: opt(key) },
            RelationKind::RefOne { optional } => StoredKind::RefOne { optional },
            RelationKind::ParentRef => StoredKind::ParentRef,
            RelationKind::Bucket => StoredKind::Bucket,
        };
        StoredRelation {
            field: r.field.to_owned(),
            rust_field: r.rust_field.to_owned(),
            kind,
            target: opt(r.target),
            target_type: opt(r.target_type),
            inverse: opt(r.inverse),
            on_delete: on_delete_name(r.on_delete).to_owned(),
            order: keys(r.order),
            copies: r.copies.iter().map(StoredElemCopy::from).collect(),
            elements: r.elements.iter().map(StoredElemRef::from).collect(),
            subset: r.subset.as_ref().map(StoredSubset::from),
            bucket: r.bucket.as_ref().map(StoredBucket::from),
            warn_above: r.warn_above,
        }
    }
}

/// The stored name of a delete rule.
fn on_delete_name(rule: OnDelete) -> &'static str {
    match rule {
        OnDelete::Nothing => "nothing",
        OnDelete::Pull => "pull",
        OnDelete::Cascade => "cascade",
        OnDelete::Restrict => "restrict",
    }
}

/// The delete rule of a stored name; an unknown one is no rule.
pub(crate) fn on_delete_of(name: &str) -> OnDelete {
    match name {
        "pull" => OnDelete::Pull,
        "cascade" => OnDelete::Cascade,
        "restrict" => OnDelete::Restrict,
        _ => OnDelete::Nothing,
    }
}

impl From<&ElemRef> for StoredElemRef {
    fn from(r: &ElemRef) -> Self {
        StoredElemRef {
            field: r.field.to_owned(),
            rust_field: r.rust_field.to_owned(),
            target: r.target.to_owned(),
            target_type: r.target_type.to_owned(),
            optional: r.optional,
            on_delete: on_delete_name(r.on_delete).to_owned(),
            copies: r.copies.iter().map(StoredElemCopy::from).collect(),
        }
    }
}

impl From<&FieldCopy> for StoredCopy {
    fn from(c: &FieldCopy) -> Self {
        StoredCopy {
            field: c.field.to_owned(),
            source: c.source.to_owned(),
            source_type: c.source_type.to_owned(),
            source_field: c.source_field.to_owned(),
            via: c.via.to_owned(),
        }
    }
}

impl From<&ElemCopy> for StoredElemCopy {
    fn from(c: &ElemCopy) -> Self {
        StoredElemCopy {
            field: c.field.to_owned(),
            source: c.source.to_owned(),
            source_type: c.source_type.to_owned(),
            source_field: c.source_field.to_owned(),
        }
    }
}

impl From<&SubsetSpec> for StoredSubset {
    fn from(s: &SubsetSpec) -> Self {
        StoredSubset {
            child: s.child.to_owned(),
            child_type: s.child_type.to_owned(),
            sort: keys(s.sort),
            keep_last: s.keep_last,
            key: opt(s.key),
            fields: s.fields.map(owned),
            max_bytes: s.max_bytes,
        }
    }
}

impl From<&BucketSpec> for StoredBucket {
    fn from(b: &BucketSpec) -> Self {
        StoredBucket {
            parent: b.parent.to_owned(),
            count: b.count.to_owned(),
            page: b.page.to_owned(),
            start: b.start.to_owned(),
            size: b.size,
            window_ms: b.window_ms,
            max_bytes: b.max_bytes,
            counter: b.counter,
            sum: opt(b.sum),
        }
    }
}
