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
#[document(collection = "system.users")]
struct User {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[serde(rename = "name")]
    full_name: String,
    name: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "system_profile")]
struct Profile {
    #[serde(rename = "_id")]
    id: ObjectId,
}

fn main() {}
