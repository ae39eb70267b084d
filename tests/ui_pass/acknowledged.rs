//! Every rule of thumb broken on purpose and acknowledged: no warning.
#![deny(warnings)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    #[document(write_heavy)]
    qty: i32,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "kits")]
struct Kit {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[embed(allow_unbounded)]
    notes: Vec<String>,
    #[embed(max = 1000, allow_large)]
    log: Vec<String>,
    #[embed(max = 300, warn_above = 500)]
    lines: Vec<String>,
    #[embed(allow_document)]
    main_part: Part,
    #[reference(many, to = Part, allow_unbounded)]
    parts: Vec<ObjectId>,
    #[reference(many, to = Part, max = 100000, allow_large)]
    spares: Vec<ObjectId>,
    #[reference(to = Part)]
    part: ObjectId,
    #[denormalize(from = Part::qty, via = part, allow_write_heavy)]
    part_qty: i32,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "categories")]
struct Category {
    #[serde(rename = "_id")]
    id: i32,
    #[reference(many, to = Book, inverse = categories, max = 500000, allow_large, allow_two_way)]
    books: Vec<i32>,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "books")]
struct Book {
    #[serde(rename = "_id")]
    id: i32,
    #[reference(many, to = Category, inverse = books, max = 3)]
    categories: Vec<i32>,
}

fn main() {
    let _ = (Kit::fields(), Category::fields(), Book::fields());
}
