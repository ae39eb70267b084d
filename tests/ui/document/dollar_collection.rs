#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "parts$v2")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "catalog.parts")]
struct Other {
    #[serde(rename = "_id")]
    id: ObjectId,
}

fn main() {}
