//! Time buckets as counters (issue 30, item 9): a bucket that keeps a
//! count (and a sum) per parent and window without storing the events.
//! One upsert with `$inc` per event, one read per range of windows; the
//! stored documents are read back with the raw driver.

use docrel::bson::{doc, oid::ObjectId, Bson, DateTime, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::{Document, Error};
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "ck_pages")]
struct Page {
    #[serde(rename = "_id")]
    id: ObjectId,
    path: String,
}

/// An hour of a page's views: how many, and the seconds spent.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "ck_views")]
struct ViewsHour {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Page, on_delete = cascade)]
    page: ObjectId,
    start: DateTime,
    #[bucket(counter, window = "hour", sum = seconds)]
    views: i64,
    seconds: f64,
}

/// A day of a page's downloads, counted only.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "ck_downloads")]
struct DownloadsDay {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Page)]
    page: ObjectId,
    #[serde(rename = "day")]
    from: DateTime,
    #[bucket(counter, window = "day", start = from)]
    n: u64,
}

/// 2014-01-01T10:00:00Z plus `ms`.
fn at(ms: i64) -> DateTime {
    DateTime::from_millis(1_388_570_400_000 + ms)
}

const HOUR: i64 = 3_600_000;

async fn page(t: &TestDb) -> docrel::Result<ObjectId> {
    let p = Page { id: ObjectId::new(), path: "/home".into() };
    Page::repo(&t.db).insert(&p).await?;
    Ok(p.id)
}

async fn stored(t: &TestDb, collection: &str) -> Vec<BsonDoc> {
    let found = t.db.collection::<BsonDoc>(collection).find(doc! {}).sort(doc! {"start": 1, "day": 1}).await.unwrap();
    found.try_collect().await.unwrap()
}

#[tokio::test]
async fn each_event_is_one_upsert_and_the_window_stores_no_events() -> docrel::Result<()> {
    let t = TestDb::new("ck_record").await?;
    ViewsHour::repo(&t.db).ensure_indexes().await?;
    let home = page(&t).await?;
    let views = ViewsHour::rels().views;
    for (ms, seconds) in [(0, 12.5), (60_000, 7.5), (HOUR - 1, 1.0), (HOUR, 30.0)] {
        let mark = t.trips.mark();
        let window = views.record(&t.db, &home, at(ms), seconds).await?;
        assert_eq!(t.trips.commands_since(mark), ["update ck_views"], "one upsert per event");
        assert_eq!(window, DateTime::from_millis(at(ms).timestamp_millis() / HOUR * HOUR));
    }
    let docs = stored(&t, "ck_views").await;
    assert_eq!(docs.len(), 2, "{docs:?}");
    let first = &docs[0];
    assert_eq!(first.get("page"), Some(&Bson::ObjectId(home)));
    assert_eq!(first.get("start"), Some(&Bson::DateTime(at(0))));
    assert_eq!(first.get("views"), Some(&Bson::Int64(3)));
    assert_eq!(first.get("seconds"), Some(&Bson::Double(21.0)));
    let keys: Vec<&str> = first.keys().map(String::as_str).collect();
    assert_eq!(keys.len(), 5, "no array, no page, no bookkeeping: {first:?}");
    assert_eq!(docs[1].get("views"), Some(&Bson::Int64(1)));
    assert_eq!(docs[1].get("seconds"), Some(&Bson::Double(30.0)));
    // The typed document reads back.
    let typed = ViewsHour::repo(&t.db).find(ViewsHour::fields().page.eq(home)).to_vec().await?;
    assert_eq!(typed.iter().map(|w| w.views).sum::<i64>(), 4);
    Ok(())
}

