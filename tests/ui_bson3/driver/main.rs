//! A user's crate in which another dependency turns on the driver's
//! `bson-3` while docrel's `bson-3` stays off: docrel is written for bson 2,
//! the driver's `bson` is bson 3. The one error says to turn docrel's on.
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

fn main() {
    let _ = Part::fields().name;
}
