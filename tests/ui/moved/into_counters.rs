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
#[document(collection = "page_views", moved_from = Page::views)]
struct PageViews {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Page)]
    page: i32,
    start: DateTime,
    #[bucket(counter, window = "hour")]
    views: i64,
}

fn main() {}
