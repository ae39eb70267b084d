#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "logmsg")]
struct LogMsg {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref]
    host: ObjectId,
}

fn main() {}
