#![deny(deprecated)]
#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

use docrel::Embedded;

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    #[document(write_heavy)]
    qty: i32,
}

// The reference text's own example: a part's quantity copied into products.parts[].
#[derive(Embedded, Serialize, Deserialize)]
struct PartRef {
    id: ObjectId,
    #[denormalize(from = Part::name)]
    name: String,
    #[denormalize(from = Part::qty)]
    qty: i32,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "products")]
struct Product {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = Part, max = 100)]
    parts: Vec<PartRef>,
}

fn main() {}
