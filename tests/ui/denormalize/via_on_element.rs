#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
#[allow(unused_imports)]
use docrel::{Document, Embedded};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "products")]
struct Product {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    catalog_number: i32,
}

#[derive(Embedded, Serialize, Deserialize)]
struct ProductRef {
    id: ObjectId,
    #[denormalize(from = Product::name, via = id)]
    name: String,
}

fn main() {}
