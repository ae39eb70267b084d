use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "posts")]
struct Post {
    #[serde(rename = "_id")]
    id: ObjectId,
    title: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "comments", moved_from = Poste::comments)]
struct Comment {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Post)]
    post: ObjectId,
    text: String,
}

fn main() {}
