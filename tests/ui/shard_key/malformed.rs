// A shard key is a list of field names, not a string.
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "orders", shard_key = "tenant")]
struct Order {
    #[serde(rename = "_id")]
    id: ObjectId,
    tenant: String,
}

fn main() {}
