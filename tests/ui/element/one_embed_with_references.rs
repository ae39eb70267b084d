#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
#[allow(unused_imports)]
use docrel::{Document, Embedded};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "users")]
struct User {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Embedded, Serialize, Deserialize)]
struct Signature {
    #[reference(to = User)]
    by: ObjectId,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "letters")]
struct Letter {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[embed]
    signature: Signature,
}

fn main() {}
