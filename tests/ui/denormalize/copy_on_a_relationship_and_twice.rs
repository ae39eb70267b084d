#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
#[allow(unused_imports)]
use docrel::{Document, View};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "stock")]
struct Stock {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Part)]
    #[denormalize(from = Part::id, via = part)]
    part: ObjectId,
    #[denormalize(from = Part::id, via = part)]
    #[denormalize(from = Part::id, via = part)]
    part_id: ObjectId,
}

fn main() {}
