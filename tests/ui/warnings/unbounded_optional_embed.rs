#![deny(deprecated)]
#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "patrons")]
struct Patron {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[embed]
    addresses: Option<Vec<String>>,
}

fn main() {}
