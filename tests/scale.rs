//! Nothing unbounded in one request: a cascade delete and a delete of many
//! documents with `on_delete` rules read, pull and delete in pages of
//! `docrel::on_delete::BATCH` ids, seen in the recorded commands. (The
//! 100,000-document run with its peak memory is `examples/scale.rs`.)

use docrel::bson::{doc, oid::ObjectId, DateTime, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "hosts")]
struct Host {
    #[serde(rename = "_id")]
    id: i32,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "logmsg")]
struct LogMsg {
    #[serde(rename = "_id")]
    id: ObjectId,
    time: DateTime,
    #[parent_ref(to = Host, sort = "-time", on_delete = cascade)]
    host: i32,
}

fn count(commands: &[String], name: &str) -> usize {
    commands.iter().filter(|c| c.as_str() == name).count()
}

#[tokio::test]
async fn a_cascade_deletes_page_by_page() -> docrel::Result<()> {
    let t = TestDb::new("scale_cascade").await?;
    let batch = docrel::on_delete::BATCH;
    let n = 2 * batch + batch / 2;
    Host::repo(&t.db).insert_many(&[Host { id: 1, name: "www".into() }, Host { id: 2, name: "db".into() }]).await?;
    let msgs: Vec<LogMsg> = (0..n).map(|_| LogMsg { id: ObjectId::new(), time: DateTime::now(), host: 1 }).collect();
    LogMsg::repo(&t.db).insert_many(&msgs).await?;
    LogMsg::repo(&t.db).insert(&LogMsg { id: ObjectId::new(), time: DateTime::now(), host: 2 }).await?;

    let mark = t.trips.mark();
    assert!(Host::repo(&t.db).delete_by_id(&1).await?);
    let commands = t.trips.commands_since(mark);
    // Three pages of at most `batch` ids, then the empty page that ends it.
    assert_eq!(count(&commands, "find logmsg"), 4, "{commands:?}");
    assert_eq!(count(&commands, "delete logmsg"), 3, "one deleteMany per page: {commands:?}");
    assert_eq!(count(&commands, "delete hosts"), 1, "{commands:?}");
    let left = t.db.collection::<BsonDoc>("logmsg");
    assert_eq!(left.count_documents(doc! {"host": 1}).await.unwrap(), 0, "every message of the host is gone");
    assert_eq!(left.count_documents(doc! {"host": 2}).await.unwrap(), 1, "the other host's stays");

    // delete_many of hosts with rules: the hosts themselves are paged too.
    let hosts: Vec<Host> = (10..10 + batch as i32 + 5).map(|id| Host { id, name: format!("h{id}") }).collect();
    Host::repo(&t.db).insert_many(&hosts).await?;
    let mark = t.trips.mark();
    let deleted = Host::repo(&t.db).delete_many(Host::fields().id.gte(10)).await?;
    assert_eq!(deleted, hosts.len() as u64);
    let commands = t.trips.commands_since(mark);
    assert_eq!(count(&commands, "delete hosts"), 2, "two pages of hosts: {commands:?}");
    assert_eq!(t.db.collection::<BsonDoc>("hosts").count_documents(doc! {}).await.unwrap(), 1);
    Ok(())
}
