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
#[document(collection = "kits")]
struct Kit {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[embed(max = 10)]
    parts: Vec<Part>,
    #[embed]
    main_part: Part,
}

fn main() {}
