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

/// Each key a reference inside an element does not take is one error.
#[derive(Embedded, Serialize, Deserialize)]
struct Comment {
    #[reference(many, to = User)]
    likes: ObjectId,
    #[reference(to = User, inverse = comments)]
    author: ObjectId,
    #[reference(to = User, max = 3)]
    editor: ObjectId,
}

fn main() {}
