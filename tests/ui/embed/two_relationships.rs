#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "tags")]
struct Tag {
    #[serde(rename = "_id")]
    id: ObjectId,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "posts")]
struct Post {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[embed(max = 5)]
    #[reference(many, to = Tag)]
    tags: Vec<ObjectId>,
}

fn main() {}
