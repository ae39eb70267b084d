#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "products")]
struct Product {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many)]
    parts: Vec<ObjectId>,
    #[reference]
    maker: ObjectId,
}

fn main() {}
