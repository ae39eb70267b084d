#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::{Document, Embedded};
use serde::{Deserialize, Serialize};

// `inverse` names an array of `{id, ..}` structs, which link/unlink cannot make.
#[derive(Document, Serialize, Deserialize)]
#[document(collection = "people")]
struct Person {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Team, inverse = members)]
    team: ObjectId,
}

#[derive(Embedded, Serialize, Deserialize)]
struct Member {
    id: ObjectId,
    role: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "teams")]
struct Team {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = Person, max = 50)]
    members: Vec<Member>,
}

fn main() {}
