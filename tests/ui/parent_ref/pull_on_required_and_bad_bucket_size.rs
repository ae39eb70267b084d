#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
#[allow(unused_imports)]
use docrel::{Document, View};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "pages")]
struct Page {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Part, on_delete = pull)]
    part: ObjectId,
    page: i32,
    count: i32,
    #[bucket(size = 0)]
    lines: Vec<String>,
    #[bucket(size = 5)]
    single: String,
}

fn main() {}
