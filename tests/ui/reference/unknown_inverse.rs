#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "people")]
struct Person {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = Task, inverse = owner)]
    tasks: Vec<ObjectId>,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "tasks")]
struct Task {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Person, inverse = task)]
    owner: ObjectId,
}

fn main() {}
