// A subset rewrites its parent by `_id` on every child change.
use docrel::bson::{oid::ObjectId, DateTime};
use docrel::{Document, View};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "reviews")]
struct Review {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Product)]
    product: ObjectId,
    date: DateTime,
    text: String,
}

#[derive(View, Serialize, Deserialize)]
#[view(of = Review)]
struct ReviewSummary {
    #[serde(rename = "_id")]
    id: ObjectId,
    text: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "products", shard_key(tenant, id))]
struct Product {
    #[serde(rename = "_id")]
    id: ObjectId,
    tenant: String,
    #[embed(max = 10, subset_of = Review, sort = "-date")]
    reviews: Vec<ReviewSummary>,
}

fn main() {}
