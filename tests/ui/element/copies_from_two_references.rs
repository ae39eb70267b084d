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

/// An element copies from one document: its version records are kept per
/// array and source id.
#[derive(Embedded, Serialize, Deserialize)]
struct Comment {
    #[reference(to = User)]
    author: ObjectId,
    #[denormalize(from = User::name, via = author)]
    author_name: String,
    #[reference(to = User)]
    editor: ObjectId,
    #[denormalize(from = User::name, via = editor)]
    editor_name: String,
}

fn main() {}
