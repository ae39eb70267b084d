//! The subset and bucket patterns on the real server: product reviews and
//! host log messages kept as bounded subsets, blog comments in pages of 50,
//! sensor readings in day buckets.

use docrel::bson::{doc, oid::ObjectId, Bson, DateTime, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::{Document, Error, Filter, View};
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "products")]
struct Product {
    #[serde(rename = "_id")]
    id: i32,
    name: String,
    description: String,
    #[embed(max = 10, subset_of = Review, sort = "-published_date", key = review_id, max_bytes = 2000)]
    reviews: Vec<ReviewSummary>,
}

#[derive(View, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[view(of = Review)]
struct ReviewSummary {
    review_id: i32,
    review_author: String,
    review_text: String,
    published_date: DateTime,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "reviews")]
struct Review {
    #[serde(rename = "_id")]
    id: ObjectId,
    review_id: i32,
    #[parent_ref(to = Product)]
    product_id: i32,
    review_author: String,
    review_text: String,
    published_date: DateTime,
}

fn day(d: i64) -> DateTime {
    // 2019-02-18 is the newest review of the reference text.
    DateTime::from_millis(1_550_448_000_000 + d * 86_400_000)
}

fn review(i: i32) -> Review {
    Review {
        id: ObjectId::new(),
        review_id: i,
        product_id: 1,
        review_author: format!("author {i}"),
        review_text: format!("review {i}"),
        published_date: day(i64::from(i) - 100),
    }
}

async fn widget(t: &TestDb) -> docrel::Result<()> {
    Product::repo(&t.db)
        .insert(&Product {
            id: 1,
            name: "Super Widget".into(),
            description: "This is the most useful item in your toolbox.".into(),
            reviews: vec![],
        })
        .await
}

async fn stored_review_ids(t: &TestDb) -> Vec<i32> {
    let p = t.db.collection::<BsonDoc>("products").find_one(doc! {"_id": 1}).await.unwrap().unwrap();
    p.get_array("reviews").unwrap().iter().map(|r| r.as_document().unwrap().get_i32("review_id").unwrap()).collect()
}

#[tokio::test]
async fn the_product_keeps_its_ten_newest_reviews_in_order() -> docrel::Result<()> {
    let t = TestDb::new("subset").await?;
    widget(&t).await?;
    let repo = Review::repo(&t.db);
    // Inserted out of date order on purpose.
    for i in (1..=25).map(|i| (i * 7) % 25 + 1) {
        let mark = t.trips.mark();
        repo.insert(&review(i)).await?;
        assert_eq!(t.trips.commands_since(mark), ["insert reviews", "update products", "find reviews"]);
    }
    assert_eq!(stored_review_ids(&t).await, (16..=25).rev().collect::<Vec<_>>());
    assert_eq!(repo.count(Filter::all()).await?, 25);
    let p = t.db.collection::<BsonDoc>("products").find_one(doc! {"_id": 1}).await.unwrap().unwrap();
    assert_eq!(
        p.get_array("reviews").unwrap()[0],
        Bson::Document(
            doc! {"review_id": 25, "review_author": "author 25", "review_text": "review 25", "published_date": day(-75)}
        )
    );
    assert!(Product::rels().reviews.check(&t.db, &1).await?);

    // A batch for one parent is one push, committed with the insert:
    // `insert_many` is all or nothing. On MongoDB 8.0+ (the embedded server
    // reports 8.2) the insert and the push travel in one `bulkWrite`. No
    // read-back of the children: no other writer can move or delete them
    // before the transaction commits.
    let batch: Vec<Review> = (26..=30).map(review).collect();
    let mark = t.trips.mark();
    repo.insert_many(&batch).await?;
    assert_eq!(t.trips.commands_since(mark), ["bulkWrite", "commitTransaction"]);
    assert_eq!(stored_review_ids(&t).await, (21..=30).rev().collect::<Vec<_>>());
    Ok(())
}

