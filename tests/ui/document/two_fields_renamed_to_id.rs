#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

// Two fields stored as `_id`: one error, at the second.
#[derive(Document, Serialize, Deserialize)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[serde(rename = "_id")]
    partno: String,
    name: String,
}

fn main() {
    let _ = Part::fields().name;
}
