#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "kits")]
struct Kit {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[embed(max = 20, allow_unbounded)]
    notes: Vec<String>,
    #[reference(many, to = Part, max = 50, allow_unbounded)]
    parts: Vec<ObjectId>,
}

fn main() {}
