use docrel::{Document, Embedded};
use serde::{Deserialize, Serialize};

#[derive(Embedded, Serialize, Deserialize)]
struct Address {
    street: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "patrons")]
struct Patron {
    #[serde(rename = "_id")]
    id: i64,
    #[embed(max = 5, moved_from = "addresses")]
    addresses: Vec<Address>,
}

fn main() {}
