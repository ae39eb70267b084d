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

#[derive(View, Serialize, Deserialize)]
#[view(of = Review)]
struct Summary {
    review_text: String,
    published_date: DateTime,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "products")]
struct Product {
    #[serde(rename = "_id")]
    id: i32,
    #[embed(max = 10, subset_of = Review, sort = "-published_date")]
    reviews: Vec<Summary>,
}

fn main() {}
