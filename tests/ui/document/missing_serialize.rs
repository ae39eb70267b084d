#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Deserialize)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "kits")]
struct Kit {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = Part, max = 10)]
    parts: Vec<ObjectId>,
}

fn main() {
    let _ = Part::fields().name;
}
