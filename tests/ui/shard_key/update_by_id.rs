// A type sharded on more than `_id` cannot write by id alone.
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "orders", shard_key(tenant, id))]
struct Order {
    #[serde(rename = "_id")]
    id: ObjectId,
    tenant: String,
    total: i64,
}

async fn pay(db: &docrel::mongodb::Database, id: &ObjectId) -> docrel::Result<()> {
    Order::repo(db).update_by_id(id, Order::fields().total.set(0)).await?;
    Ok(())
}

fn main() {
    let _ = pay;
}
