#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

// `inverse` names a plain field: docrel would write ids into `description`.
#[derive(Document, Serialize, Deserialize)]
#[document(collection = "people")]
struct Person {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = Task, inverse = description, max = 100)]
    tasks: Vec<ObjectId>,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "tasks")]
struct Task {
    #[serde(rename = "_id")]
    id: ObjectId,
    description: String,
}

fn main() {}
