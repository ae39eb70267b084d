//! Issue 38's defects ("every promise holds"), each as a plain test against
//! the server that failed before its fix, reading what is stored with the
//! raw driver.

use docrel::bson::{doc, Bson, Document as BsonDoc};
use docrel::testing::TestDb;

mod bad_input;
mod compose;
mod paging;
mod published;
mod sessions;

/// The document `_id = id` of `collection` as stored, read with the raw driver.
pub(crate) async fn raw(t: &TestDb, collection: &str, id: impl Into<Bson>) -> Option<BsonDoc> {
    t.db.collection::<BsonDoc>(collection).find_one(doc! {"_id": id.into()}).await.expect("find")
}
