#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

use docrel::View;

#[derive(View, Deserialize)]
#[view(of = Part)]
struct PartView {
    nmae: String,
}

fn main() {}
