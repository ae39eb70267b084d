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
