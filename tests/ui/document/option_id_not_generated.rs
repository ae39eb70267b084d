use docrel::Document;
use serde::{Deserialize, Serialize};

// An `Option` id is generated on insert: a `String` id carries meaning,
// so docrel does not make one up.
#[derive(Document, Serialize, Deserialize)]
#[document(collection = "accounts")]
struct Account {
    #[serde(rename = "_id")]
    id: Option<String>,
}

fn main() {}
