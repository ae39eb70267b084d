//! Nothing unbounded in one request: a cascade delete and a delete of many
//! documents with `on_delete` rules read, pull and delete in pages of
//! `docrel::relations::on_delete::BATCH` ids, and a repair writes each page of holders
//! with one `update` command, seen in the recorded commands. (The
//! 100,000-document runs with their peak memory are `examples/scale.rs`.)

use docrel::bson::{doc, oid::ObjectId, DateTime, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::{Document, Embedded};
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

/// Refers to messages, so deleting one has a rule to apply: a cascade
/// into messages is walked page by page (on MongoDB 8.0+ a cascade into a
/// collection with nothing referring to it is one `deleteMany` by the
/// reference, `tests/bulk_delete.rs`).
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "pins")]
struct Pin {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = LogMsg, on_delete = pull)]
    msg: Option<ObjectId>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "suppliers")]
struct Supplier {
    #[serde(rename = "_id")]
    id: i32,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: i32,
    #[reference(to = Supplier)]
    supplier: i32,
    #[denormalize(from = Supplier::name, via = supplier)]
    supplier_name: String,
}

#[derive(Embedded, Serialize, Deserialize, Debug, Clone)]
struct SupplierRef {
    id: i32,
    #[denormalize(from = Supplier::name)]
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "kits")]
struct Kit {
    #[serde(rename = "_id")]
    id: i32,
    #[reference(many, to = Supplier, max = 100)]
    suppliers: Vec<SupplierRef>,
}

fn count(commands: &[String], name: &str) -> usize {
    commands.iter().filter(|c| c.as_str() == name).count()
}

#[tokio::test]
async fn a_cascade_deletes_page_by_page() -> docrel::Result<()> {
    let t = TestDb::new("scale_cascade").await?;
    let batch = docrel::relations::on_delete::BATCH;
    let n = 2 * batch + batch / 2;
    Host::repo(&t.db).insert_many(&[Host { id: 1, name: "www".into() }, Host { id: 2, name: "db".into() }]).await?;
    let msgs: Vec<LogMsg> = (0..n).map(|_| LogMsg { id: ObjectId::new(), time: DateTime::now(), host: 1 }).collect();
    LogMsg::repo(&t.db).insert_many(&msgs).await?;
    LogMsg::repo(&t.db).insert(&LogMsg { id: ObjectId::new(), time: DateTime::now(), host: 2 }).await?;

    let pinned = Pin { id: ObjectId::new(), msg: Some(msgs[n - 1].id) };
    Pin::repo(&t.db).insert(&pinned).await?;

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
    let pin = t.db.collection::<BsonDoc>("pins").find_one(doc! {}).await.unwrap().expect("the pin stays");
    assert!(pin.get("msg").is_none(), "its message's id was pulled: {pin:?}");

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

#[tokio::test]
async fn a_repair_writes_each_page_of_holders_in_one_command() -> docrel::Result<()> {
    let t = TestDb::new("scale_repair").await?;
    // The worst case for grouping by source: every part has its own supplier.
    let n = 250;
    let suppliers: Vec<Supplier> = (0..n).map(|id| Supplier { id, name: format!("s{id}") }).collect();
    Supplier::repo(&t.db).insert_many(&suppliers).await?;
    let parts: Vec<Part> = (0..n).map(|id| Part { id, supplier: id, supplier_name: String::new() }).collect();
    Part::repo(&t.db).insert_many(&parts).await?;
    let kits: Vec<Kit> = (0..5)
        .map(|k| Kit {
            id: k,
            suppliers: (50 * k..50 * k + 50).map(|id| SupplierRef { id, name: String::new() }).collect(),
        })
        .collect();
    Kit::repo(&t.db).insert_many(&kits).await?;
    // Renamed behind docrel's back: every copy is stale, at the same version.
    let raw = t.db.collection::<BsonDoc>("suppliers");
    for id in 0..n {
        raw.update_one(doc! {"_id": id}, doc! {"$set": {"name": format!("renamed {id}")}}).await.unwrap();
    }

    let mark = t.trips.mark();
    let report = docrel::check::copies::<Supplier>().repair(&t.db).batch(100).run().await?;
    let commands = t.trips.commands_since(mark);
    assert_eq!((report.scanned, report.stale), (255, 255), "{report:?}");
    assert_eq!(report.fixed, 500, "250 parts, and 5 kits × 50 copies: {report:?}");
    // Parts: three pages of 100, 100 and 50, then the empty page that ends
    // it; kits: one page. One read of sources and one write per page,
    // however many sources and holders the page has. Each target has one
    // more read: the holders whose reference is gone, whose copies a
    // repair clears (none here).
    assert_eq!(count(&commands, "find parts"), 5, "{commands:?}");
    assert_eq!(count(&commands, "find kits"), 3, "{commands:?}");
    assert_eq!(count(&commands, "find suppliers"), 4, "{commands:?}");
    assert_eq!(count(&commands, "update parts"), 3, "{commands:?}");
    assert_eq!(count(&commands, "update kits"), 1, "{commands:?}");
    assert_eq!(commands.len(), 16, "{commands:?}");

    for id in [0, 99, 100, 249] {
        assert_eq!(Part::repo(&t.db).require(&id).await?.supplier_name, format!("renamed {id}"));
    }
    for kit in Kit::repo(&t.db).find(docrel::Filter::all()).await? {
        for r in &kit.suppliers {
            assert_eq!(r.name, format!("renamed {}", r.id), "kit {}", kit.id);
        }
    }
    let again = docrel::check::copies::<Supplier>().verify(&t.db).run().await?;
    assert_eq!((again.scanned, again.stale, again.dangling), (255, 0, 0));
    Ok(())
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "servers")]
struct Server {
    #[serde(rename = "_id")]
    id: i32,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "events")]
struct Event {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Server)]
    server: i32,
    #[denormalize(from = Server::name, via = server)]
    server_name: String,
}

#[tokio::test]
async fn moving_many_holders_to_another_source_pages_and_refreshes_each_page() -> docrel::Result<()> {
    let t = TestDb::new("scale_holders").await?;
    let batch = docrel::relations::on_delete::BATCH;
    let n = 2 * batch + batch / 2;
    let servers = [Server { id: 1, name: "alpha".into() }, Server { id: 2, name: "beta".into() }];
    Server::repo(&t.db).insert_many(&servers).await?;
    let events: Vec<Event> =
        (0..n).map(|_| Event { id: ObjectId::new(), server: 1, server_name: "(filled)".into() }).collect();
    Event::repo(&t.db).insert_many(&events).await?;

    let mark = t.trips.mark();
    let moved = Event::repo(&t.db).update_many(Event::fields().server.eq(1), Event::fields().server.set(2)).await?;
    assert_eq!(moved.modified, n as u64);
    let commands = t.trips.commands_since(mark);
    // Three pages of ids (the last one short: no read of a next page),
    // one write per page, and each page's refresh of the copies it now holds.
    assert_eq!(count(&commands, "find events"), 3 + 3, "pages, then each page's holders read back: {commands:?}");
    assert_eq!(count(&commands, "update events"), 3 + 3, "a write and a refresh per page: {commands:?}");
    let stored = t.db.collection::<BsonDoc>("events");
    assert_eq!(stored.count_documents(doc! {"server": 2, "server_name": "beta"}).await.unwrap(), n as u64);
    assert_eq!(stored.count_documents(doc! {}).await.unwrap(), n as u64);
    Ok(())
}
