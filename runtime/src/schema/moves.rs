//! The moves a program declares: `#[document(moved_from = Post::comments)]`
//! says a type's documents were the elements of another type's embedded
//! array in the previous version of the program. The derive registers one
//! [`Move`] per declaration; [`crate::schema::export`] carries them, and
//! `docrel schema diff` plans them on live data.

/// What kind of change of pattern a move is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MoveKind {
    /// An embedded array becomes documents of their own collection, each
    /// with a parent reference (one-to-few → one-to-many/squillions).
    EmbedToCollection,
    /// One document of another collection, referring to its parent, becomes
    /// a struct embedded in the parent (one-to-one referenced → embedded):
    /// the way back of an embedded document moved out.
    ReferencedToEmbedded,
    /// An embedded array becomes bucket documents of the same parent
    /// (one-to-few → the bucket pattern): by count, page `k` holds the
    /// array's elements `[(k-1)·size, k·size)`; by time, a window's
    /// buckets hold its elements in array order, `size` each.
    EmbedToBuckets,
}

impl MoveKind {
    /// Whether it moves documents back into their parents
    /// ([`MoveKind::ReferencedToEmbedded`]): the documents are the old
    /// shape and the parents' field the new one, where every other move
    /// has it the other way.
    pub fn is_back(self) -> bool {
        self == MoveKind::ReferencedToEmbedded
    }

    /// The change of pattern in the reference texts' words.
    pub fn describe(self) -> &'static str {
        match self {
            MoveKind::EmbedToCollection => "embedded array → documents of their own with a parent reference",
            MoveKind::ReferencedToEmbedded => "one-to-one referenced document → embedded in its parent",
            MoveKind::EmbedToBuckets => "embedded array → bucket documents, by count or by time window",
        }
    }
}

/// One declared move (the derive writes these; users read them). `from`
/// is always the parents' side (the field) and `to` the documents' side,
/// whichever is old: a move back ([`MoveKind::ReferencedToEmbedded`]) goes
/// from `to` into `from`.
#[derive(Debug)]
pub struct Move {
    /// The change of pattern.
    pub kind: MoveKind,
    /// The collection whose documents hold the field (`posts`).
    pub from_collection: &'static str,
    /// The Rust name of that document type (`Post`).
    pub from_type: &'static str,
    /// The field's Rust name (`comments`): in the old version, whose stored
    /// name is read from the stored schema when the move is planned; for a
    /// move back, in this one.
    pub from_rust_field: &'static str,
    /// The collection of the documents (`comments`).
    pub to_collection: &'static str,
    /// The Rust name of the new document type (`Comment`); empty for a
    /// move back, whose document type is the old version's.
    pub to_type: &'static str,
    /// The stored name of the new type's parent reference (`post`), filled
    /// with the old parent's `_id`; empty for a move back, whose parent
    /// reference the plan reads from the old type in the stored schema.
    pub parent_field: &'static str,
    /// The module declaring the new type.
    pub module: &'static str,
    /// Where the elements go in a bucket document
    /// ([`MoveKind::EmbedToBuckets`]); `None` for every other kind.
    pub buckets: Option<MovedBuckets>,
}

/// The fields of the bucket documents a move into buckets fills (their
/// stored names) and the elements each holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MovedBuckets {
    /// The bucket array (`comments`).
    pub field: &'static str,
    /// The page number, from 1 (`page`).
    pub page: &'static str,
    /// The number of elements the page holds (`count`).
    pub count: &'static str,
    /// Elements per page (per bucket of a window, for time buckets).
    pub size: u32,
    /// The window start (`start`), for time buckets; empty otherwise.
    pub start: &'static str,
    /// The window length in milliseconds, for time buckets.
    pub window_ms: Option<i64>,
    /// The elements' time field (`by = t`), for time buckets; empty
    /// otherwise. Its stored name is its Rust name.
    pub by: &'static str,
}

/// One registered move (generated code submits these).
#[derive(Debug)]
pub struct RegisteredMove(pub &'static Move);

inventory::collect!(RegisteredMove);

/// Every move declared by a type linked into the program.
///
/// ```
/// #[derive(docrel::Document, serde::Serialize, serde::Deserialize)]
/// #[document(collection = "posts")]
/// struct Post { #[serde(rename = "_id")] id: i64, title: String }
///
/// #[derive(docrel::Document, serde::Serialize, serde::Deserialize)]
/// #[document(collection = "comments", moved_from = Post::comments)]
/// struct Comment {
///     #[serde(rename = "_id")] id: i64,
///     #[parent_ref(to = Post)] post: i64,
///     text: String,
/// }
///
/// let m = docrel::schema::moves::declared().find(|m| m.to_collection == "comments").unwrap();
/// assert_eq!((m.from_collection, m.from_rust_field, m.parent_field), ("posts", "comments", "post"));
/// ```
pub fn declared() -> impl Iterator<Item = &'static Move> {
    inventory::iter::<RegisteredMove>.into_iter().map(|r| r.0).filter(|m| crate::schema::registry::linked(m.module))
}
