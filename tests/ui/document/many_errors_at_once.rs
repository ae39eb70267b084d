#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "")]
struct Part {
    partno: String,
    #[serde(rename = "a.b")]
    ab: String,
    #[embed(max = 0)]
    tags: Vec<String>,
}

fn main() {}
