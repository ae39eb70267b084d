//! Denormalized copies kept true by fan-out updaters, in both directions of
//! the reference texts, with round trips, concurrency, faults and repair.

use docrel::bson::{doc, oid::ObjectId, Bson, DateTime, Document as BsonDoc};
use docrel::check;
use docrel::testing::TestDb;
use docrel::{Document, Embedded, Error, Filter};
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};

/// The server has one `failCommand` fail point: the tests that set it take turns.
static FAIL_POINT: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    partno: String,
    name: String,
    qty: i32,
    cost: f64,
    price: f64,
    #[reference(to = Product)]
    product: ObjectId,
    #[denormalize(from = Product::name, via = product)]
    product_name: String,
    #[denormalize(from = Product::catalog_number, via = product)]
    product_catalog_number: i32,
}

#[derive(Embedded, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct PartRef {
    id: ObjectId,
    #[denormalize(from = Part::name)]
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "products")]
struct Product {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    manufacturer: String,
    catalog_number: i32,
    #[reference(many, to = Part, max = 2000, on_delete = pull)]
    parts: Vec<PartRef>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "hosts")]
struct Host {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    ipaddr: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "logmsg")]
struct LogMsg {
    #[serde(rename = "_id")]
    id: ObjectId,
    time: DateTime,
    message: String,
    #[denormalize(from = Host::ipaddr, via = host)]
    ipaddr: String,
    #[parent_ref(to = Host, sort = "-time")]
    host: ObjectId,
}

struct Catalog {
    product: Product,
    other: Product,
    parts: Vec<Part>,
    holders: Vec<Product>,
}

/// One product ("left-handed smoke shifter") made of 3 parts; 5 more
/// products hold the first part (one of them twice); one holds none.
async fn catalog(t: &TestDb) -> docrel::Result<Catalog> {
    let shifter = ObjectId::new();
    let parts: Vec<Part> = ["#4 grommet", "fan blade assembly", "power switch"]
        .iter()
        .enumerate()
        .map(|(i, name)| Part {
            id: ObjectId::new(),
            partno: format!("123-aff-45{i}"),
            name: (*name).into(),
            qty: 94,
            cost: 0.94,
            price: 3.99,
            product: shifter,
            product_name: "stale, filled on insert".into(),
            product_catalog_number: 0,
        })
        .collect();
    let product = Product {
        id: shifter,
        name: "left-handed smoke shifter".into(),
        manufacturer: "Acme Corp".into(),
        catalog_number: 1234,
        parts: parts.iter().map(|p| PartRef { id: p.id, name: p.name.clone() }).collect(),
    };
    Product::repo(&t.db).insert(&product).await?;
    Part::repo(&t.db).insert_many(&parts).await?;
    let holders: Vec<Product> = (0..5)
        .map(|i| Product {
            id: ObjectId::new(),
            name: format!("holder {i}"),
            manufacturer: "Acme Corp".into(),
            catalog_number: 2000 + i,
            parts: if i == 0 {
                vec![PartRef { id: parts[0].id, name: "?".into() }, PartRef { id: parts[0].id, name: "?".into() }]
            } else {
                vec![PartRef { id: parts[0].id, name: "?".into() }]
            },
        })
        .collect();
    Product::repo(&t.db).insert_many(&holders).await?;
    let other = Product {
        id: ObjectId::new(),
        name: "other".into(),
        manufacturer: "Acme Corp".into(),
        catalog_number: 3000,
        parts: vec![PartRef { id: parts[1].id, name: "?".into() }],
    };
    Product::repo(&t.db).insert(&other).await?;
    Ok(Catalog { product, other, parts, holders })
}

async fn raw(t: &TestDb, collection: &str, id: ObjectId) -> BsonDoc {
    t.db.collection::<BsonDoc>(collection).find_one(doc! {"_id": id}).await.unwrap().expect("stored")
}

