// A shard key names a field the struct does not have; another names one twice.
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "orders", shard_key(tenantt, id))]
struct Order {
    #[serde(rename = "_id")]
    id: ObjectId,
    tenant: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "invoices", shard_key = (tenant, tenant))]
struct Invoice {
    #[serde(rename = "_id")]
    id: ObjectId,
    tenant: String,
}

fn main() {}
