//! `sort` and `key` take a field's stored name or its Rust name, on a
//! parent reference and in a subset alike: `-_id` and `-id`, `pubDate` and
//! `published`.
#![deny(warnings)]
use docrel::bson::oid::ObjectId;
use docrel::bson::DateTime;
use docrel::{Document, View};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "shelves")]
struct Shelf {
    #[serde(rename = "_id")]
    id: i32,
    #[embed(max = 3, subset_of = Book, sort = "-_id", key = _id)]
    newest: Vec<BookSummary>,
    #[embed(max = 3, subset_of = Book, sort = "pubDate, -id", key = id)]
    first_published: Vec<BookSummary>,
    #[embed(max = 3, subset_of = Book, sort = "-published, title")]
    last_published: Vec<BookSummary>,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "books")]
struct Book {
    #[serde(rename = "_id")]
    id: i32,
    #[parent_ref(to = Shelf, sort = "-_id")]
    shelf: i32,
    #[serde(rename = "pubDate")]
    published: DateTime,
    title: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "notes")]
struct Note {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Book, sort = "published, -id")]
    book: i32,
    #[serde(rename = "at")]
    published: DateTime,
}

#[derive(View, Serialize, Deserialize)]
#[view(of = Book)]
struct BookSummary {
    #[serde(rename = "_id")]
    id: i32,
    #[serde(rename = "pubDate")]
    published: DateTime,
    title: String,
}

fn main() {
    let _ = (Shelf::rels().newest, Book::rels().shelf, Note::rels().book);
}
