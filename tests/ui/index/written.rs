// Each option's value in the form it takes: fields by their Rust names, a
// text key without a direction, a duration, a partial filter that is one
// JSON object, a collation with its locale and known values.
use docrel::bson::{oid::ObjectId, DateTime};
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(
    collection = "orders",
    index(fields("tenant")),
    index(text(-summary)),
    index(fields(seen), expire_after = "30 days"),
    index(fields(email), partial = "[1, 2]"),
    index(fields(login), partial = "{active: true}"),
    index(fields(login), unique, unique),
    index(fields(login), collation(strength = 2)),
)]
struct Order {
    #[serde(rename = "_id")]
    id: ObjectId,
    tenant: String,
    summary: String,
    seen: DateTime,
    email: String,
    login: String,
    #[document(text(weight = 0))]
    notes: String,
    #[document(index(expire_after = 9999999999))]
    renewed: DateTime,
    #[document(index(fields(tenant)))]
    note: String,
    #[document(index(collation(locale = "fr", case_first = "UPPER")))]
    nick: String,
}

fn main() {}
