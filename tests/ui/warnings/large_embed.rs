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
#[document(collection = "hosts")]
struct Host {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[embed(max = 1000)]
    logmsgs: Vec<String>,
    #[embed(max = 50, warn_above = 20)]
    tags: Vec<String>,
}

fn main() {}
