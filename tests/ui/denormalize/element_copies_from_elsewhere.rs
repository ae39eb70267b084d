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
#[document(collection = "companies")]
struct Company {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Embedded, Serialize, Deserialize)]
struct ProductRef {
    id: ObjectId,
    #[denormalize(from = Company::name)]
    name: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "orders")]
struct Order {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = Product)]
    products: Vec<ProductRef>,
}

fn main() {}
