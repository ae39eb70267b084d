#[allow(unused_imports)]
use docrel::bson::{oid::ObjectId, DateTime};
#[allow(unused_imports)]
use docrel::{Document, View};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "reviews")]
struct Review {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Product)]
    product_id: i32,
    review_text: String,
    published_date: DateTime,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "products")]
struct Product {
    #[serde(rename = "_id")]
    id: i32,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "review_pages")]
struct ReviewPage {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Product)]
    product_id: i32,
    page: i32,
    count: i32,
    #[bucket]
    reviews: Vec<String>,
    #[bucket(size = 50, window = "day")]
    more: Vec<String>,
    #[bucket(by = time, window = "fortnight")]
    timed: Vec<String>,
}

fn main() {}
