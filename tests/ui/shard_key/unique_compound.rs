// A unique index on a sharded collection starts with the shard key.
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(
    collection = "users",
    shard_key(tenant),
    index(fields(tenant, email), unique),
    index(fields(email, tenant), unique),
)]
struct User {
    #[serde(rename = "_id")]
    id: ObjectId,
    tenant: String,
    email: String,
}

fn main() {}
