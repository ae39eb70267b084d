//! Rules changed online while old and new versions of a program write
//! (issue 28): the schema lease, and a change that adds rules, backfills
//! them and removes one while two processes keep renaming parts.
//!
//! This binary links only `Part` and a plain `Bin` (the old version, as
//! tests/fleet_a.rs). The new version's rules are program B's export
//! (tests/fixtures/fleet_b_schema.json): products copying part names,
//! bins keeping a subset of their best parts, stickers, orders. The child
//! process (this binary started again, running `rolling_writer`) is an old
//! writer that learns the new rules only from the store, within its lease.

#[path = "fleet/types.rs"]
mod types;

use docrel::admin::change::change;
use docrel::bson::{doc, oid::ObjectId, Bson, Document as BsonDoc};
use docrel::schema::stored::{self, StoredType};
use docrel::testing::TestDb;
use docrel::{Document, Error};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use types::Part;

/// The old version's bin: no subset.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "fl_bins")]
pub struct Bin {
    #[serde(rename = "_id")]
    id: i32,
}

/// Every process of this test (and the change) holds schemas under this.
const LEASE: Duration = Duration::from_millis(700);
const DB_VARIABLE: &str = "DOCREL_ROLLING_DB";
const PARTS: i32 = 12;
const RENAMED: i32 = 8;

fn b_schema() -> Vec<StoredType> {
    let value: serde_json::Value =
        serde_json::from_str(include_str!("fixtures/fleet_b_schema.json")).expect("B's export");
    serde_json::from_value(value["types"].clone()).expect("stored types")
}

fn raw(t: &TestDb, collection: &str) -> docrel::mongodb::Collection<BsonDoc> {
    t.db.collection::<BsonDoc>(collection)
}

async fn all(t: &TestDb, collection: &str) -> Vec<BsonDoc> {
    use futures::TryStreamExt;
    raw(t, collection).find(doc! {}).await.expect("find").try_collect().await.expect("read")
}

