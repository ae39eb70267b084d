// A partial filter written as an expression gives a `bson::Document`.
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "members", index(fields(email), unique, partial = 5))]
struct Member {
    #[serde(rename = "_id")]
    id: ObjectId,
    email: String,
}

fn main() {}
