//! Writes that run in a transaction read a snapshot: what another client
//! writes while the transaction runs is not in it. An `insert_many` (one
//! transaction) of sources whose holder is inserted meanwhile by another
//! client: the transaction's read of holders misses the new holder, and
//! the holder's read of its sources misses the uncommitted parts. Found by
//! the history checker (InsertManyParts beside InsertProduct/SaveProduct
//! of a product naming one of those parts: its copy stayed stale, with no
//! version record).

use docrel::bson::{doc, oid::ObjectId, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::{Document, Embedded, View};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The fail point is the server's: one test holds it at a time.
static FAIL_POINT: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "sr_parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Embedded, Serialize, Deserialize, Debug, Clone)]
struct PartRef {
    id: ObjectId,
    #[denormalize(from = Part::name)]
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "sr_products")]
struct Product {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = Part, max = 10)]
    parts: Vec<PartRef>,
}

/// A host keeping its newest messages, each message a copy of its
/// address: on MongoDB 8.0+ an `insert_many` of messages confirms the
/// copies with the pushes into the hosts (guarded by the version its fill
/// read) instead of reading the hosts again after the commit.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "sr_hosts")]
struct Host {
    #[serde(rename = "_id")]
    id: ObjectId,
    ipaddr: String,
    #[embed(max = 3, subset_of = Msg, sort = "-at")]
    latest: Vec<Line>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "sr_msgs")]
struct Msg {
    #[serde(rename = "_id")]
    id: i32,
    at: i32,
    #[denormalize(from = Host::ipaddr, via = host)]
    ipaddr: String,
    #[parent_ref(to = Host, sort = "-at")]
    host: ObjectId,
}

/// A summary with no identity of its own: a push that matched nothing
/// says nothing but that the guard failed.
#[derive(View, Serialize, Deserialize, Debug, Clone)]
#[view(of = Msg)]
struct Line {
    #[serde(rename = "_id")]
    id: i32,
    at: i32,
}

/// A second client of the test's database (another process would be
/// the same), which the fail point does not hold.
async fn other_client(t: &TestDb, app: &str) -> docrel::Result<docrel::mongodb::Database> {
    let uri = std::env::var("MONGODB_URI").expect("MONGODB_URI");
    let mut options = docrel::client::options(&uri).await?;
    options.app_name = Some(app.into());
    let other = docrel::connect_with(&uri, options).await?.database(t.db.name());
    docrel::schema::set_lease_for(&other, docrel::testing::TEST_LEASE);
    Ok(other)
}

/// The test's client's next commit waits 800 ms: its reads are done by then.
async fn hold_the_commit(t: &TestDb) {
    let fail_point = doc! {
        "configureFailPoint": "failCommand",
        "mode": {"times": 1},
        "data": {"failCommands": ["commitTransaction"], "blockConnection": true, "blockTimeMS": 800, "appName": t.db.name()},
    };
    t.client.database("admin").run_command(fail_point).await.expect("fail point");
}

/// The test's client's next `cmd` waits 800 ms before it runs.
async fn hold(t: &TestDb, cmd: &str) {
    let fail_point = doc! {
        "configureFailPoint": "failCommand",
        "mode": {"times": 1},
        "data": {"failCommands": [cmd], "blockConnection": true, "blockTimeMS": 800, "appName": t.db.name()},
    };
    t.client.database("admin").run_command(fail_point).await.expect("fail point");
}

async fn fail_point_off(t: &TestDb) {
    let off = doc! {"configureFailPoint": "failCommand", "mode": "off"};
    t.client.database("admin").run_command(off).await.expect("fail point off");
}

/// The name a stored product copied for its first part, and the product.
async fn first_copy(t: &TestDb, product: ObjectId) -> (String, BsonDoc) {
    let stored = t.db.collection::<BsonDoc>("sr_products").find_one(doc! {"_id": product}).await.unwrap().unwrap();
    let copy = stored.get_array("parts").unwrap()[0].as_document().unwrap().get_str("name").unwrap().to_owned();
    (copy, stored)
}