#[tokio::test]
async fn counts_per_window_are_one_read() -> docrel::Result<()> {
    let t = TestDb::new("ck_counts").await?;
    ViewsHour::repo(&t.db).ensure_indexes().await?;
    let (home, other) = (page(&t).await?, page(&t).await?);
    let views = ViewsHour::rels().views;
    for h in [0, 0, 0, 2, 2, 5] {
        views.record(&t.db, &home, at(h * HOUR + 1_000), 2.0).await?;
    }
    views.record(&t.db, &other, at(0), 100.0).await?;

    let mark = t.trips.mark();
    // From the middle of hour 0 to the start of hour 5: hours 0 and 2 (the
    // window holding `from` counts whole, the one starting at `to` not).
    let counts = views.counts(&t.db, &home, at(HOUR / 2), at(5 * HOUR)).await?;
    assert_eq!(t.trips.commands_since(mark), ["find ck_views"]);
    let got: Vec<(DateTime, u64, f64)> = counts.iter().map(|w| (w.start, w.count, w.sum)).collect();
    assert_eq!(got, [(at(0), 3, 6.0), (at(2 * HOUR), 2, 4.0)]);

    let all = views.counts(&t.db, &home, at(-HOUR), at(24 * HOUR)).await?;
    assert_eq!(all.iter().map(|w| w.count).collect::<Vec<_>>(), [3, 2, 1]);
    assert!(views.counts(&t.db, &home, at(10 * HOUR), at(11 * HOUR)).await?.is_empty());
    Ok(())
}

#[tokio::test]
async fn a_counter_without_a_sum_counts_hits_in_its_named_fields() -> docrel::Result<()> {
    let t = TestDb::new("ck_hits").await?;
    DownloadsDay::repo(&t.db).ensure_indexes().await?;
    let home = page(&t).await?;
    let downloads = DownloadsDay::rels().n;
    let mark = t.trips.mark();
    downloads.hit(&t.db, &home, at(0)).await?;
    downloads.hit(&t.db, &home, at(HOUR)).await?;
    downloads.add(&t.db, &home, at(30 * HOUR), 5, ()).await?;
    assert_eq!(t.trips.since(mark), 3);
    let docs = stored(&t, "ck_downloads").await;
    assert_eq!(docs.len(), 2, "{docs:?}");
    assert_eq!(docs[0].get("day"), Some(&Bson::DateTime(DateTime::from_millis(1_388_534_400_000))));
    assert_eq!(docs[0].get("n"), Some(&Bson::Int64(2)));
    assert_eq!(docs[1].get("n"), Some(&Bson::Int64(5)));
    let counts = downloads.counts(&t.db, &home, at(-48 * HOUR), at(48 * HOUR)).await?;
    assert_eq!(counts.iter().map(|w| w.count).collect::<Vec<_>>(), [2, 5]);
    Ok(())
}

#[tokio::test]
async fn concurrent_events_of_one_new_window_are_all_counted_in_one_document() -> docrel::Result<()> {
    let t = TestDb::new("ck_concurrent").await?;
    ViewsHour::repo(&t.db).ensure_indexes().await?;
    let home = page(&t).await?;
    let views = ViewsHour::rels().views;
    let writes = (0..16).map(|i| {
        let db = t.db.clone();
        tokio::spawn(async move { views.record(&db, &home, at(i * 1_000), 1.0).await })
    });
    for w in futures::future::join_all(writes).await {
        w.expect("a task")?;
    }
    let docs = stored(&t, "ck_views").await;
    assert_eq!(docs.len(), 1, "one document per window: {docs:?}");
    assert_eq!(docs[0].get("views"), Some(&Bson::Int64(16)));
    assert_eq!(docs[0].get("seconds"), Some(&Bson::Double(16.0)));
    Ok(())
}

#[tokio::test]
async fn a_counters_parent_deleted_takes_its_windows() -> docrel::Result<()> {
    let t = TestDb::new("ck_cascade").await?;
    let home = page(&t).await?;
    ViewsHour::rels().views.record(&t.db, &home, at(0), 1.0).await?;
    Page::repo(&t.db).delete_by_id(&home).await?;
    assert!(stored(&t, "ck_views").await.is_empty());
    Ok(())
}

#[tokio::test]
async fn an_amount_that_is_not_a_number_is_refused_before_any_write() -> docrel::Result<()> {
    let t = TestDb::new("ck_nan").await?;
    let home = page(&t).await?;
    let mark = t.trips.mark();
    let err = ViewsHour::rels().views.record(&t.db, &home, at(0), f64::NAN).await.unwrap_err();
    assert!(matches!(err, Error::Invalid { .. }), "{err:?}");
    assert!(err.to_string().contains("nothing was written"), "{err}");
    assert_eq!(t.trips.since(mark), 0);
    Ok(())
}

