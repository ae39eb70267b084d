// The rules MongoDB would apply only when the index is created, at the
// attribute: a TTL index is on one date field, a text index takes no
// collation and a collection has one, `sparse` excludes `partial`, and an
// index names stored fields, each once, each key pattern and name once.
use docrel::bson::{oid::ObjectId, DateTime};
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(
    collection = "sessions",
    index(fields(user, created), expire_after = "1d"),
    index(fields(tenat, user)),
    index(fields(user, seen, user)),
    index(unique),
    index(fields(seen), name = "by_seen"),
    index(fields(id)),
    index(text(title, body)),
    index(text(summary), collation(locale = "fr")),
    index(fields(user), default_language = "french"),
    index(fields(phone), sparse, partial = r#"{"active": true}"#),
    index(fields(user, phone), name = "by_user"),
    index(fields(phone, user), name = "by_user"),
)]
struct Session {
    #[serde(rename = "_id")]
    id: ObjectId,
    user: String,
    created: DateTime,
    #[document(index)]
    seen: DateTime,
    title: String,
    body: String,
    summary: String,
    phone: String,
    #[document(text)]
    notes: String,
    #[document(index(expire_after = 3600))]
    token: String,
    #[serde(skip)]
    #[document(index)]
    cached: i64,
}

fn main() {}
