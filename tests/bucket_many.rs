//! Issue 40: many elements appended to the buckets of many parents in a
//! few round trips (`Bucket::append_many`), whatever their number; each
//! element once, in order within its parent, no bucket past its size, the
//! buckets of a parent numbered 1..=n, under concurrent single appends.
//! Read back with the raw driver.

use docrel::bson::{doc, oid::ObjectId, Bson, DateTime, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::{Document, Error};
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "am_devices")]
struct Device {
    #[serde(rename = "_id")]
    id: i32,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Reading {
    t: DateTime,
    n: i64,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "am_hours")]
struct Hour {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Device)]
    device: i32,
    start: DateTime,
    count: i32,
    #[bucket(by = t, window = "hour", size = 40)]
    readings: Vec<Reading>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "am_posts")]
struct Post {
    #[serde(rename = "_id")]
    id: i32,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Line {
    n: i64,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "am_pages")]
struct Page {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Post)]
    post: i32,
    page: i32,
    count: i32,
    #[bucket(size = 50)]
    lines: Vec<Line>,
}

const HOUR: i64 = 3_600_000;
const T0: i64 = 1_700_006_400_000; // on an hour boundary

async fn raw(t: &TestDb, collection: &str, filter: BsonDoc) -> Vec<BsonDoc> {
    let found = t.db.collection::<BsonDoc>(collection).find(filter).sort(doc! {"_id": 1}).await.expect("find");
    found.try_collect().await.expect("read")
}

/// `n` readings round robin across 50 devices, over two hours; the
/// commands the batch sent.
async fn readings_batch(n: i64) -> docrel::Result<Vec<String>> {
    let t = TestDb::new(&format!("am_readings_{n}")).await?;
    Hour::repo(&t.db).ensure_indexes().await?;
    let devices: Vec<Device> = (1..=50).map(|id| Device { id }).collect();
    Device::repo(&t.db).insert_many(&devices).await?;
    let batch: Vec<(i32, Reading)> = (0..n)
        .map(|i| ((i % 50) as i32 + 1, Reading { t: DateTime::from_millis(T0 + (i * 2 * HOUR) / n), n: i }))
        .collect();
    let mark = t.trips.mark();
    let appended = Hour::rels().readings.append_many(&t.db, &batch).await?;
    let commands = t.trips.commands_since(mark);
    assert_eq!(appended.len(), batch.len());

    // Each device's readings, in order, each once; no bucket past 40; each
    // hour's buckets numbered 1..=k (the first without a number).
    for d in 1..=50 {
        let mine: Vec<&Reading> = batch.iter().filter(|(p, _)| *p == d).map(|(_, r)| r).collect();
        let stored = raw(&t, "am_hours", doc! {"device": d}).await;
        let mut read: Vec<Reading> = Vec::new();
        let mut by_hour: std::collections::BTreeMap<i64, Vec<(i64, Vec<Reading>)>> = Default::default();
        for b in &stored {
            let list: Vec<Reading> =
                docrel::bson_compat::from_bson(Bson::Array(b.get_array("readings").unwrap().clone())).unwrap();
            assert_eq!(b.get_i32("count").unwrap() as usize, list.len(), "count and array agree");
            assert!(list.len() <= 40, "no bucket past its size");
            let spill = b.get_i32("page").map_or(1, i64::from);
            by_hour.entry(b.get_datetime("start").unwrap().timestamp_millis()).or_default().push((spill, list));
        }
        for (_, mut buckets) in by_hour {
            buckets.sort_by_key(|(s, _)| *s);
            let numbers: Vec<i64> = buckets.iter().map(|(s, _)| *s).collect();
            assert_eq!(numbers, (1..=numbers.len() as i64).collect::<Vec<_>>(), "numbered 1..=k");
            read.extend(buckets.into_iter().flat_map(|(_, l)| l));
        }
        assert_eq!(read.iter().collect::<Vec<_>>(), mine, "device {d}: each reading once, in order");
        assert_eq!(Hour::rels().readings.all(&t.db, &d).await?, read, "read back by docrel the same");
    }
    Ok(commands)
}

