//! Copies are docrel's to write: a write of one is refused, and a
//! reference through which copies come must name a document that exists
//! (the recipe and IoT services: a recipe's copy of its author's name, a
//! device's copy of its site's name).

use crate::raw;
use docrel::bson::oid::ObjectId;
use docrel::testing::TestDb;
use docrel::{Document, Error};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "cc_sites")]
struct Site {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "cc_devices")]
struct Device {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Site)]
    site: ObjectId,
    #[denormalize(from = Site::name, via = site)]
    site_name: String,
}

async fn plant(t: &TestDb) -> docrel::Result<(Site, Device)> {
    let site = Site { id: ObjectId::new(), name: "Plant 1".into() };
    Site::repo(&t.db).insert(&site).await?;
    let device = Device { id: ObjectId::new(), site: site.id, site_name: String::new() };
    Device::repo(&t.db).insert(&device).await?;
    Ok((site, device))
}

/// Before: `update_by_id(.., site_name.set("Eve"))` returned Ok and the
/// write was silently undone by the refresh that followed it.
#[tokio::test]
async fn a_write_of_a_copy_is_refused_and_says_where_the_copy_comes_from() -> docrel::Result<()> {
    let t = TestDb::new("cc_write_copy").await?;
    let (_, device) = plant(&t).await?;
    let err =
        Device::repo(&t.db).update_by_id(&device.id, Device::fields().site_name.set("Eve".into())).await.unwrap_err();
    assert!(matches!(err, Error::Invalid { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("`cc_devices.site_name` is a copy of `cc_sites.name`") && text.contains("nothing was written"),
        "{text}"
    );
    assert_eq!(raw(&t, "cc_devices", device.id).await.unwrap().get_str("site_name").unwrap(), "Plant 1");
    Ok(())
}

/// Before: moving a device to a site that does not exist returned Ok and
/// kept the old site's name as the copy, as if it were the new site's.
#[tokio::test]
async fn moving_a_holder_to_a_source_that_does_not_exist_is_refused() -> docrel::Result<()> {
    let t = TestDb::new("cc_dangling_move").await?;
    let (site, device) = plant(&t).await?;
    let nowhere = ObjectId::new();
    let err = Device::repo(&t.db).update_by_id(&device.id, Device::fields().site.set(nowhere)).await.unwrap_err();
    assert!(err.to_string().contains("does not exist") && err.to_string().contains("nothing was written"), "{err}");
    let stored = raw(&t, "cc_devices", device.id).await.unwrap();
    assert_eq!(stored.get_object_id("site").unwrap(), site.id, "the device stays where it was");
    // A move to a site that exists brings that site's copies.
    let other = Site { id: ObjectId::new(), name: "Plant 2".into() };
    Site::repo(&t.db).insert(&other).await?;
    Device::repo(&t.db).update_by_id(&device.id, Device::fields().site.set(other.id)).await?;
    assert_eq!(raw(&t, "cc_devices", device.id).await.unwrap().get_str("site_name").unwrap(), "Plant 2");
    Ok(())
}

#[derive(docrel::Embedded, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Comment {
    text: String,
    #[reference(to = Site)]
    author: ObjectId,
    #[denormalize(from = Site::name, via = author)]
    author_name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "cc_posts")]
struct Post {
    #[serde(rename = "_id")]
    id: i32,
    #[embed(max = 50)]
    comments: Vec<Comment>,
}

/// `pull(&element)` removes that element, not every element naming the
/// same document (before: it was rewritten as a pull by the reference, and
/// took every comment of the same author).
#[tokio::test]
async fn a_pull_of_an_element_takes_that_element_not_its_authors_others() -> docrel::Result<()> {
    let t = TestDb::new("cc_pull_element").await?;
    let ann = Site { id: ObjectId::new(), name: "Ann".into() };
    Site::repo(&t.db).insert(&ann).await?;
    let comment = |text: &str| Comment { text: text.into(), author: ann.id, author_name: String::new() };
    Post::repo(&t.db).insert(&Post { id: 1, comments: vec![comment("first"), comment("second")] }).await?;
    // The caller's element, with a placeholder where docrel keeps the copy.
    Post::repo(&t.db).update_by_id(&1, Post::fields().comments.pull(&comment("first"))).await?;
    let stored = raw(&t, "cc_posts", 1).await.unwrap();
    let left: Vec<&str> = stored
        .get_array("comments")
        .unwrap()
        .iter()
        .map(|c| c.as_document().unwrap().get_str("text").unwrap())
        .collect();
    assert_eq!(left, ["second"], "only the pulled element went: {stored}");
    Ok(())
}
