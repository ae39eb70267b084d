#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "pairs")]
struct Pair(ObjectId, String);

fn main() {}
