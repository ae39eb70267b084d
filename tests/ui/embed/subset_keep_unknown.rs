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
#[document(collection = "reviews")]
struct Review {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Product)]
    product_id: i32,
    stars: i32,
}

#[derive(View, Serialize, Deserialize)]
#[view(of = Review)]
struct Stars {
    stars: i32,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "products")]
struct Product {
    #[serde(rename = "_id")]
    id: i32,
    #[embed(max = 10, subset_of = Review, sort = "-stars", keep = middle)]
    best: Vec<Stars>,
}

fn main() {}