#[tokio::test]
async fn readings_across_50_devices_cost_the_same_commands_for_1_000_and_5_000() -> docrel::Result<()> {
    let small = readings_batch(1_000).await?;
    let large = readings_batch(5_000).await?;
    println!("1,000 readings: {small:?}; 5,000 readings: {large:?}");
    assert_eq!(large.len(), small.len(), "independent of the number of readings");
    // One read of the devices with their last buckets, one update, one
    // read confirming the buckets it opened: a `find` of the devices when
    // every bucket it opened is the first of its hour (1,000 readings),
    // the devices with their buckets when it opened spills (5,000).
    assert_eq!(small, ["aggregate am_devices", "update am_hours", "find am_devices"]);
    assert_eq!(large, ["aggregate am_devices", "update am_hours", "aggregate am_devices"]);
    Ok(())
}

#[tokio::test]
async fn a_batch_fills_the_open_page_first_then_opens_the_next() -> docrel::Result<()> {
    let t = TestDb::new("am_pages").await?;
    Page::repo(&t.db).ensure_indexes().await?;
    Post::repo(&t.db).insert_many(&[Post { id: 1 }, Post { id: 2 }]).await?;
    let lines = Page::rels().lines;
    for n in 0..30 {
        lines.append(&t.db, &1, &Line { n }).await?;
    }
    let batch: Vec<(i32, Line)> = (30..150).map(|n| (1, Line { n })).chain((0..7).map(|n| (2, Line { n }))).collect();
    let appended = lines.append_many(&t.db, &batch).await?;
    assert_eq!(appended[0].page, Some(1), "the open page first");
    assert_eq!(appended[119].page, Some(3));
    assert_eq!(appended[120].page, Some(1));
    let pages = raw(&t, "am_pages", doc! {"post": 1}).await;
    let shape: Vec<(i32, i32, usize)> = pages
        .iter()
        .map(|p| (p.get_i32("page").unwrap(), p.get_i32("count").unwrap(), p.get_array("lines").unwrap().len()))
        .collect();
    assert_eq!(shape, [(1, 50, 50), (2, 50, 50), (3, 50, 50)]);
    let all: Vec<i64> = lines.all(&t.db, &1).await?.into_iter().map(|l| l.n).collect();
    assert_eq!(all, (0..150).collect::<Vec<_>>(), "every line once, in order");
    // A single append goes on from where the batch left off.
    assert_eq!(lines.append(&t.db, &1, &Line { n: 150 }).await?.page, Some(4));
    Ok(())
}

#[tokio::test]
async fn a_batch_for_a_parent_that_does_not_exist_writes_nothing() -> docrel::Result<()> {
    let t = TestDb::new("am_missing").await?;
    Page::repo(&t.db).ensure_indexes().await?;
    Post::repo(&t.db).insert(&Post { id: 1 }).await?;
    let batch = vec![(1, Line { n: 0 }), (9, Line { n: 1 })];
    match Page::rels().lines.append_many(&t.db, &batch).await {
        Err(Error::NotFound { collection: "am_posts", id }) => assert_eq!(id, "9"),
        other => panic!("refused, naming the parent: {other:?}"),
    }
    assert!(raw(&t, "am_pages", doc! {}).await.is_empty(), "nothing written");
    Ok(())
}

