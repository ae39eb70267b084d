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
use docrel::{Document, Embedded};
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

/// A second client of the test's database (another process would be
/// the same), which the fail point does not hold.
async fn other_client(t: &TestDb, app: &str) -> docrel::Result<docrel::mongodb::Database> {
    let uri = std::env::var("MONGODB_URI").expect("MONGODB_URI");
    let mut options = docrel::options(&uri).await?;
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
    let report = docrel::fanout::verify::<Part>(&t.db).run().await?;
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
    let report = docrel::fanout::verify::<Part>(&t.db).run().await?;
    assert_eq!(report.found(), 0, "{report:?}");
    Ok(())
}
