//! A library crate that denies the lints libraries often deny: the code the
//! derives generate passes them, for every attribute family (embed,
//! references many and one, parent references with an order, copies at the
//! top level and in elements, a subset, buckets by count and by time, a
//! two-way reference, views, a shard key). The clippy lints are checked by
//! clippy, which builds this file as well.
#![deny(
    unused_qualifications,
    unreachable_patterns,
    missing_docs,
    unsafe_code,
    unused_results,
    unused_imports,
    unused_extern_crates,
    trivial_casts,
    trivial_numeric_casts,
    clippy::all
)]

use docrel::bson::oid::ObjectId;
use docrel::bson::DateTime;
use docrel::{Document, Embedded, View};
use serde::{Deserialize, Serialize};

/// An address, embedded.
#[derive(Serialize, Deserialize)]
pub struct Address {
    /// The street.
    pub street: String,
}

/// A part.
#[derive(Document, Serialize, Deserialize)]
#[document(collection = "strict_parts")]
pub struct Part {
    /// The id.
    #[serde(rename = "_id")]
    pub id: ObjectId,
    /// The name.
    #[document(index)]
    pub name: String,
    /// The part number.
    #[document(unique)]
    #[serde(rename = "partNo")]
    pub partno: String,
    /// Often written.
    #[document(write_heavy)]
    pub qty: i32,
}

/// An element of `Product::parts`.
#[derive(Embedded, Serialize, Deserialize)]
pub struct PartRef {
    /// The part's id.
    pub id: ObjectId,
    /// A copy of the part's name.
    #[denormalize(from = Part::name)]
    pub name: String,
}

/// A product.
#[derive(Document, Serialize, Deserialize)]
#[document(collection = "strict_products")]
pub struct Product {
    /// The id.
    #[serde(rename = "_id")]
    pub id: ObjectId,
    /// The name.
    pub name: String,
    /// Where it is made.
    #[embed]
    pub address: Address,
    /// Tags.
    #[embed(max = 20)]
    pub tags: Vec<String>,
    /// Its parts, with a copy of each name.
    #[reference(many, to = Part, max = 100, on_delete = pull)]
    pub parts: Vec<PartRef>,
    /// Spare parts, by id.
    #[reference(many, to = Part, max = 10)]
    pub spares: Vec<ObjectId>,
    /// The main part.
    #[reference(to = Part, on_delete = pull)]
    pub main_part: Option<ObjectId>,
    /// A copy of the main part's name.
    #[denormalize(from = Part::name, via = main_part)]
    pub main_part_name: Option<String>,
    /// The five newest reviews.
    #[embed(max = 5, subset_of = Review, sort = "-published", key = id)]
    pub reviews: Vec<ReviewSummary>,
}

/// A review of a product.
#[derive(Document, Serialize, Deserialize)]
#[document(collection = "strict_reviews")]
pub struct Review {
    /// The id.
    #[serde(rename = "_id")]
    pub id: ObjectId,
    /// The product.
    #[parent_ref(to = Product, sort = "-published", on_delete = cascade)]
    pub product: ObjectId,
    /// A copy of the product's name.
    #[denormalize(from = Product::name, via = product)]
    pub product_name: String,
    /// When.
    pub published: DateTime,
    /// What it says.
    pub text: String,
}

/// What a product page shows of a review.
#[derive(View, Serialize, Deserialize)]
#[view(of = Review)]
pub struct ReviewSummary {
    /// The id.
    #[serde(rename = "_id")]
    pub id: ObjectId,
    /// When.
    pub published: DateTime,
    /// What it says.
    pub text: String,
}

/// A person, owning tasks (two-way).
#[derive(Document, Serialize, Deserialize)]
#[document(collection = "strict_people", shard_key(id))]
pub struct Person {
    /// The id.
    #[serde(rename = "_id")]
    pub id: ObjectId,
    /// Their tasks.
    #[reference(many, to = Task, inverse = owner, max = 100)]
    pub tasks: Vec<ObjectId>,
}

/// A task.
#[derive(Document, Serialize, Deserialize)]
#[document(collection = "strict_tasks")]
pub struct Task {
    /// The id.
    #[serde(rename = "_id")]
    pub id: ObjectId,
    /// Its owner.
    #[reference(to = Person, inverse = tasks, on_delete = pull)]
    pub owner: Option<ObjectId>,
}

/// A comment.
#[derive(Serialize, Deserialize)]
pub struct Comment {
    /// What it says.
    pub text: String,
}

/// A page of a product's comments.
#[derive(Document, Serialize, Deserialize)]
#[document(collection = "strict_comments")]
pub struct CommentPage {
    /// The id.
    #[serde(rename = "_id")]
    pub id: ObjectId,
    /// The product.
    #[parent_ref(to = Product)]
    pub product: ObjectId,
    /// The page number.
    pub page: i32,
    /// How many comments it holds.
    pub count: i32,
    /// The comments.
    #[bucket(size = 50)]
    pub comments: Vec<Comment>,
}

/// A reading.
#[derive(Serialize, Deserialize)]
pub struct Reading {
    /// When.
    pub time: DateTime,
    /// How warm.
    pub celsius: f64,
}

/// A day of a part's readings.
#[derive(Document, Serialize, Deserialize)]
#[document(collection = "strict_readings")]
pub struct ReadingDay {
    /// The id.
    #[serde(rename = "_id")]
    pub id: ObjectId,
    /// The part.
    #[parent_ref(to = Part)]
    pub part: ObjectId,
    /// The window's start.
    pub start: DateTime,
    /// How many readings it holds.
    pub count: i32,
    /// The readings.
    #[bucket(by = time, window = "day")]
    pub readings: Vec<Reading>,
}

/// A part's name and number, read with a projection.
#[derive(View, Deserialize)]
#[view(of = Part, crate = "docrel")]
pub struct PartName {
    /// The name.
    pub name: String,
    /// The part number.
    #[serde(rename = "partNo")]
    pub partno: String,
}

fn main() {
    let _ = (Product::fields().parts, Product::rels().parts, Task::rels().owner, ReadingDay::rels().readings);
}
