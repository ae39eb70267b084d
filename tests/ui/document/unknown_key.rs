#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(colection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[document(uniqe)]
    partno: String,
}

fn main() {}