#[tokio::test]
async fn editing_and_deleting_a_review_updates_the_subset() -> docrel::Result<()> {
    let t = TestDb::new("subset_edit").await?;
    widget(&t).await?;
    let reviews: Vec<Review> = (1..=12).map(review).collect();
    Review::repo(&t.db).insert_many(&reviews).await?;
    assert_eq!(stored_review_ids(&t).await, (3..=12).rev().collect::<Vec<_>>());

    // An edit of the text rebuilds the subset under its change counter: bump,
    // read the ten newest, write them while no other change came in.
    let r12 = &reviews[11];
    let mark = t.trips.mark();
    Review::repo(&t.db).update_by_id(&r12.id, Review::fields().review_text.set("Meh, it's okay.".into())).await?;
    assert_eq!(
        t.trips.commands_since(mark),
        ["findAndModify reviews", "findAndModify products", "find reviews", "update products"]
    );
    let p = t.db.collection::<BsonDoc>("products").find_one(doc! {"_id": 1}).await.unwrap().unwrap();
    assert_eq!(
        p.get_array("reviews").unwrap()[0].as_document().unwrap().get_str("review_text").unwrap(),
        "Meh, it's okay."
    );

    // An edit of the date reorders: the subset is rebuilt.
    Review::repo(&t.db).update_by_id(&r12.id, Review::fields().published_date.set(day(-500))).await?;
    assert_eq!(stored_review_ids(&t).await, (2..=11).rev().collect::<Vec<_>>());

    // A deleted review leaves; the next newest takes its place.
    Review::repo(&t.db).delete_by_id(&reviews[10].id).await?;
    assert_eq!(stored_review_ids(&t).await, [10, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
    assert!(Product::rels().reviews.check(&t.db, &1).await?);

    // Tampered with by hand: check says so, rebuild repairs it.
    t.db.collection::<BsonDoc>("products").update_one(doc! {"_id": 1}, doc! {"$set": {"reviews": []}}).await.unwrap();
    assert!(!Product::rels().reviews.check(&t.db, &1).await?);
    assert_eq!(Product::rels().reviews.rebuild(&t.db, &1).await?, 10);
    assert!(Product::rels().reviews.check(&t.db, &1).await?);
    Ok(())
}

#[tokio::test]
async fn a_summary_above_its_size_hint_is_refused_and_nothing_written() -> docrel::Result<()> {
    let t = TestDb::new("subset_size").await?;
    widget(&t).await?;
    let mut long = review(1);
    long.review_text = "x".repeat(5000);
    let mark = t.trips.mark();
    let err = Review::repo(&t.db).insert(&long).await.unwrap_err();
    assert!(matches!(err, Error::Invalid { what: docrel::Misuse::SubsetElement, .. }), "{err}");
    assert!(err.to_string().contains("max_bytes = 2000"), "{err}");
    assert_eq!(t.trips.since(mark), 0);
    assert_eq!(Review::repo(&t.db).count(Filter::all()).await?, 0);
    Ok(())
}

// ---- hosts keep their last 1000 log messages ---------------------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "hosts")]
struct Host {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    ipaddr: String,
    #[embed(max = 1000, subset_of = LogMsg, sort = "time", keep = last, allow_large)]
    logmsgs: Vec<LogLine>,
}

#[derive(View, Serialize, Deserialize, Debug, Clone)]
#[view(of = LogMsg)]
struct LogLine {
    #[serde(rename = "_id")]
    id: ObjectId,
    time: DateTime,
    message: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "logmsg")]
struct LogMsg {
    #[serde(rename = "_id")]
    id: ObjectId,
    time: DateTime,
    message: String,
    #[parent_ref(to = Host, sort = "-time")]
    host: ObjectId,
}

#[tokio::test]
async fn a_host_keeps_its_last_1000_of_2500_messages() -> docrel::Result<()> {
    let t = TestDb::new("logmsgs").await?;
    let host =
        Host { id: ObjectId::new(), name: "goofy.example.com".into(), ipaddr: "127.66.66.66".into(), logmsgs: vec![] };
    Host::repo(&t.db).insert(&host).await?;
    let msgs: Vec<LogMsg> = (0..2500)
        .map(|i| LogMsg {
            id: ObjectId::new(),
            time: DateTime::from_millis(1_395_999_761_382 + i),
            message: format!("m{i}"),
            host: host.id,
        })
        .collect();
    for batch in msgs.chunks(500) {
        let mark = t.trips.mark();
        LogMsg::repo(&t.db).insert_many(batch).await?;
        // The insert and the push into the subset in one `bulkWrite`, in
        // one transaction.
        assert_eq!(t.trips.commands_since(mark), ["bulkWrite", "commitTransaction"]);
    }
    let stored = t.db.collection::<BsonDoc>("hosts").find_one(doc! {"_id": host.id}).await.unwrap().unwrap();
    let kept: Vec<String> = stored
        .get_array("logmsgs")
        .unwrap()
        .iter()
        .map(|m| m.as_document().unwrap().get_str("message").unwrap().to_owned())
        .collect();
    assert_eq!(kept, (1500..2500).map(|i| format!("m{i}")).collect::<Vec<_>>(), "the last 1000, oldest first");
    // The text's `{time, message}`, and the message's `_id`, which identifies a summary.
    let mut first = stored.get_array("logmsgs").unwrap()[0].as_document().unwrap().clone();
    assert!(matches!(first.remove("_id"), Some(Bson::ObjectId(_))), "{first}");
    assert_eq!(first, doc! {"time": DateTime::from_millis(1_395_999_761_382 + 1500), "message": "m1500"});
    assert_eq!(LogMsg::repo(&t.db).count(Filter::all()).await?, 2500, "the full set stays in its collection");
    Ok(())
}

// ---- blog comments in pages of 50 -------------------------------------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "posts")]
struct Post {
    #[serde(rename = "_id")]
    id: i32,
    title: String,
    url: String,
    text: String,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Comment {
    name: String,
    created_on: DateTime,
    comment: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "comments")]
struct CommentPage {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Post)]
    blog_entry_id: i32,
    page: i32,
    count: i32,
    #[bucket(size = 50, max_bytes = 1000)]
    comments: Vec<Comment>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_writers_fill_exactly_32_pages_of_50() -> docrel::Result<()> {
    let t = TestDb::new("buckets").await?;
    CommentPage::repo(&t.db).ensure_indexes().await?;
    Post::repo(&t.db)
        .insert(&Post {
            id: 1,
            title: "An awesome blog".into(),
            url: "http://awesomeblog.com".into(),
            text: "This is an awesome blog we have just started".into(),
        })
        .await?;
    let mut tasks = Vec::new();
    for w in 0..16 {
        let db = t.db.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..100 {
                let c = Comment {
                    name: format!("writer {w}"),
                    created_on: DateTime::from_millis(i),
                    comment: format!("{w}-{i}"),
                };
                CommentPage::rels().comments.append(&db, &1, &c).await?;
            }
            Ok::<_, Error>(())
        }));
    }
    for task in tasks {
        task.await.expect("task")?;
    }
    let pages: Vec<BsonDoc> =
        t.db.collection::<BsonDoc>("comments")
            .find(doc! {})
            .sort(doc! {"page": 1})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
    assert_eq!(pages.len(), 32);
    assert_eq!(pages.iter().map(|p| p.get_i32("page").unwrap()).collect::<Vec<_>>(), (1..=32).collect::<Vec<_>>());
    for p in &pages {
        assert_eq!(p.get_i32("count").unwrap(), 50);
        assert_eq!(p.get_array("comments").unwrap().len(), 50);
        assert_eq!(p.get_i32("blog_entry_id").unwrap(), 1);
    }
    let mut all: Vec<String> =
        CommentPage::rels().comments.all(&t.db, &1).await?.into_iter().map(|c| c.comment).collect();
    assert_eq!(all.len(), 1600);
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 1600, "each comment exactly once");

    // The next append opens page 33 and is one round trip once the page is known.
    let c = Comment { name: "John Page".into(), created_on: DateTime::now(), comment: "Not so awesome blog".into() };
    CommentPage::rels().comments.append(&t.db, &1, &c).await?;
    let mark = t.trips.mark();
    let at = CommentPage::rels().comments.append(&t.db, &1, &c).await?;
    assert_eq!(t.trips.commands_since(mark), ["update comments"]);
    assert_eq!(at.page, Some(33));
    let latest = CommentPage::rels().comments.latest(&t.db, &1).await?.expect("a page");
    assert_eq!((latest.page, latest.count), (33, 2));
    assert_eq!(CommentPage::rels().comments.page(&t.db, &1, 2).await?.map(|p| p.comments.len()), Some(50));
    // The stored shape of the reference text.
    let p33 = t.db.collection::<BsonDoc>("comments").find_one(doc! {"page": 33}).await.unwrap().unwrap();
    assert_eq!(p33.keys().collect::<Vec<_>>(), ["_id", "blog_entry_id", "page", "count", "comments"]);

    // An element above its size hint is refused.
    let huge = Comment { name: "x".into(), created_on: DateTime::now(), comment: "y".repeat(2000) };
    let err = CommentPage::rels().comments.append(&t.db, &1, &huge).await.unwrap_err();
    assert!(matches!(err, Error::Invalid { what: docrel::Misuse::BucketElement, .. }), "{err}");
    Ok(())
}

