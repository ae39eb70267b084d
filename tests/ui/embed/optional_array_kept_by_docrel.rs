#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::{Document, View};
use serde::{Deserialize, Serialize};

// docrel pushes into a subset and a two-way array itself: `None`, stored as
// `null`, would make those pushes fail, so these two need a `Vec`.
#[derive(Document, Serialize, Deserialize)]
#[document(collection = "reviews")]
struct Review {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Product)]
    product: ObjectId,
    stars: i32,
}

#[derive(View, Serialize, Deserialize)]
#[view(of = Review)]
struct Summary {
    stars: i32,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "products")]
struct Product {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[embed(max = 10, subset_of = Review, sort = "-stars")]
    reviews: Option<Vec<Summary>>,
    #[reference(many, to = Tag, inverse = products, max = 20)]
    tags: Option<Vec<ObjectId>>,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "tags")]
struct Tag {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = Product, inverse = tags, max = 100)]
    products: Vec<ObjectId>,
}

fn main() {}
