#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "events")]
enum Event {
    Started,
    Stopped,
}

fn main() {}