// ---- readings in day buckets ---------------------------------------------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "sensors")]
struct Sensor {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Reading {
    time: DateTime,
    celsius: f64,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "readings")]
struct ReadingDay {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Sensor)]
    sensor: ObjectId,
    start: DateTime,
    count: i32,
    #[bucket(by = time, window = "day")]
    readings: Vec<Reading>,
}

#[tokio::test]
async fn readings_over_three_days_land_in_three_day_buckets() -> docrel::Result<()> {
    let t = TestDb::new("time_buckets").await?;
    ReadingDay::repo(&t.db).ensure_indexes().await?;
    let sensor = Sensor { id: ObjectId::new(), name: "roof".into() };
    Sensor::repo(&t.db).insert(&sensor).await?;
    let midnight = 1_700_006_400_000_i64; // a UTC midnight
    let step = 3 * 86_400_000 / 1000; // 1,000 readings over 3 days
    for i in 0..1000 {
        let r = Reading { time: DateTime::from_millis(midnight + i * step), celsius: 20.0 + (i % 10) as f64 };
        let mark = t.trips.mark();
        let at = ReadingDay::rels().readings.append(&t.db, &sensor.id, &r).await?;
        // One upsert; the one that opens a day also checks the sensor exists.
        let opens_a_day = i == 0 || (i * step / 86_400_000) != ((i - 1) * step / 86_400_000);
        assert_eq!(t.trips.since(mark), if opens_a_day { 2 } else { 1 }, "reading {i}");
        assert_eq!(at.start.map(|s| (s.timestamp_millis() - midnight) / 86_400_000), Some(i * step / 86_400_000));
    }
    let days: Vec<BsonDoc> =
        t.db.collection::<BsonDoc>("readings")
            .find(doc! {})
            .sort(doc! {"start": 1})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
    assert_eq!(days.len(), 3);
    assert_eq!(days.iter().map(|d| d.get_i32("count").unwrap()).collect::<Vec<_>>(), [334, 333, 333]);

    // One afternoon of the second day: one round trip, one bucket.
    let from = DateTime::from_millis(midnight + 86_400_000 + 12 * 3_600_000);
    let to = DateTime::from_millis(midnight + 86_400_000 + 18 * 3_600_000);
    let mark = t.trips.mark();
    let afternoon = ReadingDay::rels().readings.range(&t.db, &sensor.id, from, to).await?;
    assert_eq!(t.trips.since(mark), 1);
    let read = t.trips.bytes_since(mark);
    let one_day = docrel::bson_compat::to_vec(&days[1]).unwrap().len() as u64;
    assert!(read < one_day + 300, "one bucket read: {read} bytes for a {one_day}-byte bucket");
    assert_eq!(afternoon.len(), 84);
    assert!(afternoon.iter().all(|r| r.time >= from && r.time < to));
    Ok(())
}

