// An append finds its bucket by parent and page alone.
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "posts")]
struct Post {
    #[serde(rename = "_id")]
    id: i32,
}

#[derive(Serialize, Deserialize)]
struct Comment {
    text: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "comment_pages", shard_key(tenant, post))]
struct CommentPage {
    #[serde(rename = "_id")]
    id: ObjectId,
    tenant: String,
    #[parent_ref(to = Post)]
    post: i32,
    page: i32,
    count: i32,
    #[bucket(size = 50)]
    comments: Vec<Comment>,
}

fn main() {}
