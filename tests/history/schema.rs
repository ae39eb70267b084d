//! The schemas the histories run on, small versions of the examples:
//!
//! - catalog (`examples/catalog.rs`): products list their parts as
//!   `[{id, pname, qty, label}]` (copies of `Part::name`, `Part::qty` and
//!   the optional `Part::label`, so that `$inc`, `$min`/`$max` and
//!   `$unset` of a source fan out), parts keep `productName` (a copy of
//!   `Product::name` via `product`);
//! - tasks (`examples/tasks.rs`): `people.tasks` two-way with `tasks.owner`,
//!   and `tasks.owner_name` copied from `Person::name` via `owner`; a task
//!   embeds up to 3 notes, each referring to the person who wrote it
//!   (`notes[].who`, pulled when that person is deleted) with a copy of
//!   their name (`notes[].by_name`, a reference inside an element);
//! - reviews (`examples/reviews.rs`): an item keeps the 4 newest of its
//!   reviews, keyed by `rid`;
//! - blog (`examples/blog.rs`): comments in pages of 3.
//!
//! Bounds are small so that histories reach them. Four fields are renamed
//! with `#[serde(rename)]` (a known bug area): the copies `pname` and
//! `productName`, the subset key `rid`, and the reference inside the notes
//! `who` (the key every fan-out, fill and pull of the notes filters on).
//!
//! The checker (`check.rs`) does not read these declarations: it knows the
//! stored names below by heart, so a macro or runtime that gets a name wrong
//! cannot agree with itself and pass.

use docrel::bson::{oid::ObjectId, DateTime};
use docrel::{Document, Embedded, View};
use serde::{Deserialize, Serialize};

/// Bound of `products.parts`.
pub const PARTS_MAX: usize = 6;
/// Bound of `people.tasks`.
pub const TASKS_MAX: usize = 3;
/// Bound of `tasks.notes`.
pub const NOTES_MAX: usize = 3;
/// Size of the subset `items.reviews`.
pub const SUBSET_MAX: usize = 4;
/// Size of the subset `items.newest`.
pub const NEWEST_MAX: usize = 3;
/// Comments per page of `comment_pages`.
pub const PAGE_SIZE: usize = 3;

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[document(collection = "parts")]
pub struct Part {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
    /// Deleting the product deletes its parts.
    #[reference(to = Product, on_delete = cascade)]
    pub product: ObjectId,
    #[denormalize(from = Product::name, via = product)]
    #[serde(rename = "productName")]
    pub product_name: String,
    pub qty: i32,
    /// Absent or null until labelled; `$unset` and `$rename` take it away.
    #[serde(default)]
    pub label: Option<String>,
}

/// An element of `products.parts`: the part's id and copies of its name,
/// quantity and label.
#[derive(Embedded, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct PartRef {
    pub id: ObjectId,
    #[denormalize(from = Part::name)]
    #[serde(rename = "pname")]
    pub name: String,
    #[denormalize(from = Part::qty)]
    pub qty: i32,
    #[serde(default)]
    #[denormalize(from = Part::label)]
    pub label: Option<String>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[document(collection = "products")]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
    /// Deleting a part pulls it from every product.
    #[reference(many, to = Part, max = 6, on_delete = pull)]
    pub parts: Vec<PartRef>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[document(collection = "people")]
pub struct Person {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
    /// Deleting a task pulls it from its person.
    #[reference(many, to = Task, inverse = owner, max = 3, on_delete = pull)]
    pub tasks: Vec<ObjectId>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[document(collection = "tasks")]
pub struct Task {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub description: String,
    /// A person who still owns tasks cannot be deleted.
    #[reference(to = Person, inverse = tasks, on_delete = restrict)]
    pub owner: Option<ObjectId>,
    #[denormalize(from = Person::name, via = owner)]
    pub owner_name: String,
    #[embed(max = 3)]
    #[serde(default)]
    pub notes: Vec<Note>,
}

/// An element of `tasks.notes`: who wrote it (a reference inside the
/// element, stored as `who`) and a copy of their name.
#[derive(Embedded, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Note {
    pub text: String,
    /// Deleting the person pulls their notes from every task.
    #[reference(to = Person, on_delete = pull)]
    #[serde(rename = "who")]
    pub by: ObjectId,
    #[denormalize(from = Person::name, via = by)]
    pub by_name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[document(collection = "items")]
pub struct Item {
    #[serde(rename = "_id")]
    pub id: i32,
    pub name: String,
    #[embed(max = 4, subset_of = Review, sort = "-published_date", key = review_id, max_bytes = 400)]
    pub reviews: Vec<ReviewSummary>,
    /// The newest three again, by `_id` and without a byte bound: a rename
    /// of a reviewer rewrites their name here in place (issue 40), where
    /// `reviews` is rebuilt.
    #[embed(max = 3, subset_of = Review, sort = "-published_date")]
    #[serde(default)]
    pub newest: Vec<ReviewLine>,
}

/// A review as `items.newest` keeps it.
#[derive(View, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[view(of = Review)]
pub struct ReviewLine {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub published_date: DateTime,
    #[serde(default)]
    pub reviewer_name: Option<String>,
}

/// A review as its item keeps it.
#[derive(View, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[view(of = Review)]
pub struct ReviewSummary {
    #[serde(rename = "rid")]
    pub review_id: i32,
    pub author: String,
    pub text: String,
    pub published_date: DateTime,
    /// The reviewer's name, a copy the summary carries.
    #[serde(default)]
    pub reviewer_name: Option<String>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[document(collection = "reviews")]
pub struct Review {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[document(unique)]
    #[serde(rename = "rid")]
    pub review_id: i32,
    /// Deleting the item deletes its reviews.
    #[parent_ref(to = Item, sort = "-published_date", on_delete = cascade)]
    pub product_id: i32,
    pub author: String,
    pub text: String,
    pub published_date: DateTime,
    /// A copy of the item's name: on MongoDB 8.0+ an `insert_many` of
    /// reviews confirms it with the guarded pushes into the items' subsets.
    #[denormalize(from = Item::name, via = product_id)]
    #[serde(default)]
    pub item_name: String,
    /// Who wrote it, as a person: deleting them pulls the reference and
    /// its copy, which the item's subset summary carries (a pull reaching
    /// summaries, issue 38), and renaming them rewrites the copy in the
    /// reviews of many items (their subsets rebuilt together, issue 40).
    #[reference(to = Person, on_delete = pull)]
    #[serde(default)]
    pub reviewer: Option<ObjectId>,
    #[denormalize(from = Person::name, via = reviewer)]
    #[serde(default)]
    pub reviewer_name: Option<String>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[document(collection = "posts")]
pub struct Post {
    #[serde(rename = "_id")]
    pub id: i32,
    pub title: String,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Comment {
    pub name: String,
    pub text: String,
}

/// One page of up to 3 comments of a post.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[document(collection = "comment_pages")]
pub struct CommentPage {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    /// Deleting the post deletes its pages.
    #[parent_ref(to = Post, on_delete = cascade)]
    pub blog_entry_id: i32,
    pub page: i32,
    pub count: i32,
    #[bucket(size = 3)]
    pub comments: Vec<Comment>,
}
