//! What a move's old field holds (elements, one document, or ids), which
//! decides how its two shapes are kept equal and how every server stage
//! reads the old shape.

use super::form::StoredKind;
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use serde::{Deserialize, Serialize};

/// What a move's old array holds, which decides how its two shapes are
/// kept equal.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OldArray {
    /// The elements themselves (`#[embed]`): each becomes a document of the
    /// new collection, with its parent reference (one-to-few → one-to-many).
    #[default]
    Elements,
    /// The ids of documents of the new collection (`#[reference(many)]`):
    /// each of them gets its parent reference, and the array is retired
    /// (one-to-many → one-to-squillions).
    Ids,
    /// One embedded document (`#[embed]` on a struct, not a `Vec`): it
    /// becomes the one document of the new collection whose `_id` is its
    /// parent's (one-to-one embedded → referenced). Every stage reads it
    /// as an array of that one element.
    One,
}

impl OldArray {
    /// Whether it is [`OldArray::Elements`] (what an older `$moves` meant).
    pub fn is_elements(&self) -> bool {
        *self == OldArray::Elements
    }

    /// What a field of rule `kind` holds, if a move can take it: an
    /// embedded array, one embedded document, or an array of plain ids.
    pub fn of(kind: &StoredKind) -> Option<OldArray> {
        match kind {
            StoredKind::Embed { many: true, .. } => Some(OldArray::Elements),
            StoredKind::Embed { many: false, .. } => Some(OldArray::One),
            StoredKind::RefMany { key: None, .. } => Some(OldArray::Ids),
            _ => None,
        }
    }

    /// The bound a field of rule `kind` holding this keeps while both
    /// shapes are kept: its declared one, and one for one document.
    pub fn bound(self, kind: &StoredKind) -> Option<u32> {
        match (self, kind) {
            (OldArray::One, _) => Some(1),
            (_, StoredKind::Embed { max, .. } | StoredKind::RefMany { max, .. }) => *max,
            _ => None,
        }
    }

    /// The condition on a parent that holds something in `field`: an
    /// element, or a document.
    pub fn holding(self, field: &str) -> BsonDoc {
        match self {
            OldArray::One => doc! {field: {"$type": "object"}},
            OldArray::Elements | OldArray::Ids => doc! {format!("{field}.0"): {"$exists": true}},
        }
    }

    /// The expression counting what a parent [`holding`](Self::holding)
    /// something holds in `field` (a literal for one document: a plain 1
    /// in a projection would include a field `n`).
    pub fn size(self, field: &str) -> Bson {
        match self {
            OldArray::One => Bson::Document(doc! {"$literal": 1}),
            OldArray::Elements | OldArray::Ids => Bson::Document(doc! {"$size": format!("${field}")}),
        }
    }
}
