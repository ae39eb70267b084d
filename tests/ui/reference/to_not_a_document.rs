#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

struct Plain {
    name: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "orders")]
struct Order {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Plain)]
    plain: ObjectId,
    #[denormalize(from = Plain::name, via = plain)]
    plain_name: String,
}

fn main() {}
