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
    #[embed(moved_from = "homes")]
    home: Option<Address>,
    #[embed(moved_from = "offices")]
    office: Option<Address>,
}

fn main() {}
