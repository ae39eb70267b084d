#![deny(deprecated)]
#[allow(unused_imports)]
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
#[document(collection = "categories")]
struct Category {
    #[serde(rename = "_id")]
    id: i32,
    #[reference(many, to = Book, inverse = categories, max = 500000, allow_large)]
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

fn main() {}