/// Batches racing single appends on the same posts, seeded: every line
/// once, a batch's lines in order within their post, no page past 50,
/// pages 1..=n.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_racing_single_appends_lose_nothing_and_fill_no_page_twice() -> docrel::Result<()> {
    let t = TestDb::new("am_race").await?;
    Page::repo(&t.db).ensure_indexes().await?;
    Post::repo(&t.db).insert_many(&[Post { id: 1 }, Post { id: 2 }, Post { id: 3 }]).await?;
    let lines = Page::rels().lines;
    let mut n = 0_i64;
    for round in 0..6_u64 {
        let singles: Vec<(i32, Line)> =
            (0..20).map(|k| ((k % 3) as i32 + 1, Line { n: 1_000_000 + round as i64 * 100 + k })).collect();
        let batch: Vec<(i32, Line)> = (0..(40 + round as i64 * 17))
            .map(|k| {
                n += 1;
                (((k + round as i64) % 3) as i32 + 1, Line { n })
            })
            .collect();
        let db = t.db.clone();
        let single = tokio::spawn(async move {
            for (p, l) in singles {
                Page::rels().lines.append(&db, &p, &l).await?;
            }
            Ok::<(), Error>(())
        });
        lines.append_many(&t.db, &batch).await?;
        single.await.expect("the single appends")?;
    }
    for p in 1..=3 {
        let pages = raw(&t, "am_pages", doc! {"post": p}).await;
        let mut numbers: Vec<i32> = pages.iter().map(|d| d.get_i32("page").unwrap()).collect();
        numbers.sort();
        assert_eq!(numbers, (1..=numbers.len() as i32).collect::<Vec<_>>(), "post {p}: pages 1..=n");
        assert!(pages.iter().all(|d| d.get_array("lines").unwrap().len() <= 50
            && d.get_i32("count").unwrap() as usize == d.get_array("lines").unwrap().len()));
        let all: Vec<i64> = lines.all(&t.db, &p).await?.into_iter().map(|l| l.n).collect();
        let batched: Vec<i64> = all.iter().copied().filter(|n| *n < 1_000_000).collect();
        let mut sorted = batched.clone();
        sorted.sort();
        assert_eq!(batched, sorted, "post {p}: a batch's lines in order");
        let mut unique = all.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), all.len(), "post {p}: each line once");
    }
    let stored: usize = raw(&t, "am_pages", doc! {}).await.iter().map(|d| d.get_array("lines").unwrap().len()).sum();
    assert_eq!(stored as i64, n + 6 * 20, "every line of every batch and single append is stored");
    Ok(())
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "am_counts")]
struct DeviceHour {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Device)]
    device: i32,
    start: DateTime,
    #[bucket(counter, window = "hour", sum = total)]
    events: i64,
    total: i64,
}

/// 5,000 events of 50 devices over two hours: one `update` command, each
/// window's count and sum read back raw, and the same again adds up.
#[tokio::test]
async fn counter_events_across_50_devices_are_one_command() -> docrel::Result<()> {
    let t = TestDb::new("am_counter").await?;
    DeviceHour::repo(&t.db).ensure_indexes().await?;
    let events: Vec<(i32, DateTime, i64)> =
        (0..5_000_i64).map(|i| ((i % 50) as i32 + 1, DateTime::from_millis(T0 + (i * 2 * HOUR) / 5_000), i)).collect();
    let counter = DeviceHour::rels().events;
    let mark = t.trips.mark();
    let starts = counter.record_many(&t.db, &events).await?;
    assert_eq!(t.trips.commands_since(mark), ["update am_counts"]);
    assert_eq!(starts[4_999], DateTime::from_millis(T0 + HOUR));
    counter.record_many(&t.db, &events).await?;
    let stored = raw(&t, "am_counts", doc! {}).await;
    assert_eq!(stored.len(), 100, "one document per device and hour");
    for d in 1..=50 {
        for hour in 0..2 {
            let start = T0 + hour * HOUR;
            let mine: Vec<i64> = events
                .iter()
                .filter(|(p, at, _)| *p == d && at.timestamp_millis() / HOUR * HOUR == start)
                .map(|(_, _, n)| *n)
                .collect();
            let w = stored
                .iter()
                .find(|w| {
                    w.get_i32("device").ok() == Some(d) && w.get_datetime("start").unwrap().timestamp_millis() == start
                })
                .expect("the window");
            let number = |f: &str| w.get_i64(f).or_else(|_| w.get_i32(f).map(i64::from)).unwrap();
            assert_eq!(number("events"), 2 * mine.len() as i64, "device {d} hour {hour}");
            assert_eq!(number("total"), 2 * mine.iter().sum::<i64>(), "device {d} hour {hour}");
        }
    }
    Ok(())
}