#[tokio::test]
async fn verify_checks_what_a_counter_can_be_checked_for() -> docrel::Result<()> {
    let t = TestDb::new("ck_verify").await?;
    let home = page(&t).await?;
    let views = ViewsHour::rels().views;
    views.record(&t.db, &home, at(0), 1.0).await?;
    views.record(&t.db, &home, at(HOUR), 1.0).await?;
    // A well-kept counter has no array to compare its count with: clean.
    let clean = docrel::check::buckets::<ViewsHour>().verify(&t.db).run().await?;
    assert!(clean.clean(), "{:?}", clean.problems);
    assert_eq!((clean.parents, clean.scanned), (1, 2));

    // Written behind docrel's back: a negative count, a window off its
    // boundary, a window stored twice (no unique index here).
    t.db.collection::<BsonDoc>("ck_views")
        .insert_many([
            doc! {"page": home, "start": at(2 * HOUR), "views": -3_i64, "seconds": 0.0},
            doc! {"page": home, "start": at(3 * HOUR + 5), "views": 1_i64, "seconds": 0.0},
            doc! {"page": home, "start": at(0), "views": 2_i64, "seconds": 2.0},
        ])
        .await
        .unwrap();
    let found = docrel::check::buckets::<ViewsHour>().verify(&t.db).run().await?;
    assert_eq!((found.miscounted, found.misaligned, found.duplicates), (1, 1, 1), "{:?}", found.problems);
    assert!(found.problems.iter().any(|p| p.contains("-3")), "{:?}", found.problems);
    // Repair has nothing to recount from (the events are not stored): it
    // reports, and writes nothing.
    let before = stored(&t, "ck_views").await;
    let repaired = docrel::check::buckets::<ViewsHour>().repair(&t.db).run().await?;
    assert_eq!((repaired.fixed, repaired.unfixable), (0, 3), "{:?}", repaired.problems);
    assert_eq!(stored(&t, "ck_views").await, before);
    Ok(())
}

#[tokio::test]
async fn the_schema_report_the_indexes_and_the_doctor_know_a_counter() -> docrel::Result<()> {
    let report = docrel::admin::report::report_of(&[Page::schema(), ViewsHour::schema(), DownloadsDay::schema()]);
    assert!(report.contains("| ck_views | views | bucket (counter) |"), "{report}");
    assert!(report.contains("counts per 3600000 ms window per `page`, summing `seconds`"), "{report}");
    assert!(report.contains("`ck_views`: `{page: 1, start: 1}` unique"), "{report}");
    assert!(report.contains("`ck_downloads`: `{page: 1, day: 1}` unique"), "{report}");

    let t = TestDb::new("ck_doctor").await?;
    ViewsHour::repo(&t.db).ensure_indexes().await?;
    let home = page(&t).await?;
    ViewsHour::rels().views.record(&t.db, &home, at(0), 1.0).await?;
    let doctor = docrel::admin::doctor::run(&t.db, &Default::default()).await?;
    // A counter is no array: nothing to measure against rule 3.
    assert!(!doctor.arrays.iter().any(|a| a.collection == "ck_views"), "{:?}", doctor.arrays);
    let missing: Vec<_> = doctor.findings.iter().filter(|f| f.field.starts_with("ck_views")).collect();
    assert!(missing.is_empty(), "{missing:?}");
    // A window whose page is gone (deleted behind docrel's back) is an orphan.
    t.db.collection::<BsonDoc>("ck_pages").delete_one(doc! {"_id": home}).await.unwrap();
    let doctor = docrel::admin::doctor::run(&t.db, &Default::default()).await?;
    let orphans: Vec<_> = doctor.findings.iter().filter(|f| f.field.starts_with("ck_views")).collect();
    assert!(orphans.iter().any(|f| f.rule == "orphans"), "{:?}", doctor.findings);
    Ok(())
}
