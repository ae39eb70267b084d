#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "patrons")]
struct Patron {
    #[serde(rename = "_id")]
    id: String,
    #[embed(allow_unbouded)]
    addresses: Vec<String>,
}

fn main() {}
