// A sharded collection enforces a unique index only when it starts with the shard key.
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "users", shard_key(tenant, id))]
struct User {
    #[serde(rename = "_id")]
    id: ObjectId,
    tenant: String,
    #[document(unique)]
    email: String,
}

fn main() {}
