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
    time: i64,
    #[parent_ref(to = Host, sort = "-timestamp")]
    host: ObjectId,
}

fn main() {}