#[tokio::test]
async fn a_holder_inserted_while_its_sources_insert_many_commits_gets_their_values() -> docrel::Result<()> {
    let _one = FAIL_POINT.lock().await;
    let t = TestDb::new("snapshot_races").await?;
    let other = other_client(&t, "snapshot-races-other").await?;

    let (bolt, nut) = (ObjectId::new(), ObjectId::new());
    // The insert_many's commit waits: its reads are done by then.
    hold_the_commit(&t).await;
    let db = t.db.clone();
    let parts = [Part { id: bolt, name: "bolt".into() }, Part { id: nut, name: "nut".into() }];
    let inserting = tokio::spawn(async move { Part::repo(&db).insert_many(&parts).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Meanwhile the other client inserts a product naming the bolt.
    let product = Product { id: ObjectId::new(), parts: vec![PartRef { id: bolt, name: "?".into() }] };
    Product::repo(&other).insert(&product).await?;
    inserting.await.expect("insert_many")?;
    fail_point_off(&t).await;

    let (copy, stored) = first_copy(&t, product.id).await;
    assert_eq!(copy, "bolt", "{stored}");
    let report = docrel::check::copies::<Part>().verify(&t.db).run().await?;
    assert_eq!(report.found(), 0, "{report:?}");
    Ok(())
}

#[tokio::test]
async fn holders_inserted_many_while_their_source_is_inserted_get_its_value() -> docrel::Result<()> {
    let _one = FAIL_POINT.lock().await;
    let t = TestDb::new("snapshot_races_holders").await?;
    let other = other_client(&t, "snapshot-races-other-2").await?;

    let bolt = ObjectId::new();
    hold_the_commit(&t).await;
    let db = t.db.clone();
    let products: Vec<Product> =
        (0..2).map(|_| Product { id: ObjectId::new(), parts: vec![PartRef { id: bolt, name: "?".into() }] }).collect();
    let ids: Vec<ObjectId> = products.iter().map(|p| p.id).collect();
    let inserting = tokio::spawn(async move { Product::repo(&db).insert_many(&products).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Meanwhile the other client inserts the bolt they name.
    Part::repo(&other).insert(&Part { id: bolt, name: "bolt".into() }).await?;
    inserting.await.expect("insert_many")?;
    fail_point_off(&t).await;

    for id in ids {
        let (copy, stored) = first_copy(&t, id).await;
        assert_eq!(copy, "bolt", "{stored}");
    }
    let report = docrel::check::copies::<Part>().verify(&t.db).run().await?;
    assert_eq!(report.found(), 0, "{report:?}");
    Ok(())
}

/// Messages inserted while their host's address changes (`held` is the
/// command of the insert that waits, the other client renaming meanwhile):
/// every stored message carries the new address with the host's version
/// recorded, the hosts' subsets are right, and what the insert sent.
async fn messages_inserted_while_their_host_changes(held: &str, name: &str) -> docrel::Result<Vec<String>> {
    let _one = FAIL_POINT.lock().await;
    let t = TestDb::new(name).await?;
    let other = other_client(&t, &format!("{name}-other")).await?;
    let hosts: Vec<Host> =
        (0..2).map(|i| Host { id: ObjectId::new(), ipaddr: format!("10.0.0.{i}"), latest: vec![] }).collect();
    Host::repo(&t.db).insert_many(&hosts).await?;
    let msgs: Vec<Msg> =
        (0..6).map(|i| Msg { id: i, at: i, ipaddr: String::new(), host: hosts[i as usize % 2].id }).collect();
    hold(&t, held).await;
    let (db, mark) = (t.db.clone(), t.trips.mark());
    let inserting = tokio::spawn(async move { Msg::repo(&db).insert_many(&msgs).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    Host::repo(&other).update_by_id(&hosts[0].id, Host::fields().ipaddr.set("10.9.9.9".into())).await?;
    inserting.await.expect("insert_many")?;
    let sent = t.trips.commands_since(mark);
    fail_point_off(&t).await;

    let host: BsonDoc = t.db.collection("sr_hosts").find_one(doc! {"_id": hosts[0].id}).await?.expect("host");
    let version = host.get_document("_docrel").and_then(|d| d.get_i64("v")).expect("a renamed host has a version");
    let stored: Vec<BsonDoc> = {
        use futures::TryStreamExt;
        t.db.collection::<BsonDoc>("sr_msgs").find(doc! {"host": hosts[0].id}).await?.try_collect().await?
    };
    assert_eq!(stored.len(), 3);
    for m in &stored {
        assert_eq!(m.get_str("ipaddr").ok(), Some("10.9.9.9"), "{m}");
        let record =
            m.get_document("_docrel").and_then(|d| d.get_document("copies")).and_then(|c| c.get_document("host"));
        assert_eq!(record.ok().and_then(|r| r.get_i64(hosts[0].id.to_hex()).ok()), Some(version), "{m}");
    }
    for h in &hosts {
        assert!(Host::rels().latest.check(&t.db, &h.id).await?, "the subset of {}", h.id);
    }
    let report = docrel::check::copies::<Host>().verify(&t.db).run().await?;
    assert_eq!(report.found(), 0, "{report:?}");
    Ok(sent)
}

#[tokio::test]
async fn a_host_changed_before_the_batch_fails_its_push_guard_and_the_copies_are_read_again() -> docrel::Result<()> {
    // The fill read the old address; the rename commits before the batch
    // runs, so the guarded push finds another version and matches nothing.
    let sent = messages_inserted_while_their_host_changes("bulkWrite", "snapshot_races_push_guard").await?;
    assert_eq!(sent.first().map(String::as_str), Some("find sr_hosts"), "{sent:?}");
    let commit = sent.iter().position(|c| c == "commitTransaction").expect("a transaction");
    assert!(sent[commit..].contains(&"find sr_hosts".to_owned()), "read again after the commit: {sent:?}");
    Ok(())
}

#[tokio::test]
async fn a_host_changed_while_the_batch_commits_waits_and_its_fan_out_finds_the_messages() -> docrel::Result<()> {
    // The batch wrote the host in the transaction: the rename waits for
    // the commit, and its fan-out then finds the messages.
    let sent = messages_inserted_while_their_host_changes("commitTransaction", "snapshot_races_push_conflict").await?;
    assert_eq!(sent, ["find sr_hosts", "bulkWrite", "commitTransaction"], "no read after the commit");
    Ok(())
}
