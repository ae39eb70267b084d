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
#[document(collection = "stock")]
struct Stock {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Part)]
    part: ObjectId,
    #[denormalize(from = Part::name, via = part)]
    part_name: String,
    #[denormalize(from = Part::qty, via = part)]
    part_qty: i32,
}

fn main() {}
