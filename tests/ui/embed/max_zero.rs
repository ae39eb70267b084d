#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Address {
    street: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "patrons")]
struct Patron {
    #[serde(rename = "_id")]
    id: String,
    #[embed(max = 0)]
    addresses: Vec<Address>,
}

fn main() {}
