#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Address {
    street: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "users")]
struct User {
    #[serde(rename = "_id")]
    id: String,
    #[embed(max = 3)]
    address: Address,
}

fn main() {}
