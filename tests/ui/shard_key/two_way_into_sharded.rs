// A two-way reference into a type sharded on more than `_id`, whose own
// side is a plain reference: link/unlink would write it by `_id` alone.
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "people", shard_key(tenant, id))]
struct Person {
    #[serde(rename = "_id")]
    id: ObjectId,
    tenant: String,
    #[reference(many, to = Task, max = 100)]
    tasks: Vec<ObjectId>,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "tasks")]
struct Task {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Person, inverse = tasks)]
    owner: ObjectId,
}

fn main() {}