/// Renames parts until `control` holds `{_id: "stop"}`; returns how many.
async fn rename_until_stopped(db: &docrel::mongodb::Database, tag: &str) -> docrel::Result<u64> {
    // Parts above RENAMED are never renamed: only a backfill fixes their copies.
    let parts: Vec<Part> = Part::repo(db).find(Part::fields().code.lte(RENAMED)).to_vec().await?;
    let control = db.collection::<BsonDoc>("rl_control");
    let mut n = 0u64;
    while control.find_one(doc! {"_id": "stop"}).await?.is_none() {
        let part = &parts[(n as usize * 7 + tag.len()) % parts.len()];
        let name = format!("{}-{tag}-{n}", part.code);
        Part::repo(db).update_by_id(&part.id, Part::fields().name.set(name)).await?;
        n += 1;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(n)
}

/// The old writer, when this binary runs as the child of
/// `a_copy_added_and_removed_online_is_true_when_the_change_completes`;
/// without its variable it does nothing.
#[tokio::test]
#[ignore = "run by rolling_deploy's own test as a second process"]
async fn rolling_writer() -> docrel::Result<()> {
    let Ok(name) = std::env::var(DB_VARIABLE) else { return Ok(()) };
    docrel::schema::set_lease(LEASE);
    let client = docrel::connect_from_env().await?;
    let n = rename_until_stopped(&client.database(&name), "old").await?;
    println!("@renamed {n}");
    Ok(())
}

/// The old writer's process, killed if the test ends early.
struct OldWriter(Option<std::process::Child>);

impl OldWriter {
    fn start(db: &str) -> OldWriter {
        let exe = std::env::current_exe().expect("this test binary");
        let child = std::process::Command::new(exe)
            .args(["rolling_writer", "--exact", "--ignored", "--nocapture"])
            .env(DB_VARIABLE, db)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("start the old writer");
        OldWriter(Some(child))
    }

    /// Waits for it to stop: whether it succeeded, and how many renames it made.
    fn finish(mut self) -> (bool, u64, String) {
        let out = self.0.take().expect("running").wait_with_output().expect("old writer");
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        let renamed =
            said.lines().find_map(|l| l.strip_prefix("@renamed ")).and_then(|n| n.trim().parse().ok()).unwrap_or(0);
        (out.status.success(), renamed, said)
    }
}

impl Drop for OldWriter {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Each product's copied names against the parts' names: the stale ones.
async fn stale_copies(t: &TestDb) -> Vec<String> {
    let names: std::collections::HashMap<ObjectId, String> = all(t, "fl_parts")
        .await
        .iter()
        .map(|p| (p.get_object_id("_id").unwrap(), p.get_str("name").unwrap().to_owned()))
        .collect();
    let mut stale = Vec::new();
    for product in all(t, "fl_products").await {
        for e in product.get_array("parts").unwrap() {
            let e = e.as_document().unwrap();
            let (id, copy) = (e.get_object_id("id").unwrap(), e.get_str("name").unwrap_or("<none>"));
            if names.get(&id).map(String::as_str) != Some(copy) {
                stale.push(format!("{id}: {copy} != {:?}", names.get(&id)));
            }
        }
    }
    stale
}

#[tokio::test]
async fn a_copy_added_and_removed_online_is_true_when_the_change_completes() -> docrel::Result<()> {
    docrel::schema::set_lease(LEASE);
    let t = TestDb::new("rolling").await?;
    docrel::schema::set_lease_for(&t.db, LEASE);
    // Version 1 of the fleet: parts and bins, no copies.
    docrel::schema::publish(&t.db).await?;
    Bin::repo(&t.db).insert(&Bin { id: 1 }).await?;
    let parts: Vec<Part> = (1..=PARTS)
        .map(|code| Part { id: ObjectId::new(), code, name: format!("p{code}"), rank: code, bin: 1 })
        .collect();
    Part::repo(&t.db).insert_many(&parts).await?;
    // Products written by version 2 before the change: their copies are
    // whatever it read then (here: wrong, so only the backfill fixes them).
    let products: Vec<BsonDoc> = (0..4)
        .map(|i| {
            let refs: Vec<Bson> =
                parts.iter().skip(i).step_by(3).map(|p| doc! {"id": p.id, "name": "unknown"}.into()).collect();
            doc! {"_id": i as i32, "parts": refs}
        })
        .collect();
    raw(&t, "fl_products").insert_many(products).await.expect("insert products");

    let old = OldWriter::start(t.db.name());
    let new_db = t.db.clone();
    let new = tokio::spawn(async move { rename_until_stopped(&new_db, "new").await });
    tokio::time::sleep(LEASE).await;

    let mut steps = Vec::new();
    let added = change(&t.db, b_schema()).run(|| false, |s| steps.push(s.to_owned())).await?;
    assert!(added.complete(), "{added:?} {steps:?}");
    // The parts fill the copies and the subset; the tasks and people, the
    // two sides of B's two-way reference.
    assert_eq!(added.diff.repairs, ["fl_parts", "fl_people", "fl_tasks"], "{added:?}");
    assert!(added.fixed > 0, "the backfill rewrote the copies made before: {added:?}");
    // Both writers go on under the new rules, then stop.
    tokio::time::sleep(LEASE * 2).await;
    raw(&t, "rl_control").insert_one(doc! {"_id": "stop"}).await.expect("stop");
    let renamed_new = new.await.expect("new writer")?;
    let (ok, renamed_old, said) = old.finish();
    assert!(ok, "the old writer failed: {said}");
    assert!(renamed_old > 10 && renamed_new > 10, "both wrote: old {renamed_old}, new {renamed_new}");
    assert_eq!(stale_copies(&t).await, Vec::<String>::new());
    let report = docrel::admin::checks::verify(&t.db, Some("fl_parts"))?.run(|| false, |_, _| {}).await?;
    assert_eq!(report.found(), 0, "{report:?}");

    // Running the same change again finds it complete.
    let again = change(&t.db, b_schema()).run(|| false, |_| {}).await?;
    assert!(again.resumed && again.complete(), "{again:?}");

    // Version 3 no longer copies part names into products.
    raw(&t, "rl_control").delete_one(doc! {"_id": "stop"}).await.expect("go");
    let old = OldWriter::start(t.db.name());
    let removed = change(&t.db, b_schema()).remove("fl_products", "parts.name").run(|| false, |_| {}).await?;
    assert!(removed.complete() && removed.removed == ["fl_products.parts.name"], "{removed:?}");
    let stored = stored::load(&t.db).await?;
    let products = stored.iter().find(|s| s.collection == "fl_products").expect("products");
    assert!(products.relations[0].copies.is_empty(), "{products:?}");
    tokio::time::sleep(LEASE * 2).await;
    raw(&t, "rl_control").insert_one(doc! {"_id": "stop"}).await.expect("stop");
    let (ok, _, said) = old.finish();
    assert!(ok, "the old writer failed: {said}");
    // The rules that stay (the bins' subset of parts) are still true.
    let report = docrel::admin::checks::verify(&t.db, Some("fl_parts"))?.run(|| false, |_, _| {}).await?;
    assert_eq!(report.found(), 0, "{report:?}");
    Ok(())
}

#[tokio::test]
async fn a_process_that_cannot_confirm_the_schema_within_its_lease_refuses_to_write() -> docrel::Result<()> {
    docrel::schema::set_lease(LEASE);
    let t = TestDb::new("rolling_lease").await?;
    docrel::schema::set_lease_for(&t.db, LEASE);
    Bin::repo(&t.db).insert(&Bin { id: 1 }).await?;
    // A schema this docrel cannot read (a newer format) is published.
    let schema = raw(&t, stored::SCHEMA_COLLECTION);
    schema.insert_one(doc! {"_id": "fl_future", "format": 99, "type": {}}).await.expect("insert");
    // Within the lease, writes go on; after it, they are refused.
    Bin::repo(&t.db).insert(&Bin { id: 2 }).await?;
    tokio::time::sleep(LEASE + Duration::from_millis(100)).await;
    let err = Bin::repo(&t.db).insert(&Bin { id: 3 }).await.unwrap_err();
    assert!(matches!(err, Error::SchemaLease { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("format 99") && text.contains("Nothing was written"), "{text}");
    assert!(raw(&t, "fl_bins").find_one(doc! {"_id": 3}).await.expect("find").is_none());
    // Reads go on.
    assert!(Bin::repo(&t.db).get(&1).await?.is_some());
    // Once the schema reads again, so do writes.
    schema.delete_one(doc! {"_id": "fl_future"}).await.expect("delete");
    Bin::repo(&t.db).insert(&Bin { id: 3 }).await?;
    assert!(raw(&t, "fl_bins").find_one(doc! {"_id": 3}).await.expect("find").is_some());
    Ok(())
}

#[tokio::test]
async fn the_first_write_to_a_database_obeys_its_stored_schema() -> docrel::Result<()> {
    docrel::schema::set_lease(LEASE);
    let t = TestDb::new("rolling_first").await?;
    // A database this process never wrote to, whose data and schema other
    // programs wrote.
    let db = t.client.database(&format!("{}_b", t.db.name()));
    let part = ObjectId::new();
    db.collection::<BsonDoc>("fl_bins").insert_one(doc! {"_id": 1}).await.unwrap();
    let stored_part = doc! {"_id": part, "code": 1, "name": "bolt", "rank": 1, "bin": 1};
    db.collection::<BsonDoc>("fl_parts").insert_one(stored_part).await.unwrap();
    db.collection::<BsonDoc>("fl_products")
        .insert_one(doc! {"_id": 1, "parts": [{"id": part, "name": "bolt"}]})
        .await
        .unwrap();
    stored::publish_types(&db, &b_schema()).await?;
    assert_eq!(docrel::schema::confirmed_ago(&db), None);
    // This process's first write there reads the rules and follows them.
    Part::repo(&db).update_by_id(&part, Part::fields().name.set("hex bolt".to_owned())).await?;
    assert!(docrel::schema::confirmed_ago(&db).is_some());
    let product = db.collection::<BsonDoc>("fl_products").find_one(doc! {"_id": 1}).await.unwrap().unwrap();
    let copy = product.get_array("parts").unwrap()[0].as_document().unwrap().get_str("name").unwrap().to_owned();
    db.drop().await.unwrap();
    assert_eq!(copy, "hex bolt");
    Ok(())
}

#[tokio::test]
async fn keep_current_follows_a_publish_and_keeps_the_lease_without_reads_of_its_own() -> docrel::Result<()> {
    docrel::schema::set_lease(LEASE);
    let t = TestDb::new("rolling_watch").await?;
    docrel::schema::set_lease_for(&t.db, LEASE);
    Bin::repo(&t.db).insert(&Bin { id: 1 }).await?;
    let part = Part { id: ObjectId::new(), code: 1, name: "bolt".into(), rank: 1, bin: 1 };
    Part::repo(&t.db).insert(&part).await?;
    raw(&t, "fl_products").insert_one(doc! {"_id": 1, "parts": [{"id": part.id, "name": "bolt"}]}).await.unwrap();
    let watch = stored::keep_current(&t.db, Duration::from_secs(5));
    tokio::time::sleep(LEASE * 2).await;
    let ago = docrel::schema::confirmed_ago(&t.db).expect("confirmed");
    assert!(ago < LEASE, "the stream renews the lease: confirmed {ago:?} ago");
    // Another program publishes; the stream brings its rules here.
    stored::publish_types(&t.db, &b_schema()).await?;
    tokio::time::sleep(LEASE / 2).await;
    let mark = t.trips.mark();
    Part::repo(&t.db).update_by_id(&part.id, Part::fields().name.set("hex bolt".to_owned())).await?;
    let commands = t.trips.commands_since(mark);
    watch.abort();
    let product = raw(&t, "fl_products").find_one(doc! {"_id": 1}).await.unwrap().unwrap();
    let copy = product.get_array("parts").unwrap()[0].as_document().unwrap().get_str("name").unwrap().to_owned();
    assert_eq!(copy, "hex bolt", "{commands:?}");
    assert!(!commands.iter().any(|c| c == "find _docrel_schema"), "the write read no schema: {commands:?}");
    Ok(())
}