/// A time bucket with a count bound: a busy hour spills into more buckets
/// of the same hour instead of growing toward 16 MiB.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "busy_readings")]
struct ReadingHour {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Sensor)]
    sensor: ObjectId,
    start: DateTime,
    count: i32,
    #[bucket(by = time, window = "hour", size = 5)]
    readings: Vec<Reading>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_busy_hour_spills_into_more_buckets_of_the_same_hour() -> docrel::Result<()> {
    let t = TestDb::new("busy_hour").await?;
    ReadingHour::repo(&t.db).ensure_indexes().await?;
    let sensor = Sensor { id: ObjectId::new(), name: "door".into() };
    Sensor::repo(&t.db).insert(&sensor).await?;
    let hour = 1_700_006_400_000_i64; // on an hour boundary
    let rels = ReadingHour::rels().readings;
    let reading = |ms: i64| Reading { time: DateTime::from_millis(hour + ms), celsius: ms as f64 };

    // One writer: 12 readings in the hour, one in the next, in time order.
    let mut spills = Vec::new();
    for i in 0..12 {
        spills.push(rels.append(&t.db, &sensor.id, &reading(i * 1000)).await?.page);
    }
    let next = rels.append(&t.db, &sensor.id, &reading(3_600_000)).await?;
    assert_eq!(spills, [None, None, None, None, None, Some(2), Some(2), Some(2), Some(2), Some(2), Some(3), Some(3)]);
    assert_eq!((next.page, next.start), (None, Some(DateTime::from_millis(hour + 3_600_000))));

    let stored: Vec<BsonDoc> =
        t.db.collection::<BsonDoc>("busy_readings")
            .find(doc! {"sensor": sensor.id})
            .sort(doc! {"start": 1, "page": 1})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
    let shape: Vec<(i64, Option<i32>, i32)> = stored
        .iter()
        .map(|b| {
            (
                b.get_datetime("start").unwrap().timestamp_millis() - hour,
                b.get_i32("page").ok(),
                b.get_i32("count").unwrap(),
            )
        })
        .collect();
    assert_eq!(shape, [(0, None, 5), (0, Some(2), 5), (0, Some(3), 2), (3_600_000, None, 1)]);
    assert!(!stored[0].contains_key("page"), "a window's first bucket keeps the reference shape");

    // Readers see every reading, in order, across the spills.
    let times = |rs: Vec<Reading>| rs.iter().map(|r| r.time.timestamp_millis() - hour).collect::<Vec<_>>();
    let all = rels.all(&t.db, &sensor.id).await?;
    assert_eq!(times(all), (0..12).map(|i| i * 1000).chain([3_600_000]).collect::<Vec<_>>());
    let middle =
        rels.range(&t.db, &sensor.id, DateTime::from_millis(hour + 3000), DateTime::from_millis(hour + 11_000)).await?;
    assert_eq!(times(middle), (3..11).map(|i| i * 1000).collect::<Vec<_>>());
    let latest = rels.latest(&t.db, &sensor.id).await?.expect("a bucket");
    assert_eq!(latest.start.timestamp_millis() - hour, 3_600_000);
    let report = docrel::check::buckets::<ReadingHour>().verify(&t.db).run().await?;
    assert!(report.clean(), "{report:?}");

    // Concurrent writers into one busy hour: no bucket over 5, none twice, no reading lost.
    let other = Sensor { id: ObjectId::new(), name: "window".into() };
    Sensor::repo(&t.db).insert(&other).await?;
    let mut tasks = Vec::new();
    for w in 0..4_i64 {
        let (db, id) = (t.db.clone(), other.id);
        tasks.push(tokio::spawn(async move {
            for i in 0..10 {
                let r = Reading { time: DateTime::from_millis(hour + w * 100 + i), celsius: 0.0 };
                ReadingHour::rels().readings.append(&db, &id, &r).await?;
            }
            Ok::<_, Error>(())
        }));
    }
    for task in tasks {
        task.await.expect("task")?;
    }
    let counts: Vec<i32> =
        t.db.collection::<BsonDoc>("busy_readings")
            .find(doc! {"sensor": other.id})
            .await
            .unwrap()
            .try_collect::<Vec<BsonDoc>>()
            .await
            .unwrap()
            .iter()
            .map(|b| b.get_i32("count").unwrap())
            .collect();
    assert_eq!(counts, [5; 8], "40 readings in 8 full buckets of the hour");
    assert_eq!(rels.all(&t.db, &other.id).await?.len(), 40);
    assert!(docrel::check::buckets::<ReadingHour>().verify(&t.db).run().await?.clean());

    // A sensor that does not exist: refused, and no bucket is left behind.
    let ghost = ObjectId::new();
    let err = rels.append(&t.db, &ghost, &reading(0)).await.unwrap_err();
    assert!(matches!(err, Error::NotFound { collection: "sensors", .. }), "{err}");
    assert_eq!(t.db.collection::<BsonDoc>("busy_readings").count_documents(doc! {"sensor": ghost}).await.unwrap(), 0);
    Ok(())
}
