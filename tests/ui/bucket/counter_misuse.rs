#[allow(unused_imports)]
use docrel::bson::{oid::ObjectId, DateTime};
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "pages")]
struct Page {
    #[serde(rename = "_id")]
    id: i32,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "views_sized")]
struct Sized {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Page)]
    page: i32,
    start: DateTime,
    #[bucket(counter, window = "hour", size = 50)]
    views: i64,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "views_by")]
struct By {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Page)]
    page: i32,
    start: DateTime,
    #[bucket(counter, by = time, window = "hour")]
    views: i64,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "views_no_window")]
struct NoWindow {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Page)]
    page: i32,
    start: DateTime,
    #[bucket(counter)]
    views: i64,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "views_float")]
struct FloatCount {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Page)]
    page: i32,
    start: DateTime,
    #[bucket(counter, window = "hour")]
    views: f64,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "views_sums")]
struct Sums {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Page)]
    page: i32,
    start: DateTime,
    #[bucket(counter, window = "hour", sum = seconds)]
    views: i64,
    #[bucket(counter, window = "day", sum = label)]
    daily: i64,
    label: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "comment_pages")]
struct CommentPage {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Page)]
    page: i32,
    count: i32,
    #[bucket(size = 50, sum = count)]
    comments: Vec<String>,
}

fn main() {}
