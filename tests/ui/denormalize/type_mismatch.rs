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

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Product)]
    product: ObjectId,
    #[denormalize(from = Product::catalog_number, via = product)]
    product_catalog_number: String,
}

fn main() {}
