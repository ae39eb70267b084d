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
#[document(collection = "boxes")]
struct Boxed<T> {
    #[serde(rename = "_id")]
    id: ObjectId,
    item: T,
}

#[derive(Document)]
#[document(collection = "unions")]
union Either {
    a: u32,
    b: f32,
}

fn main() {}
