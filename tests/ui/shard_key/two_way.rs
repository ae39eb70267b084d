// link/unlink write each side by `_id` alone: a two-way reference on a type
// sharded on more than `_id` cannot be routed.
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "people")]
struct Person {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = Task, inverse = owner, max = 100)]
    tasks: Vec<ObjectId>,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "tasks", shard_key(tenant, id))]
struct Task {
    #[serde(rename = "_id")]
    id: ObjectId,
    tenant: String,
    #[reference(to = Person, inverse = tasks)]
    owner: ObjectId,
}

fn main() {}
