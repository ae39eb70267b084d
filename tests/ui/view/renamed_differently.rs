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

// `Part` stores `name` as `partName`, the view reads `title`: one error, at the view's field.
#[derive(View, Deserialize)]
#[view(of = Part)]
struct PartView {
    #[serde(rename = "title")]
    name: String,
}

fn main() {}
