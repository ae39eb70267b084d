#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "hosts")]
struct Host {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[embed(max = 100000, max_bytes = 200, allow_large)]
    logmsgs: Vec<String>,
    #[reference(many, to = Host, max = 1000000, allow_large)]
    peers: Vec<ObjectId>,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "posts")]
struct Post {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[embed(max = 100, max_bytes = 100000)]
    comments: Vec<String>,
    #[embed(max = 100, max_bytes = 100000)]
    drafts: Vec<String>,
    #[embed(max_bytes = 100, allow_unbounded)]
    tags: Vec<String>,
}

fn main() {}
