//! The moves of a program as exported: what `docrel schema diff` plans. A
//! move never enters the stored types (publishing a program that declares
//! one changes no rule); it reaches the database only through the change
//! that runs it.

use super::old_array::OldArray;
use crate::schema::moves::{Move, MoveKind};
use serde::{Deserialize, Serialize};

/// One end of a move: a collection and the Rust names of its type (and, at
/// the old end, of the array).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoveEnd {
    /// The collection.
    pub collection: String,
    /// The Rust type's name.
    pub rust_type: String,
    /// The array's Rust field name, at the old end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rust_field: Option<String>,
}

/// A declared move, as [`crate::schema::export`] writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredMove {
    /// A stable name for the move: a hash of its kind and ends.
    pub id: String,
    /// The change of pattern.
    pub kind: MoveKind,
    /// Where the elements are (`posts`, `Post`, `comments`).
    pub from: MoveEnd,
    /// Where they go (`comments`, `Comment`).
    pub to: MoveEnd,
    /// The stored name of the new documents' parent reference.
    pub parent_field: String,
    /// The stored field identifying an element, which becomes the new
    /// document's `_id`.
    pub key: String,
    /// The bucket documents' fields, for a move into buckets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buckets: Option<StoredBuckets>,
}

/// Where a move into buckets puts the elements: the stored names of the
/// bucket document's array, page number and element count, and how many
/// elements a page holds. Page `k` (from 1) holds the array's elements
/// `[(k-1)·size, k·size)`, so the pages are a function of the array.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredBuckets {
    /// The bucket array (`comments`).
    pub field: String,
    /// The page number (`page`).
    pub page: String,
    /// The page's element count (`count`).
    pub count: String,
    /// Elements per page (per bucket of a window, for time buckets).
    pub size: u32,
    /// The window start, for time buckets (`start`): a window's buckets
    /// hold its elements in array order, the first without a page number
    /// and the next ones numbered 2, 3, ..
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub start: String,
    /// The window length in milliseconds, for time buckets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_ms: Option<i64>,
    /// The elements' time field, for time buckets.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub by: String,
}

impl From<&Move> for StoredMove {
    fn from(m: &Move) -> Self {
        let kind = serde_json::to_string(&m.kind).unwrap_or_default();
        let id = format!(
            "{:016x}",
            crate::schema::document::field_key(&format!(
                "{kind}|{}.{}|{}",
                m.from_collection, m.from_rust_field, m.to_collection
            ))
        );
        StoredMove {
            id,
            kind: m.kind,
            from: MoveEnd {
                collection: m.from_collection.to_owned(),
                rust_type: m.from_type.to_owned(),
                rust_field: Some(m.from_rust_field.to_owned()),
            },
            to: MoveEnd { collection: m.to_collection.to_owned(), rust_type: m.to_type.to_owned(), rust_field: None },
            parent_field: m.parent_field.to_owned(),
            key: "_id".to_owned(),
            buckets: m.buckets.map(|b| StoredBuckets {
                field: b.field.to_owned(),
                page: b.page.to_owned(),
                count: b.count.to_owned(),
                size: b.size,
                start: b.start.to_owned(),
                window_ms: b.window_ms,
                by: b.by.to_owned(),
            }),
        }
    }
}

impl StoredMove {
    /// The stages making the new documents out of parents holding the
    /// array `field` (its stored name): each element becomes a document
    /// whose `_id` is its key and whose parent reference is its parent's
    /// `_id`. The copy writes what they make; a read before the switch
    /// reads it. One embedded document (`old` is [`OldArray::One`]) is
    /// unwound as one element (`$unwind` takes a document so) whose `_id`
    /// is its parent's.
    pub(crate) fn unwound(&self, field: &str, old: OldArray) -> [mongodb::bson::Document; 3] {
        use mongodb::bson::doc;
        let element = format!("${field}");
        let id = match old {
            OldArray::One => "$_id".to_owned(),
            OldArray::Elements | OldArray::Ids => format!("{element}.{}", self.key),
        };
        [
            doc! {"$project": {field: 1}},
            doc! {"$unwind": &element},
            doc! {"$replaceRoot": {"newRoot": {"$mergeObjects": [
                &element,
                {"_id": id, &self.parent_field: "$_id"},
            ]}}},
        ]
    }

    /// `posts.comments → comments` (a move back: `addresses →
    /// patrons.address`), for messages.
    pub fn label(&self) -> String {
        if self.kind.is_back() {
            let field = self.from.rust_field.as_deref().unwrap_or("?");
            return format!("{} → {}.{field}", self.to.collection, self.from.collection);
        }
        format!("{}.{} → {}", self.from.collection, self.from.rust_field.as_deref().unwrap_or("?"), self.to.collection)
    }
}

/// The moves this program declares, ordered by their ends.
pub fn program_moves() -> Vec<StoredMove> {
    let mut out: Vec<StoredMove> = crate::schema::moves::declared().map(StoredMove::from).collect();
    out.sort_by(|a, b| (&a.from.collection, &a.to.collection).cmp(&(&b.from.collection, &b.to.collection)));
    out
}

/// The format of an export that declares moves; one without keeps
/// [`super::form::FORMAT`], so an older docrel refuses a program with moves
/// rather than taking the new collection for a new type.
pub const MOVES_FORMAT: u32 = 2;

/// A program's export, read back: its types and the moves it declares.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exported {
    /// The document types.
    pub types: Vec<super::form::StoredType>,
    /// The moves, empty for a format 1 export.
    pub moves: Vec<StoredMove>,
}

/// Reads what [`crate::schema::export`] wrote; the error says what is wrong.
///
/// ```
/// let read = docrel::schema::stored::read_export(&docrel::schema::export()).unwrap();
/// assert!(read.moves.is_empty());
/// ```
pub fn read_export(text: &str) -> std::result::Result<Exported, String> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let format = value["format"].as_u64();
    if format != Some(u64::from(super::form::FORMAT)) && format != Some(u64::from(MOVES_FORMAT)) {
        return Err(format!(
            "format {} where this docrel reads {} or {MOVES_FORMAT}",
            value["format"],
            super::form::FORMAT
        ));
    }
    let types = serde_json::from_value(value["types"].clone()).map_err(|e| format!("not an exported schema: {e}"))?;
    let moves = match value.get("moves") {
        None => Vec::new(),
        Some(m) => serde_json::from_value(m.clone()).map_err(|e| format!("its moves are not readable: {e}"))?,
    };
    Ok(Exported { types, moves })
}