fn copied_names(product: &BsonDoc) -> Vec<String> {
    product
        .get_array("parts")
        .unwrap()
        .iter()
        .map(|e| e.as_document().unwrap().get_str("name").unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn inserting_fills_copies_from_their_sources_with_one_read() -> docrel::Result<()> {
    let t = TestDb::new("fill").await?;
    let c = catalog(&t).await?;
    // The shapes of the reference text, copies filled from the sources.
    let part = raw(&t, "parts", c.parts[0].id).await;
    assert_eq!(part.get_str("name").unwrap(), "#4 grommet");
    assert_eq!(part.get_str("product_name").unwrap(), "left-handed smoke shifter");
    assert_eq!(part.get_i32("product_catalog_number").unwrap(), 1234);
    let holder = raw(&t, "products", c.holders[0].id).await;
    assert_eq!(
        holder.get_array("parts").unwrap(),
        &vec![
            Bson::Document(doc! {"id": c.parts[0].id, "name": "#4 grommet"}),
            Bson::Document(doc! {"id": c.parts[0].id, "name": "#4 grommet"}),
        ]
    );
    // Three new products holding parts: one read of `parts` to fill their
    // copies, then the insert in a transaction, since `insert_many` is all
    // or nothing. Once it committed, one read of `parts` to confirm no part
    // changed since the fill and, since products are sources of copies too,
    // one `distinct` of the parts that may already refer to them: after the
    // commit, because the transaction read a snapshot, which misses a part
    // renamed or a holder written by another client meanwhile
    // (tests/snapshot_races.rs).
    let more: Vec<Product> = (0..3)
        .map(|i| Product {
            id: ObjectId::new(),
            name: format!("new {i}"),
            manufacturer: "Acme Corp".into(),
            catalog_number: 5000 + i,
            parts: c.parts.iter().map(|p| PartRef { id: p.id, name: String::new() }).collect(),
        })
        .collect();
    let mark = t.trips.mark();
    Product::repo(&t.db).insert_many(&more).await?;
    assert_eq!(
        t.trips.commands_since(mark),
        ["find parts", "insert products", "commitTransaction", "find parts", "distinct parts"]
    );
    assert_eq!(
        copied_names(&raw(&t, "products", more[2].id).await),
        ["#4 grommet", "fan blade assembly", "power switch"]
    );
    Ok(())
}

#[tokio::test]
async fn renaming_a_part_rewrites_every_copy_with_one_update_many() -> docrel::Result<()> {
    let t = TestDb::new("rename_part").await?;
    let c = catalog(&t).await?;
    let other_before = raw(&t, "products", c.other.id).await;
    let mark = t.trips.mark();
    Part::repo(&t.db).update_by_id(&c.parts[0].id, Part::fields().name.set("#5 grommet".into())).await?;
    // MongoDB 8.0+: the part and its copies in one `bulkWrite` (tests/old_wire.rs: before 8.0, one update each).
    assert_eq!(t.trips.commands_since(mark), ["bulkWrite"]);
    assert_eq!(
        copied_names(&raw(&t, "products", c.product.id).await),
        ["#5 grommet", "fan blade assembly", "power switch"]
    );
    // Every matching element, not only the first (arrayFilters, not `$`).
    assert_eq!(copied_names(&raw(&t, "products", c.holders[0].id).await), ["#5 grommet", "#5 grommet"]);
    for h in &c.holders[1..] {
        assert_eq!(copied_names(&raw(&t, "products", h.id).await), ["#5 grommet"]);
    }
    // Nothing else changed.
    assert_eq!(raw(&t, "products", c.other.id).await, other_before);
    // An update of a field nobody copies costs no extra round trip.
    let mark = t.trips.mark();
    Part::repo(&t.db).update_by_id(&c.parts[0].id, Part::fields().qty.inc(1)).await?;
    assert_eq!(t.trips.commands_since(mark), ["update parts"]);
    // Idempotent: nothing is stale, a repair finds and writes nothing.
    let report = check::copies::<Part>().repair(&t.db).run().await?;
    assert_eq!((report.scanned, report.stale, report.fixed, report.dangling), (7, 0, 0, 0));
    Ok(())
}

#[tokio::test]
async fn renaming_a_product_rewrites_its_parts_in_one_update() -> docrel::Result<()> {
    let t = TestDb::new("rename_product").await?;
    let c = catalog(&t).await?;
    let mark = t.trips.mark();
    let both =
        Product::fields().name.set("right-handed smoke shifter".into()).and(Product::fields().catalog_number.set(4321));
    Product::repo(&t.db).update_by_id(&c.product.id, both).await?;
    assert_eq!(t.trips.commands_since(mark), ["bulkWrite"], "both fields and their copies in one bulkWrite");
    for p in &c.parts {
        let stored = raw(&t, "parts", p.id).await;
        assert_eq!(stored.get_str("product_name").unwrap(), "right-handed smoke shifter");
        assert_eq!(stored.get_i32("product_catalog_number").unwrap(), 4321);
    }
    // A replace that changes a copied field fans out; one that does not, does not.
    let mut renamed = c.product.clone();
    renamed.name = "smoke shifter".into();
    renamed.catalog_number = 4321;
    let mark = t.trips.mark();
    Product::repo(&t.db).replace(&renamed).await?;
    assert_eq!(t.trips.commands_since(mark), ["find parts", "findAndModify products", "update parts", "find parts"]);
    assert_eq!(raw(&t, "parts", c.parts[2].id).await.get_str("product_name").unwrap(), "smoke shifter");
    renamed.manufacturer = "Acme Inc".into();
    let mark = t.trips.mark();
    Product::repo(&t.db).replace(&renamed).await?;
    assert_eq!(t.trips.commands_since(mark), ["find parts", "findAndModify products", "find parts"]);
    // The source's bookkeeping survives a replace; the reference fields are as written.
    let stored = raw(&t, "products", c.product.id).await;
    assert_eq!(stored.get_str("manufacturer").unwrap(), "Acme Inc");
    // Its version was set when it was inserted and went up by one per
    // docrel write of a copied field (two here: the update and the first replace).
    let v = stored.get_document("_docrel").unwrap().get_i64("v").unwrap();
    assert!(v > 1_600_000_000_000_000, "a first version from the clock, in microseconds: {v}");
    Ok(())
}

/// An update by `_id` that only `$set`s every field copied from its source
/// knows what it fans out: the version is stamped by the client and the
/// write is a plain `update` (no read-back). One that leaves a copied field
/// as stored reads it back with `findAndModify`, so the copy it rewrites
/// keeps the stored value (and is not unset).
#[tokio::test]
async fn a_write_that_sets_every_copied_field_needs_no_read_back() -> docrel::Result<()> {
    let t = TestDb::new("known_values").await?;
    let c = catalog(&t).await?;
    let repo = Product::repo(&t.db);
    let (name, number) = (Product::fields().name, Product::fields().catalog_number);
    let version = |d: BsonDoc| d.get_document("_docrel").unwrap().get_i64("v").unwrap();
    let v0 = version(raw(&t, "products", c.product.id).await);
    let mark = t.trips.mark();
    repo.update_by_id(&c.product.id, name.set("shifter".into()).and(number.set(77))).await?;
    assert_eq!(t.trips.commands_since(mark), ["bulkWrite"]);
    let v1 = version(raw(&t, "products", c.product.id).await);
    assert!(v1 > v0, "the stamp moves the version on: {v0} -> {v1}");
    for p in &c.parts {
        let stored = raw(&t, "parts", p.id).await;
        assert_eq!(
            (stored.get_str("product_name").unwrap(), stored.get_i32("product_catalog_number").unwrap()),
            ("shifter", 77)
        );
    }
    let mark = t.trips.mark();
    repo.update_by_id(&c.product.id, name.set("shifter 2".into())).await?;
    assert_eq!(t.trips.commands_since(mark), ["findAndModify products", "update parts"]);
    assert!(version(raw(&t, "products", c.product.id).await) > v1);
    for p in &c.parts {
        let stored = raw(&t, "parts", p.id).await;
        assert_eq!(
            (stored.get_str("product_name").unwrap(), stored.get_i32("product_catalog_number").unwrap()),
            ("shifter 2", 77)
        );
    }
    // A version ahead of this client's clock (another writer's clock ahead):
    // the stamped write matches nothing, and the write goes the usual way.
    let ahead = i64::MAX / 4;
    t.db.collection::<BsonDoc>("products")
        .update_one(doc! {"_id": c.product.id}, doc! {"$set": {"_docrel.v": ahead}})
        .await
        .unwrap();
    let mark = t.trips.mark();
    repo.update_by_id(&c.product.id, name.set("shifter 3".into()).and(number.set(78))).await?;
    // (The batch's fan-out wrote the copies at the stamp; the usual way's,
    // at the version past the other writer's, writes them again.)
    assert_eq!(t.trips.commands_since(mark), ["bulkWrite", "findAndModify products", "update parts"]);
    assert_eq!(version(raw(&t, "products", c.product.id).await), ahead + 1);
    for p in &c.parts {
        let stored = raw(&t, "parts", p.id).await;
        assert_eq!(
            (stored.get_str("product_name").unwrap(), stored.get_i32("product_catalog_number").unwrap()),
            ("shifter 3", 78)
        );
    }
    let report = check::copies::<Part>().repair(&t.db).run().await?;
    assert_eq!((report.stale, report.fixed), (0, 0));
    Ok(())
}

#[tokio::test]
async fn changing_a_hosts_ipaddr_rewrites_its_log_messages() -> docrel::Result<()> {
    let t = TestDb::new("ipaddr").await?;
    let goofy = Host { id: ObjectId::new(), name: "goofy.example.com".into(), ipaddr: "127.66.66.66".into() };
    let other = Host { id: ObjectId::new(), name: "other".into(), ipaddr: "10.0.0.1".into() };
    Host::repo(&t.db).insert_many(&[goofy.clone(), other.clone()]).await?;
    let msgs: Vec<LogMsg> = (0..50)
        .map(|i| LogMsg {
            id: ObjectId::new(),
            time: DateTime::from_millis(1_395_999_761_382 + i),
            message: "cpu is on fire!".into(),
            ipaddr: String::new(),
            host: if i % 5 == 0 { other.id } else { goofy.id },
        })
        .collect();
    LogMsg::repo(&t.db).insert_many(&msgs).await?;
    let first = raw(&t, "logmsg", msgs[1].id).await;
    assert_eq!(first.get_str("ipaddr").unwrap(), "127.66.66.66");
    assert_eq!(first.get_object_id("host").unwrap(), goofy.id);

    let mark = t.trips.mark();
    Host::repo(&t.db).update_by_id(&goofy.id, Host::fields().ipaddr.set("127.77.77.77".into())).await?;
    assert_eq!(t.trips.commands_since(mark), ["bulkWrite"]);
    let logmsg = t.db.collection::<BsonDoc>("logmsg");
    assert_eq!(logmsg.count_documents(doc! {"ipaddr": "127.77.77.77"}).await.unwrap(), 40);
    assert_eq!(logmsg.count_documents(doc! {"ipaddr": "10.0.0.1"}).await.unwrap(), 10);
    Ok(())
}

#[tokio::test]
async fn update_many_of_sources_fans_out_each_one() -> docrel::Result<()> {
    let t = TestDb::new("many_sources").await?;
    let c = catalog(&t).await?;
    let out = Part::repo(&t.db).update_many(Part::fields().qty.eq(94), Part::fields().name.set("spare".into())).await?;
    assert_eq!(out.matched, 3);
    assert_eq!(copied_names(&raw(&t, "products", c.product.id).await), ["spare", "spare", "spare"]);
    assert_eq!(copied_names(&raw(&t, "products", c.other.id).await), ["spare"]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_renames_converge_on_the_final_name() -> docrel::Result<()> {
    let t = TestDb::new("converge").await?;
    let c = catalog(&t).await?;
    let part = c.parts[0].id;
    let mut tasks = Vec::new();
    for task in 0..8u64 {
        let db = t.db.clone();
        tasks.push(tokio::spawn(async move {
            // A cheap deterministic shuffle of pauses: random interleavings.
            let mut x = task.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            for round in 0..50 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if x % 3 == 0 {
                    tokio::task::yield_now().await;
                }
                let name = format!("grommet {task}-{round}");
                Part::repo(&db).update_by_id(&part, Part::fields().name.set(name)).await?;
            }
            Ok::<_, Error>(())
        }));
    }
    for task in tasks {
        task.await.expect("task")?;
    }
    let final_name = Part::repo(&t.db).require(&part).await?.name;
    let products: Vec<BsonDoc> =
        t.db.collection::<BsonDoc>("products").find(doc! {}).await.unwrap().try_collect().await.unwrap();
    let mut copies = 0;
    for p in &products {
        for e in p.get_array("parts").unwrap().iter().map(|e| e.as_document().unwrap()) {
            if e.get_object_id("id").unwrap() == part {
                assert_eq!(e.get_str("name").unwrap(), final_name, "product {}", p.get_str("name").unwrap());
                copies += 1;
            }
        }
    }
    assert_eq!(copies, 7);
    let report = check::copies::<Part>().verify(&t.db).run().await?;
    assert_eq!(report.stale, 0);
    Ok(())
}

#[tokio::test]
async fn a_fan_out_cut_by_a_failure_is_reported_and_repaired() -> docrel::Result<()> {
    let _one = FAIL_POINT.lock().await;
    let t = TestDb::new("fault").await?;
    let c = catalog(&t).await?;
    let snapshot = |t: &TestDb| {
        let coll = t.db.collection::<BsonDoc>("products");
        async move { coll.find(doc! {}).sort(doc! {"_id": 1}).await.unwrap().try_collect::<Vec<BsonDoc>>().await.unwrap() }
    };
    // The one `bulkWrite` of the rename is cut (its answer lost): what it
    // wrote is unknown, so the rename goes the other way, which writes it
    // all again at a newer version, and returns Ok with every copy true.
    let admin = t.client.database("admin");
    let fail_point = |mode: Bson, commands: Vec<&str>| {
        admin.run_command(doc! {
            "configureFailPoint": "failCommand",
            "mode": mode,
            "data": {"failCommands": commands, "closeConnection": true, "appName": t.db.name()},
        })
    };
    fail_point(doc! {"times": 1}.into(), vec!["bulkWrite"])
        .await
        .expect("the embedded server runs with --enable-test-commands");
    let renamed = Part::repo(&t.db).update_by_id(&c.parts[0].id, Part::fields().name.set("#5 grommet".into())).await;
    fail_point("off".into(), vec![]).await.expect("fail point off");
    renamed?;
    assert_eq!(check::copies::<Part>().verify(&t.db).run().await?.stale, 0, "the other way rewrote every copy");
    let holders: Vec<&Product> = c.holders.iter().collect();
    for h in holders {
        assert!(copied_names(&raw(&t, "products", h.id).await).contains(&"#5 grommet".to_owned()));
    }

    let before = snapshot(&t).await;
    // The other way cut after the part was renamed: tests/old_wire.rs.
    Part::repo(&t.db).update_by_id(&c.parts[0].id, Part::fields().name.set("#6 grommet".into())).await?;
    t.db.collection::<BsonDoc>("products").delete_many(doc! {}).await?;
    t.db.collection::<BsonDoc>("products").insert_many(before.clone()).await?;
    let report = check::copies::<Part>().verify(&t.db).run().await?;
    assert_eq!((report.scanned, report.stale, report.fixed), (7, 6, 0));
    let mut progress = Vec::new();
    let report =
        check::copies::<Part>().repair(&t.db).batch(3).on_progress(|p| progress.push(p.report.scanned)).run().await?;
    assert_eq!((report.stale, report.fixed), (6, 6));
    assert_eq!(progress, [3, 6, 7]);
    let after = snapshot(&t).await;
    for (b, a) in before.iter().zip(&after) {
        let held = b
            .get_array("parts")
            .unwrap()
            .iter()
            .any(|e| e.as_document().unwrap().get_object_id("id").unwrap() == c.parts[0].id);
        if held {
            assert!(copied_names(a).contains(&"#6 grommet".to_owned()));
            assert!(!copied_names(a).contains(&"#4 grommet".to_owned()));
        } else {
            assert_eq!(a, b, "a product without the part is untouched");
        }
    }
    assert_eq!(check::copies::<Part>().verify(&t.db).run().await?.stale, 0);
    Ok(())
}

#[tokio::test]
async fn repair_is_resumable_and_reports_dangling_copies() -> docrel::Result<()> {
    let t = TestDb::new("resume").await?;
    let c = catalog(&t).await?;
    // Written outside docrel: every copy of part 0 and 1 is now stale.
    let parts = t.db.collection::<BsonDoc>("parts");
    parts
        .update_many(doc! {"_id": {"$in": [c.parts[0].id, c.parts[1].id]}}, doc! {"$set": {"name": "renamed by hand"}})
        .await
        .unwrap();
    parts.delete_one(doc! {"_id": c.parts[2].id}).await.unwrap();

    let first = check::copies::<Part>().repair(&t.db).batch(2).max_batches(2).run().await?;
    assert_eq!(first.scanned, 4);
    let checkpoint = first.checkpoint.clone().expect("stopped early");
    let rest = check::copies::<Part>().repair(&t.db).batch(2).resume(Some(checkpoint)).run().await?;
    assert_eq!(rest.checkpoint, None);
    assert_eq!(first.scanned + rest.scanned, 7);
    assert_eq!(first.stale + rest.stale, 7);
    // The shifter listed the deleted part: `on_delete = pull` pulls it.
    assert_eq!(first.dangling + rest.dangling, 1);
    assert_eq!(first.unfixable + rest.unfixable, 0);
    let again = check::copies::<Part>().verify(&t.db).run().await?;
    assert_eq!((again.stale, again.dangling), (0, 0));
    assert_eq!(copied_names(&raw(&t, "products", c.product.id).await), ["renamed by hand", "renamed by hand"]);
    let _ = Filter::all();
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_worker_killed_mid_stream_resumes_without_losing_a_change() -> docrel::Result<()> {
    use docrel::denormalize::{Applied, SyncWorker};
    use std::time::{Duration, Instant};
    let t = TestDb::new("sync").await?;
    let c = catalog(&t).await?;
    let deferred = Part::repo(&t.db).deferred_fan_out();
    let parts = [c.parts[0].id, c.parts[1].id];

    // The worker has a client of its own, as in a separate process: the
    // round trips counted below are the application's alone.
    let uri = std::env::var(docrel::client::URI_VARIABLE).expect("MONGODB_URI");
    let worker_db = docrel::connect(&uri).await?.database(t.db.name());
    let start_worker = |tx: tokio::sync::mpsc::UnboundedSender<Applied>| {
        let worker = SyncWorker::new(&worker_db, "catalog");
        tokio::spawn(async move { worker.run(move |a| drop(tx.send(a.clone()))).await })
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let first = start_worker(tx);
    let deadline = Instant::now() + Duration::from_secs(30);
    while SyncWorker::new(&t.db, "catalog").stored_token().await?.is_none() {
        assert!(Instant::now() < deadline, "the worker never opened its change stream");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Deferred writes: one round trip each, the copies follow.
    let mark = t.trips.mark();
    deferred.update_by_id(&parts[0], Part::fields().name.set("n0".into())).await?;
    assert_eq!(t.trips.commands_since(mark), ["update parts"]);
    for i in 1..30 {
        deferred.update_by_id(&parts[i % 2], Part::fields().name.set(format!("n{i}"))).await?;
    }
    let mut applied = Vec::new();
    while applied.len() < 10 {
        let a = tokio::time::timeout(Duration::from_secs(30), rx.recv()).await.expect("the worker applies changes");
        applied.extend(a);
    }
    first.abort(); // killed mid-stream
    let _ = first.await;

    for i in 30..40 {
        deferred.update_by_id(&parts[i % 2], Part::fields().name.set(format!("n{i}"))).await?;
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let second = start_worker(tx);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        while let Ok(a) = rx.try_recv() {
            applied.push(a);
        }
        if check::copies::<Part>().verify(&t.db).run().await?.stale == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "the restarted worker did not catch up");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    second.abort();

    assert_eq!(copied_names(&raw(&t, "products", c.product.id).await), ["n38", "n39", "power switch"]);
    for h in &c.holders {
        assert!(copied_names(&raw(&t, "products", h.id).await).iter().all(|n| n == "n38"));
    }
    // Never out of order: each source's applied versions only grow.
    for p in parts {
        let versions: Vec<i64> = applied.iter().filter(|a| a.id == Bson::ObjectId(p)).map(|a| a.version).collect();
        assert!(!versions.is_empty());
        assert!(versions.windows(2).all(|w| w[0] <= w[1]), "{versions:?}");
    }
    Ok(())
}

#[tokio::test]
async fn a_transactional_fan_out_commits_with_its_source_or_not_at_all() -> docrel::Result<()> {
    let _one = FAIL_POINT.lock().await;
    let t = TestDb::new("txn_fanout").await?;
    let c = catalog(&t).await?;
    let repo = Part::repo(&t.db).transactional_fan_out();
    let mark = t.trips.mark();
    repo.update_by_id(&c.parts[0].id, Part::fields().name.set("#7 grommet".into())).await?;
    assert_eq!(t.trips.commands_since(mark), ["findAndModify parts", "update products", "commitTransaction"]);
    assert_eq!(copied_names(&raw(&t, "products", c.holders[1].id).await), ["#7 grommet"]);

    // The fan-out fails: the source write is rolled back with it.
    t.client
        .database("admin")
        .run_command(doc! {
            "configureFailPoint": "failCommand",
            "mode": {"times": 1},
            "data": {"failCommands": ["update"], "errorCode": 2, "appName": t.db.name()},
        })
        .await
        .expect("fail point");
    let err = repo.update_by_id(&c.parts[0].id, Part::fields().name.set("#8 grommet".into())).await.unwrap_err();
    assert!(matches!(err, Error::FanOut { .. }), "{err}");
    assert_eq!(Part::repo(&t.db).require(&c.parts[0].id).await?.name, "#7 grommet");
    assert_eq!(copied_names(&raw(&t, "products", c.holders[1].id).await), ["#7 grommet"]);
    Ok(())
}

/// Issue 27, item 14: `transactional_fan_out()` holds for every write of a
/// source, not only an update by id. With the fan-out failing, an
/// `update_many`, a `replace` and a `save` leave the source as it was.
#[tokio::test]
async fn a_transactional_fan_out_holds_for_update_many_replace_and_save() -> docrel::Result<()> {
    let _one = FAIL_POINT.lock().await;
    let t = TestDb::new("txn_fanout_all").await?;
    let c = catalog(&t).await?;
    let repo = Part::repo(&t.db).transactional_fan_out();
    // The fan-out's `update`: after `skip` updates of the source itself.
    let t = &t;
    let fail_update = |skip: i32| async move {
        let mode = if skip == 0 {
            doc! {"times": 1}
        } else {
            doc! {"skip": skip}
        };
        t.client
            .database("admin")
            .run_command(doc! {
                "configureFailPoint": "failCommand",
                "mode": mode,
                "data": {"failCommands": ["update"], "errorCode": 2, "appName": t.db.name()},
            })
            .await
            .expect("fail point");
    };
    let fail_off = || async {
        let off = doc! {"configureFailPoint": "failCommand", "mode": "off"};
        t.client.database("admin").run_command(off).await.expect("fail point off");
    };
    let first = c.parts[0].id;

    // update_many: the sources' write and every copy commit together.
    fail_update(1).await;
    let filter = Part::fields().id.eq(first);
    let err = repo.update_many(filter, Part::fields().name.set("renamed".into())).await.unwrap_err();
    fail_off().await;
    assert!(matches!(err, Error::FanOut { .. }), "{err}");
    assert_eq!(raw(t, "parts", first).await.get_str("name").unwrap(), "#4 grommet");
    assert_eq!(copied_names(&raw(t, "products", c.holders[1].id).await), ["#4 grommet"]);
    repo.update_many(Part::fields().id.eq(first), Part::fields().name.set("renamed".into())).await?;
    assert_eq!(copied_names(&raw(t, "products", c.holders[1].id).await), ["renamed"]);

    // replace and save: likewise.
    let mut part = Part::repo(&t.db).require(&first).await?;
    for (i, save) in [false, true].into_iter().enumerate() {
        part.name = format!("replaced {i}");
        fail_update(0).await;
        let err = if save { repo.save(&part).await } else { repo.replace(&part).await }.unwrap_err();
        assert!(matches!(err, Error::FanOut { .. }), "{err}");
        let stored = raw(t, "parts", first).await;
        assert_eq!(stored.get_str("name").unwrap(), if i == 0 { "renamed" } else { "replaced 0" });
        if save {
            repo.save(&part).await?
        } else {
            repo.replace(&part).await?
        }
        assert_eq!(copied_names(&raw(t, "products", c.holders[1].id).await), [part.name.as_str()]);
    }
    Ok(())
}

// ---- a source both copied and summarized --------------------------------------------------

/// A gadget keeps its latest critiques (a subset); a reply copies its
/// critique's author: `Critique` is both copied and summarized.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "gadgets")]
struct Gadget {
    #[serde(rename = "_id")]
    id: i32,
    #[embed(max = 5, subset_of = Critique, sort = "-at", key = number)]
    critiques: Vec<CritiqueLine>,
}

#[derive(docrel::View, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[view(of = Critique)]
struct CritiqueLine {
    number: i32,
    author: String,
    at: DateTime,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "critiques")]
struct Critique {
    #[serde(rename = "_id")]
    id: ObjectId,
    number: i32,
    #[parent_ref(to = Gadget)]
    gadget: i32,
    author: String,
    at: DateTime,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "critique_replies")]
struct CritiqueReply {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Critique)]
    critique: ObjectId,
    #[denormalize(from = Critique::author, via = critique)]
    author: String,
}

#[tokio::test]
async fn the_short_update_of_a_copied_and_summarized_source_fans_out_and_rebuilds_the_subset() -> docrel::Result<()> {
    let t = TestDb::new("copied_and_summarized").await?;
    Gadget::repo(&t.db).insert(&Gadget { id: 1, critiques: vec![] }).await?;
    let critiques: Vec<Critique> = (1..=3)
        .map(|i| Critique {
            id: ObjectId::new(),
            number: i,
            gadget: 1,
            author: format!("author {i}"),
            at: DateTime::from_millis(i64::from(i) * 1_000),
        })
        .collect();
    Critique::repo(&t.db).insert_many(&critiques).await?;
    let c3 = &critiques[2];
    let reply = CritiqueReply { id: ObjectId::new(), critique: c3.id, author: String::new() };
    CritiqueReply::repo(&t.db).insert(&reply).await?;

    // Every field derived from a critique (the copied author, the summary's
    // fields and its parent) set literally: the stamped `update` (where the
    // general way sends `findAndModify`), the copy's fan-out, the subset's
    // rebuild, and, the parent field being written, the read of the other
    // parents the critique may have left.
    let f = Critique::fields();
    let update = f
        .gadget
        .set(1)
        .and(f.number.set(3))
        .and(f.author.set("Ann".into()))
        .and(f.at.set(DateTime::from_millis(9_000)));
    let mark = t.trips.mark();
    Critique::repo(&t.db).update_by_id(&c3.id, update).await?;
    assert_eq!(
        t.trips.commands_since(mark),
        [
            "update critiques",
            "update critique_replies",
            "findAndModify gadgets",
            "find critiques",
            "update gadgets",
            "distinct gadgets"
        ]
    );

    // As stored: the copy, the summary first (the newest), and the
    // critique's version.
    let stored_reply =
        t.db.collection::<BsonDoc>("critique_replies").find_one(doc! {"_id": reply.id}).await.unwrap().unwrap();
    assert_eq!(stored_reply.get_str("author").unwrap(), "Ann");
    let gadget = t.db.collection::<BsonDoc>("gadgets").find_one(doc! {"_id": 1}).await.unwrap().unwrap();
    let lines = gadget.get_array("critiques").unwrap();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0], Bson::Document(doc! {"number": 3, "author": "Ann", "at": DateTime::from_millis(9_000)}));
    let stored = t.db.collection::<BsonDoc>("critiques").find_one(doc! {"_id": c3.id}).await.unwrap().unwrap();
    assert!(stored.get_document("_docrel").unwrap().get_i64("v").unwrap() > 0);
    assert!(Gadget::rels().critiques.check(&t.db, &1).await?);
    Ok(())
}
