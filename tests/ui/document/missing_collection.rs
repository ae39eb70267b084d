#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
struct PartRef {
    #[serde(rename = "_id")]
    id: ObjectId,
}

fn main() {}
