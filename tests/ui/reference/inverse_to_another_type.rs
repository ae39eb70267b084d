#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

// `inverse` names a reference of `Task`, but one to `Company`, not back to `Person`.
#[derive(Document, Serialize, Deserialize)]
#[document(collection = "people")]
struct Person {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = Task, inverse = company, max = 100)]
    tasks: Vec<ObjectId>,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "companies")]
struct Company {
    #[serde(rename = "_id")]
    id: ObjectId,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "tasks")]
struct Task {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Company)]
    company: ObjectId,
}

fn main() {}
