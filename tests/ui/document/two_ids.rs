#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "parts")]
struct Part {
    #[document(id)]
    #[serde(rename = "_id")]
    id: ObjectId,
    #[document(id)]
    partno: String,
}

fn main() {}
