//! Shapes users write: arrays that may be absent (`Option<Vec<T>>`), bounded
//! and checked when present, and a copy that is absent while its reference is.
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
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "products")]
struct Product {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[embed(max = 20)]
    tags: Option<Vec<String>>,
    #[embed(allow_unbounded)]
    notes: Option<Vec<String>>,
    #[reference(many, to = Part, max = 50)]
    parts: Option<Vec<ObjectId>>,
    #[reference(to = Part)]
    main_part: Option<ObjectId>,
    #[denormalize(from = Part::name, via = main_part)]
    main_part_name: Option<String>,
}

fn main() {
    let _ = (Product::fields().tags.path(), Product::rels().parts, Product::rels().main_part);
}
