//! Before MongoDB 8.0 (no client-level `bulkWrite`) a rename sends the
//! source's `update` and then one per target path, as it did everywhere
//! before; a failure between them is reported and repaired. Simulated with
//! the test hook on the wire version (process-wide: every test of this
//! binary pretends MongoDB 7.0, wire version 21).

use docrel::bson::{doc, oid::ObjectId, Bson, Document as BsonDoc};
use docrel::check;
use docrel::client::deployment::pretend_wire_version;
use docrel::testing::TestDb;
use docrel::{Document, Embedded, Error};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "ow_parts")]
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
#[document(collection = "ow_products")]
struct Product {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = Part, max = 10)]
    parts: Vec<PartRef>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "ow_bins")]
struct Bin {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = Part, max = 10)]
    parts: Vec<PartRef>,
}

/// A part held by 3 products and a bin; returns it.
async fn catalog(t: &TestDb) -> docrel::Result<Part> {
    let part = Part { id: ObjectId::new(), name: "#4 grommet".into() };
    Part::repo(&t.db).insert(&part).await?;
    let held = || vec![PartRef { id: part.id, name: String::new() }];
    let products: Vec<Product> = (0..3).map(|_| Product { id: ObjectId::new(), parts: held() }).collect();
    Product::repo(&t.db).insert_many(&products).await?;
    Bin::repo(&t.db).insert(&Bin { id: ObjectId::new(), parts: held() }).await?;
    Ok(part)
}

async fn names(t: &TestDb, collection: &str) -> Vec<String> {
    let docs: Vec<BsonDoc> = {
        use futures::TryStreamExt;
        let cursor = t.db.collection::<BsonDoc>(collection).find(doc! {}).await.expect("find");
        cursor.try_collect().await.expect("read")
    };
    docs.iter()
        .flat_map(|d| {
            d.get_array("parts").unwrap().iter().map(|e| e.as_document().unwrap().get_str("name").unwrap().to_owned())
        })
        .collect()
}

#[tokio::test]
async fn before_8_0_a_rename_sends_one_update_per_collection() -> docrel::Result<()> {
    pretend_wire_version(Some(21));
    let t = TestDb::new("old_wire_rename").await?;
    let part = catalog(&t).await?;
    let mark = t.trips.mark();
    Part::repo(&t.db).update_by_id(&part.id, Part::fields().name.set("#5 grommet".into())).await?;
    let mut commands = t.trips.commands_since(mark);
    commands[1..].sort();
    assert_eq!(commands, ["update ow_parts", "update ow_bins", "update ow_products"]);
    assert_eq!(names(&t, "ow_products").await, ["#5 grommet"; 3]);
    assert_eq!(names(&t, "ow_bins").await, ["#5 grommet"]);
    Ok(())
}

#[tokio::test]
async fn before_8_0_a_fan_out_cut_by_a_failure_is_reported_and_repaired() -> docrel::Result<()> {
    pretend_wire_version(Some(21));
    let t = TestDb::new("old_wire_fault").await?;
    let part = catalog(&t).await?;
    // Every `update` from this test's client after the first fails: the
    // connection is cut after the part itself was renamed (the fan-out's
    // retry fails too).
    let admin = t.client.database("admin");
    let fail_point = |mode: Bson| {
        admin.run_command(doc! {
            "configureFailPoint": "failCommand",
            "mode": mode,
            "data": {"failCommands": ["update"], "closeConnection": true, "appName": t.db.name()},
        })
    };
    fail_point(doc! {"skip": 1}.into()).await.expect("the embedded server runs with --enable-test-commands");
    let err = Part::repo(&t.db).update_by_id(&part.id, Part::fields().name.set("#6 grommet".into())).await;
    fail_point("off".into()).await.expect("fail point off");
    let err = err.unwrap_err();
    let text = err.to_string();
    assert!(matches!(&err, Error::FanOut { source_collection: "ow_parts", .. }), "{text}");
    assert!(err.is_connection(), "{text}");
    assert!(text.contains("repair"), "says how to fix it: {text}");
    assert_eq!(Part::repo(&t.db).require(&part.id).await?.name, "#6 grommet", "the source write stands");
    let stale = names(&t, "ow_products").await.into_iter().chain(names(&t, "ow_bins").await);
    assert!(stale.into_iter().all(|n| n == "#4 grommet"), "no copy was rewritten");

    assert_eq!(check::copies::<Part>().verify(&t.db).run().await?.stale, 4);
    assert_eq!(check::copies::<Part>().repair(&t.db).run().await?.fixed, 4);
    assert_eq!(names(&t, "ow_products").await, ["#6 grommet"; 3]);
    assert_eq!(names(&t, "ow_bins").await, ["#6 grommet"]);
    assert_eq!(check::copies::<Part>().verify(&t.db).run().await?.stale, 0);
    Ok(())
}

#[path = "fixtures/delete_rules.rs"]
mod delete_rules;

#[tokio::test]
async fn before_8_0_a_delete_applies_each_rule_with_its_own_command() -> docrel::Result<()> {
    use delete_rules::{assert_deleted, seed, Author};
    pretend_wire_version(Some(21));
    let t = TestDb::new("old_wire_delete").await?;
    let (ann, bo) = seed(&t).await?;
    let mark = t.trips.mark();
    assert!(Author::repo(&t.db).delete_by_id(&ann.id).await?);
    let commands = t.trips.commands_since(mark);
    assert!(!commands.iter().any(|c| c == "bulkWrite"), "{commands:?}");
    assert!(commands.iter().any(|c| c == "update dr_posts") && commands.iter().any(|c| c == "update dr_anthologies"));
    assert_deleted(&t, &ann, &bo).await;
    Ok(())
}
