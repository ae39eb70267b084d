//! A program that never published its schema is told so: other programs
//! would not follow its rules, and their renames would leave its copies
//! stale without a word.

use docrel::bson::oid::ObjectId;
use docrel::testing::TestDb;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "pb_sites")]
struct Site {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "pb_devices")]
struct Device {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Site)]
    site: ObjectId,
    #[denormalize(from = Site::name, via = site)]
    site_name: String,
}

#[tokio::test]
async fn a_program_whose_copies_are_not_published_is_told_so() -> docrel::Result<()> {
    let t = TestDb::new("pb_unpublished").await?;
    let before = docrel::schema::obey(&t.db).await?;
    let devices: Vec<&String> = before.unpublished.iter().filter(|u| u.contains("`pb_devices`")).collect();
    assert_eq!(devices.len(), 1, "{:?}", before.unpublished);
    assert!(
        devices[0].contains("copy `site_name`") && devices[0].contains("docrel::schema::publish"),
        "{}",
        devices[0]
    );
    docrel::schema::publish(&t.db).await?;
    let after = docrel::schema::obey(&t.db).await?;
    assert!(after.unpublished.is_empty(), "published: {:?}", after.unpublished);
    Ok(())
}

/// Review 2: an online change whose rules are already published (the
/// guide's flow: publish at start-up, then `schema apply`; or a first
/// apply stopped between publishing and saving its state) backfilled
/// nothing and reported complete, leaving the copies an older program
/// wrote without the rule stale. What a change backfills is measured
/// against the rules a complete change has backfilled, not against what
/// is published.
#[tokio::test]
async fn a_change_of_rules_already_published_still_backfills() -> docrel::Result<()> {
    let t = TestDb::new("pb_backfill").await?;
    // What a program without the copy wrote: a device whose copy is empty.
    let site = Site { id: ObjectId::new(), name: "Plant 1".into() };
    Site::repo(&t.db).insert(&site).await?;
    let device = ObjectId::new();
    let devices = t.db.collection::<docrel::bson::Document>("pb_devices");
    devices.insert_one(docrel::bson::doc! {"_id": device, "site": site.id, "site_name": ""}).await.expect("insert");
    // This program publishes at start-up, then applies its schema.
    docrel::schema::publish(&t.db).await?;
    let program = docrel::schema::stored::program();
    let change = docrel::admin::change::change(&t.db, program.clone()).wait(std::time::Duration::ZERO);
    // What the command line draws: the wait done, then the backfill's documents.
    let mut drawn = Vec::new();
    let report = change.run_with(|| false, |_| {}, |p| drawn.push(format!("{p:?}"))).await?;
    assert!(report.complete(), "{report:?}");
    assert_eq!(drawn.first().map(String::as_str), Some("Waiting { waited_ms: 0, total_ms: 0 }"), "{drawn:?}");
    let last = drawn.iter().rev().find(|p| p.contains("pb_sites")).expect("the backfill of pb_sites is drawn");
    assert!(last.ends_with("done: 1, total: 1 }"), "{drawn:?}");
    assert!(report.diff.repairs.contains(&"pb_sites".to_owned()), "{report:?}");
    assert_eq!(report.fixed, 1, "{report:?}");
    let stored = crate::raw(&t, "pb_devices", device).await.expect("device");
    assert_eq!(stored.get_str("site_name").unwrap(), "Plant 1");
    // Once backfilled, the same rules in a later change owe nothing.
    let later = docrel::admin::change::change(&t.db, program).remove("pb_none", "x");
    let later = later.wait(std::time::Duration::ZERO).run(|| false, |_| {}).await?;
    assert!(later.complete() && later.diff.repairs.is_empty(), "{later:?}");
    Ok(())
}
