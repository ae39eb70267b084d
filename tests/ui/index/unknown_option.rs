// A misspelt index or collation option is an error at the option, with the
// options that exist.
use docrel::bson::{oid::ObjectId, DateTime};
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "events", index(fields(tenant, -created), sprase))]
struct Event {
    #[serde(rename = "_id")]
    id: ObjectId,
    tenant: String,
    created: DateTime,
    #[document(index(uniqe))]
    code: String,
    #[document(index(collation(locale = "fr", strenght = 2)))]
    handle: String,
}

fn main() {}
