#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "hosts")]
struct Host {
    #[serde(rename = "_id")]
    id: ObjectId,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "logmsg")]
struct LogMsg {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Host)]
    hosts: Vec<ObjectId>,
}

fn main() {}
