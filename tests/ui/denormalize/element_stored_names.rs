#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use serde::{Deserialize, Serialize};

use docrel::Embedded;

#[derive(Embedded, Serialize, Deserialize)]
struct PartRef {
    id: ObjectId,
    #[serde(rename = "part.name")]
    name: String,
    #[serde(rename = "$qty")]
    qty: i32,
}

fn main() {}
