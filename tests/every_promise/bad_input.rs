//! Bad input checked evenly: what a counter refuses, a bucket refuses too,
//! and no write stores a field named like an operator.

use crate::raw;
use docrel::bson::{doc, oid::ObjectId, DateTime, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::{Document, Error};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "bi_devices")]
struct Device {
    #[serde(rename = "_id")]
    id: i32,
    name: String,
    #[embed(max = 10)]
    notes: Vec<BsonDoc>,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
struct Reading {
    time: DateTime,
    value: f64,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "bi_readings")]
struct Readings {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Device)]
    device: i32,
    start: DateTime,
    count: i32,
    #[bucket(by = time, window = "day")]
    readings: Vec<Reading>,
}

async fn device(t: &TestDb) -> docrel::Result<()> {
    Device::repo(&t.db).insert(&Device { id: 1, name: "probe".into(), notes: vec![] }).await
}

#[tokio::test]
async fn a_bucket_refuses_a_reading_that_is_not_a_finite_number() -> docrel::Result<()> {
    let t = TestDb::new("bi_nan").await?;
    device(&t).await?;
    let rels = Readings::rels();
    let now = DateTime::now();
    for bad in [f64::NAN, f64::INFINITY] {
        let err = rels.readings.append(&t.db, &1, &Reading { time: now, value: bad }).await.unwrap_err();
        assert!(matches!(err, Error::Invalid { .. }), "{err}");
        assert!(
            err.to_string().contains("not a finite number") && err.to_string().contains("nothing was written"),
            "{err}"
        );
    }
    assert_eq!(t.db.collection::<BsonDoc>("bi_readings").count_documents(doc! {}).await.unwrap(), 0);
    rels.readings.append(&t.db, &1, &Reading { time: now, value: 1.5 }).await?;
    assert_eq!(t.db.collection::<BsonDoc>("bi_readings").count_documents(doc! {}).await.unwrap(), 1);
    Ok(())
}

#[tokio::test]
async fn no_write_stores_a_field_named_like_an_operator() -> docrel::Result<()> {
    let t = TestDb::new("bi_dollar").await?;
    device(&t).await?;
    let f = Device::fields();
    let sneaky = doc! {"note": "hi", "meta": {"$where": "sleep(1000)"}};
    let err = Device::repo(&t.db).update_by_id(&1, f.notes.push([sneaky.clone()])).await.unwrap_err();
    assert!(err.to_string().contains("`$where`") && err.to_string().contains("nothing was written"), "{err}");
    let err = Device::repo(&t.db).update_by_id(&1, f.notes.set(vec![sneaky])).await.unwrap_err();
    assert!(err.to_string().contains("`$where`"), "{err}");
    let stored = raw(&t, "bi_devices", 1).await.expect("the device");
    assert!(stored.get_array("notes").unwrap().is_empty(), "nothing was written: {stored}");
    // A value that merely mentions `$` is a value like any other.
    Device::repo(&t.db).update_by_id(&1, f.notes.push([doc! {"note": "$where is text here"}])).await?;
    assert_eq!(raw(&t, "bi_devices", 1).await.unwrap().get_array("notes").unwrap().len(), 1);
    Ok(())
}

/// Count pages of ten comments, written whole by the repository.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "bi_pages")]
struct Page {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Device)]
    device: i32,
    page: i32,
    count: i32,
    #[bucket(size = 10)]
    lines: Vec<String>,
}

/// A bucket document inserted whole is held to its bound and its count, as
/// an append is (before: a page of 11 lines with `count: 5` was stored, and
/// only a verify found it).
#[tokio::test]
async fn a_bucket_document_inserted_whole_is_checked_as_an_append_is() -> docrel::Result<()> {
    let t = TestDb::new("bi_whole").await?;
    device(&t).await?;
    let page = |count, n: usize| Page { id: ObjectId::new(), device: 1, page: 1, count, lines: vec!["l".into(); n] };
    let over = Page::repo(&t.db).insert(&page(11, 11)).await.unwrap_err();
    assert!(
        over.to_string().contains("above its bound of 10") && over.to_string().contains("nothing was written"),
        "{over}"
    );
    let miscounted = Page::repo(&t.db).insert(&page(5, 3)).await.unwrap_err();
    assert!(miscounted.to_string().contains("`count: 5` for 3 elements"), "{miscounted}");
    assert_eq!(t.db.collection::<BsonDoc>("bi_pages").count_documents(doc! {}).await.unwrap(), 0);
    Page::repo(&t.db).insert(&page(3, 3)).await?;
    assert!(docrel::check::buckets::<Page>().verify(&t.db).run().await?.clean());
    Ok(())
}
