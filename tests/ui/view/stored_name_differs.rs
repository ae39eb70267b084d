#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

use docrel::View;

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[serde(rename = "partName")]
    name: String,
}

// Read as `name`, but `Part` stores it as `partName`: the projection would find nothing.
#[derive(View, Deserialize)]
#[view(of = Part)]
struct PartView {
    name: String,
}

fn main() {}
