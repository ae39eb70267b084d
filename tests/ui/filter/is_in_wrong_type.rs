// `is_in` and `not_in` take values of the field's type (or of its elements).
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, PartialEq)]
enum Status {
    Open,
    Shipped,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "orders")]
struct Order {
    #[serde(rename = "_id")]
    id: ObjectId,
    status: Status,
    tags: Vec<String>,
}

fn main() {
    let _ = Order::fields().status.is_in(&[Status::Open, Status::Shipped]);
    let _ = Order::fields().status.is_in(&["open"]);
    let _ = Order::fields().tags.not_in(&[5]);
}
