//! On MongoDB 8.0+ (the embedded server reports 8.2) a source update and
//! every fan-out it owes travel in one client-level `bulkWrite` (issue 31):
//! a rename copied into three collections is one round trip, and the
//! stored copies are right, read back with the raw driver. A cut batch is
//! written again the other way; a batch whose source matched nothing goes
//! the other way too, and no copy keeps a version its source never had.

use docrel::bson::{doc, oid::ObjectId, Bson, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::{fanout, Document, Embedded};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "bf_parts")]
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
#[document(collection = "bf_products")]
struct Product {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = Part, max = 10)]
    parts: Vec<PartRef>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "bf_bins")]
struct Bin {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = Part, max = 10)]
    parts: Vec<PartRef>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "bf_labels")]
struct Label {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Part)]
    part: ObjectId,
    #[denormalize(from = Part::name, via = part)]
    part_name: String,
}

/// A part held by 2 products, a bin and 2 labels.
async fn catalog(t: &TestDb) -> docrel::Result<Part> {
    let part = Part { id: ObjectId::new(), name: "bolt".into() };
    Part::repo(&t.db).insert(&part).await?;
    let held = || vec![PartRef { id: part.id, name: String::new() }];
    Product::repo(&t.db)
        .insert_many(&(0..2).map(|_| Product { id: ObjectId::new(), parts: held() }).collect::<Vec<_>>())
        .await?;
    Bin::repo(&t.db).insert(&Bin { id: ObjectId::new(), parts: held() }).await?;
    let label = || Label { id: ObjectId::new(), part: part.id, part_name: String::new() };
    Label::repo(&t.db).insert_many(&[label(), label()]).await?;
    Ok(part)
}

/// Every copy of the part's name, as stored, with its version record.
async fn copies(t: &TestDb, part: ObjectId) -> docrel::Result<Vec<(String, Bson)>> {
    use futures::TryStreamExt;
    let mut out = Vec::new();
    let record = |d: &BsonDoc, field: &str| {
        let copies =
            d.get_document("_docrel").and_then(|m| m.get_document("copies")).and_then(|c| c.get_document(field));
        copies.ok().and_then(|c| c.get(part.to_hex()).cloned()).unwrap_or(Bson::Null)
    };
    for collection in ["bf_products", "bf_bins"] {
        let docs: Vec<BsonDoc> = t.db.collection::<BsonDoc>(collection).find(doc! {}).await?.try_collect().await?;
        for d in &docs {
            for e in d.get_array("parts").unwrap() {
                out.push((e.as_document().unwrap().get_str("name").unwrap().to_owned(), record(d, "parts")));
            }
        }
    }
    let labels: Vec<BsonDoc> = t.db.collection::<BsonDoc>("bf_labels").find(doc! {}).await?.try_collect().await?;
    for d in &labels {
        out.push((d.get_str("part_name").unwrap().to_owned(), record(d, "part")));
    }
    Ok(out)
}

async fn version(t: &TestDb, part: ObjectId) -> docrel::Result<Bson> {
    let stored = t.db.collection::<BsonDoc>("bf_parts").find_one(doc! {"_id": part}).await?.expect("stored");
    Ok(stored.get_document("_docrel").unwrap().get("v").cloned().unwrap())
}

#[tokio::test]
async fn a_rename_copied_into_three_collections_is_one_round_trip() -> docrel::Result<()> {
    let t = TestDb::new("bulk_rename").await?;
    let part = catalog(&t).await?;
    let mark = t.trips.mark();
    Part::repo(&t.db).update_by_id(&part.id, Part::fields().name.set("hex bolt".into())).await?;
    assert_eq!(t.trips.commands_since(mark), ["bulkWrite"]);
    let v = version(&t, part.id).await?;
    let stored = copies(&t, part.id).await?;
    assert_eq!(stored.len(), 5);
    assert!(stored.iter().all(|(name, record)| name == "hex bolt" && *record == v), "{stored:?} at {v}");
    assert_eq!(fanout::verify::<Part>(&t.db).run().await?.stale, 0);
    Ok(())
}

#[tokio::test]
async fn a_cut_batch_is_written_again_the_other_way() -> docrel::Result<()> {
    let t = TestDb::new("bulk_cut").await?;
    let part = catalog(&t).await?;
    let admin = t.client.database("admin");
    let fail_point = |mode: Bson| {
        admin.run_command(doc! {
            "configureFailPoint": "failCommand",
            "mode": mode,
            "data": {"failCommands": ["bulkWrite"], "closeConnection": true, "appName": t.db.name()},
        })
    };
    fail_point(doc! {"times": 1}.into()).await.expect("the embedded server runs with --enable-test-commands");
    let mark = t.trips.mark();
    let renamed = Part::repo(&t.db).update_by_id(&part.id, Part::fields().name.set("hex bolt".into())).await;
    fail_point("off".into()).await.expect("fail point off");
    renamed?;
    let commands = t.trips.commands_since(mark);
    assert_eq!(commands[..2], ["bulkWrite", "update bf_parts"], "{commands:?}");
    let v = version(&t, part.id).await?;
    let stored = copies(&t, part.id).await?;
    assert!(stored.iter().all(|(name, record)| name == "hex bolt" && *record == v), "{stored:?} at {v}");
    Ok(())
}

#[tokio::test]
async fn a_batch_whose_source_matched_nothing_leaves_no_version_the_source_never_had() -> docrel::Result<()> {
    let t = TestDb::new("bulk_ahead").await?;
    let part = catalog(&t).await?;
    // Another writer's clock is far ahead: the part's version is past
    // every stamp of this process, so the batch's source statement
    // matches nothing while its fan-outs run.
    let ahead = 4_000_000_000_000_000_i64;
    t.db.collection::<BsonDoc>("bf_parts")
        .update_one(doc! {"_id": part.id}, doc! {"$set": {"_docrel.v": ahead}})
        .await?;
    Part::repo(&t.db).update_by_id(&part.id, Part::fields().name.set("hex bolt".into())).await?;
    let v = version(&t, part.id).await?;
    assert!(v.as_i64().unwrap() > ahead, "the other way wrote the source past the other writer's version: {v}");
    let stored = copies(&t, part.id).await?;
    assert!(stored.iter().all(|(name, record)| name == "hex bolt" && *record == v), "{stored:?} at {v}");
    assert_eq!(fanout::verify::<Part>(&t.db).run().await?.stale, 0);
    Ok(())
}
