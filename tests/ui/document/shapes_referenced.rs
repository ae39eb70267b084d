#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

// Each shape that cannot be a document is one error, and the documents
// that refer to it, copy from it or load it say nothing more.
#[derive(Document, Serialize, Deserialize)]
#[document(collection = "events")]
enum Event {
    Started,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "pairs")]
struct Pair(ObjectId, String);

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "units")]
struct Unit;

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "logs")]
struct Log {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Event)]
    event: ObjectId,
    #[reference(many, to = Pair, max = 10)]
    pairs: Vec<ObjectId>,
    #[parent_ref(to = Unit)]
    unit: ObjectId,
}

fn main() {
    let _ = Log::rels().event;
}
