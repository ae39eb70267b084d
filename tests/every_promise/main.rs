//! Issue 38's defects ("every promise holds"), each as a plain test against
//! the server that failed before its fix, reading what is stored with the
//! raw driver.

use docrel::bson::{doc, Bson, Document as BsonDoc};
use docrel::mongodb::event::command::CommandEvent;
use docrel::mongodb::event::EventHandler;
use docrel::mongodb::{Client, Database};
use docrel::testing::TestDb;
use std::sync::{Arc, Mutex};

/// Held by each test that sets a fail point: the server keeps one
/// `failCommand` setting, so two tests setting theirs at once would
/// replace (or turn off) each other's.
pub(crate) static FAIL_POINTS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

mod bad_input;
mod compose;
mod contention;
mod copies;
mod faults;
mod nulls;
mod paging;
mod published;
mod repair;
mod sessions;

/// The document `_id = id` of `collection` as stored, read with the raw driver.
pub(crate) async fn raw(t: &TestDb, collection: &str, id: impl Into<Bson>) -> Option<BsonDoc> {
    t.db.collection::<BsonDoc>(collection).find_one(doc! {"_id": id.into()}).await.expect("find")
}

/// Every command a client sent, in order: its name and the command.
pub(crate) type Sent = Arc<Mutex<Vec<(String, BsonDoc)>>>;

/// A client on the test server whose URI adds `extra` options
/// (`w=majority`, `readPreference=secondaryPreferred`), recording every
/// command it sends; its database is `t`'s (dropped with it).
pub(crate) async fn watched(t: &TestDb, extra: &str) -> docrel::Result<(Client, Database, Sent)> {
    let base = std::env::var("MONGODB_URI").expect("MONGODB_URI");
    let uri =
        if base.contains('?') { format!("{base}&{extra}") } else { format!("{}/?{extra}", base.trim_end_matches('/')) };
    let sent: Sent = Arc::default();
    let log = sent.clone();
    let mut options = docrel::client::options(&uri).await?;
    options.command_event_handler = Some(EventHandler::callback(move |event: CommandEvent| {
        if let CommandEvent::Started(s) = event {
            log.lock().unwrap().push((s.command_name.clone(), s.command.clone()));
        }
    }));
    let client = docrel::connect_with(&uri, options).await?;
    let db = client.database(t.db.name());
    Ok((client, db, sent))
}
