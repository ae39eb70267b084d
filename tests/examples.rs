//! Runs the scenario of each example (examples/*.rs) in a database of its
//! own and checks, with the raw driver, that what it stored has the shapes
//! of the reference texts, field by field.
//!
//! docrel keeps its fan-out bookkeeping (versions) in one extra field,
//! `_docrel`, on documents that hold copies, are sources of copies or keep
//! a subset; the
//! checks below say exactly where it appears and compare the rest exactly.
#![allow(
    clippy::duplicate_mod,
    reason = "each example is a program of its own that includes examples/common (and admin the catalog); \
              here they are modules of one program, each with its own copy"
)]

use docrel::bson::{doc, oid::ObjectId, Bson, DateTime, Decimal128, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::Error;
use futures::TryStreamExt;

#[allow(dead_code)]
#[path = "../examples/catalog.rs"]
mod catalog;

#[allow(dead_code)]
#[path = "../examples/logging.rs"]
mod logging;

#[allow(dead_code)]
#[path = "../examples/tasks.rs"]
mod tasks;

#[allow(dead_code)]
#[path = "../examples/library.rs"]
mod library;

#[allow(dead_code)]
#[path = "../examples/patrons.rs"]
mod patrons;

#[allow(dead_code)]
#[path = "../examples/reviews.rs"]
mod reviews;

#[allow(dead_code)]
#[path = "../examples/blog.rs"]
mod blog;

#[allow(dead_code)]
#[path = "../examples/admin.rs"]
mod admin;

/// The one document of `collection` matching `filter`, as stored.
async fn raw_one(t: &TestDb, collection: &str, filter: BsonDoc) -> BsonDoc {
    t.db.collection::<BsonDoc>(collection)
        .find_one(filter.clone())
        .await
        .expect("raw read")
        .unwrap_or_else(|| panic!("no document of `{collection}` matches {filter}"))
}

/// Every document of `collection` matching `filter`, in `_id` order.
async fn raw_all(t: &TestDb, collection: &str, filter: BsonDoc) -> Vec<BsonDoc> {
    let cursor = t.db.collection::<BsonDoc>(collection).find(filter).sort(doc! {"_id": 1}).await.expect("raw read");
    cursor.try_collect().await.expect("raw read")
}

async fn count(t: &TestDb, collection: &str, filter: BsonDoc) -> u64 {
    t.db.collection::<BsonDoc>(collection).count_documents(filter).await.expect("raw count")
}

fn keys(d: &BsonDoc) -> Vec<&str> {
    d.keys().map(String::as_str).collect()
}

/// The document without docrel's bookkeeping, after checking that it has
/// some (`bookkeeping`) or none.
fn data(mut d: BsonDoc, bookkeeping: bool) -> BsonDoc {
    let found = d.remove("_docrel");
    assert_eq!(found.is_some(), bookkeeping, "`_docrel` bookkeeping on {d}");
    if let Some(b) = found {
        assert!(matches!(b, Bson::Document(_)), "`_docrel` is a document: {b}");
    }
    d
}

/// The document without its `_id` (an ObjectId the scenario made up).
fn without_id(mut d: BsonDoc) -> BsonDoc {
    assert!(matches!(d.remove("_id"), Some(Bson::ObjectId(_))), "an ObjectId _id in {d}");
    d
}

fn elements(d: &BsonDoc, array: &str) -> Vec<BsonDoc> {
    d.get_array(array)
        .unwrap_or_else(|_| panic!("`{array}` is an array in {d}"))
        .iter()
        .map(|e| e.as_document().unwrap_or_else(|| panic!("`{array}` holds documents: {e}")).clone())
        .collect()
}

#[tokio::test]
async fn catalog_parts_and_products_keep_each_others_names() -> docrel::Result<()> {
    let t = TestDb::new("ex_catalog").await?;
    let log = catalog::common::Log::new(t.trips.clone());
    let ids = catalog::scenario(&t.db, &log).await?;
    let (left, right) = (ids.products[0], ids.products[1]);
    let [grommet, fan, switch, washer] = ids.parts[..] else { panic!("4 parts: {ids:?}") };

    // products: {_id, name, manufacturer, catalog_number, parts: [{id, name}]}
    let stored = raw_one(&t, "products", doc! {"_id": left}).await;
    assert_eq!(keys(&stored), ["_id", "name", "manufacturer", "catalog_number", "parts", "_docrel"]);
    assert_eq!(
        data(stored, true),
        doc! {
            "_id": left,
            "name": "left-handed smoke shifter, mk II",
            "manufacturer": "Acme Corp",
            "catalog_number": 4321,
            "parts": [
                {"id": grommet, "name": "#4 grommet, stainless"},
                {"id": fan, "name": "fan blade assembly"},
                {"id": switch, "name": "power switch"},
            ],
        }
    );
    let stored = raw_one(&t, "products", doc! {"_id": right}).await;
    assert_eq!(
        data(stored, true),
        doc! {
            "_id": right,
            "name": "right-handed smoke shifter",
            "manufacturer": "Acme Corp",
            "catalog_number": 1235,
            "parts": [{"id": grommet, "name": "#4 grommet, stainless"}, {"id": washer, "name": "washer"}],
        }
    );

    // parts: {_id, partno, name, product, product_name, product_catalog_number, qty, cost, price}
    let stored = raw_one(&t, "parts", doc! {"_id": grommet}).await;
    assert_eq!(
        keys(&stored),
        [
            "_id",
            "partno",
            "name",
            "product",
            "product_name",
            "product_catalog_number",
            "qty",
            "cost",
            "price",
            "_docrel"
        ]
    );
    assert_eq!(
        data(stored, true),
        doc! {
            "_id": grommet,
            "partno": "123-aff-456",
            "name": "#4 grommet, stainless",
            "product": left,
            "product_name": "left-handed smoke shifter, mk II",
            "product_catalog_number": 4321,
            "qty": 94,
            "cost": 0.94,
            "price": 3.99,
        }
    );
    for part in [fan, switch] {
        let stored = raw_one(&t, "parts", doc! {"_id": part}).await;
        assert_eq!(stored.get_str("product_name").ok(), Some("left-handed smoke shifter, mk II"));
        assert_eq!(stored.get_i32("product_catalog_number").ok(), Some(4321));
    }
    let stored = data(raw_one(&t, "parts", doc! {"_id": washer}).await, true);
    assert_eq!(stored.get_str("product_name").ok(), Some("right-handed smoke shifter"), "filled on insert");
    assert_eq!(stored.get_i32("product_catalog_number").ok(), Some(1235));

    assert_eq!(log.cost("load the parts of every product (one $in, projected on PartLine)"), Some(1));
    // The source and its copies in one bulkWrite (MongoDB 8.0+).
    assert_eq!(log.cost("rename part #4 grommet: the products holding it follow"), Some(1));
    assert_eq!(log.cost("rename product 1234 and renumber it: its parts follow"), Some(1));
    Ok(())
}

#[tokio::test]
async fn logging_hosts_keep_their_last_1000_messages() -> docrel::Result<()> {
    let t = TestDb::new("ex_logging").await?;
    let log = logging::common::Log::new(t.trips.clone());
    let out = logging::scenario(&t.db, &log).await?;
    let [goofy, mickey, pluto] = out.hosts[..] else { panic!("3 hosts: {out:?}") };
    let start = DateTime::parse_rfc3339_str("2014-03-28T09:42:41.382Z").expect("a date");
    let at = |i: usize| DateTime::from_millis(start.timestamp_millis() + i as i64 * 1000);
    let goofys: Vec<usize> = (0..logging::MESSAGES).filter(|i| i % 100 != 0 && i % 100 != 50).collect();

    // hosts: {_id, name, ipaddr, logmsgs: [{_id, time, message}]}, the last 1000, oldest first. A
    // summary carries its message's `_id` besides the text's `{time, message}`: a moved or re-sent
    // child's summary is found by it (a subset with no `key` must hold `_id`).
    let stored = raw_one(&t, "hosts", doc! {"_id": goofy}).await;
    // The subset's change counter is docrel's bookkeeping on the parent.
    assert_eq!(keys(&stored), ["_id", "name", "ipaddr", "logmsgs", "_docrel"]);
    assert_eq!(stored.get_str("name").ok(), Some("goofy.example.com"));
    assert_eq!(stored.get_str("ipaddr").ok(), Some("127.66.66.66"));
    let kept = elements(&stored, "logmsgs");
    assert_eq!(kept.len(), 1000);
    let first = goofys[goofys.len() - 1000];
    assert_eq!(
        without_id(kept[0].clone()),
        doc! {"time": at(first), "message": format!("{} #{first}", logging::TEXTS[first % 4])}
    );
    for (msg, i) in kept.iter().zip(&goofys[goofys.len() - 1000..]) {
        assert_eq!(keys(msg), ["_id", "time", "message"]);
        assert_eq!(msg.get_datetime("time").ok(), Some(&at(*i)));
    }
    // pluto's new address: its version is docrel's bookkeeping.
    let stored = raw_one(&t, "hosts", doc! {"_id": pluto}).await;
    assert_eq!(keys(&stored), ["_id", "name", "ipaddr", "logmsgs", "_docrel"]);
    assert_eq!(stored.get_str("ipaddr").ok(), Some("127.66.66.99"));
    assert_eq!(elements(&stored, "logmsgs").len(), 52);

    // logmsg: {_id, time, message, ipaddr, host}
    let stored = raw_one(&t, "logmsg", doc! {"message": "disk is 93% full #1"}).await;
    assert_eq!(keys(&stored), ["_id", "time", "message", "ipaddr", "host", "_docrel"]);
    assert_eq!(
        without_id(data(stored, true)),
        doc! {"time": at(1), "message": "disk is 93% full #1", "ipaddr": "127.66.66.66", "host": goofy}
    );
    let stored = raw_one(&t, "logmsg", doc! {"host": mickey}).await;
    assert_eq!(stored.get_str("ipaddr").ok(), Some("127.66.66.67"));
    assert_eq!(count(&t, "logmsg", doc! {}).await, logging::MESSAGES as u64);
    assert_eq!(count(&t, "logmsg", doc! {"host": goofy}).await, goofys.len() as u64);
    assert_eq!(count(&t, "logmsg", doc! {"host": pluto, "ipaddr": "127.66.66.99"}).await, 52);

    assert_eq!(log.cost("the most recent 5000 messages of that host"), Some(1));
    assert_eq!(log.cost("the 2 latest messages of EACH host"), Some(1));
    Ok(())
}

#[tokio::test]
async fn tasks_reassigning_keeps_both_sides() -> docrel::Result<()> {
    let t = TestDb::new("ex_tasks").await?;
    let log = tasks::common::Log::new(t.trips.clone());
    let out = tasks::scenario(&t.db, &log).await?;
    let [kate, joe] = out.people[..] else { panic!("2 people: {out:?}") };
    let [lesson, homework, chalk] = out.tasks[..] else { panic!("3 tasks: {out:?}") };
    assert!(out.reassigned.changed);
    assert!(out.reassigned.transactional, "the embedded server is a replica set: one transaction");

    // people: {_id, name, tasks: [ids]}
    assert_eq!(
        raw_one(&t, "people", doc! {"_id": kate}).await,
        doc! {"_id": kate, "name": "Kate Monster", "tasks": [homework, chalk]}
    );
    assert_eq!(
        raw_one(&t, "people", doc! {"_id": joe}).await,
        doc! {"_id": joe, "name": "Joe Bookreader", "tasks": [lesson]}
    );
    // tasks: {_id, description, due_date, owner}
    let april_1 = DateTime::parse_rfc3339_str("2014-04-01T00:00:00Z").expect("a date");
    assert_eq!(
        raw_one(&t, "tasks", doc! {"_id": lesson}).await,
        doc! {"_id": lesson, "description": "Write lesson plan", "due_date": april_1, "owner": joe}
    );
    let stored = raw_one(&t, "tasks", doc! {"_id": chalk}).await;
    assert_eq!(keys(&stored), ["_id", "description", "due_date", "owner"]);
    assert_eq!(stored.get_object_id("owner").ok(), Some(kate));
    Ok(())
}

#[tokio::test]
async fn library_answers_the_four_queries_of_the_text() -> docrel::Result<()> {
    let t = TestDb::new("ex_library").await?;
    let log = library::common::Log::new(t.trips.clone());
    let answers = library::scenario(&t.db, &log).await?;
    assert_eq!(
        answers,
        library::Answers {
            books_of_author: vec!["A tale of two people".into(), "A tale of two space ships".into()],
            authors_of_book: vec!["Peter Stanford".into()],
            categories_of_book: vec!["scifi".into()],
            books_of_category: vec!["A tale of two people".into()],
        }
    );
    // authors: {_id, name, books}; books: {_id, title, categories, authors}; categories: {_id, name}
    assert_eq!(
        raw_one(&t, "authors", doc! {"_id": 1}).await,
        doc! {"_id": 1, "name": "Peter Stanford", "books": [1, 2]}
    );
    assert_eq!(raw_one(&t, "authors", doc! {"_id": 2}).await, doc! {"_id": 2, "name": "Georg Peterson", "books": [1]});
    assert_eq!(
        raw_one(&t, "books", doc! {"_id": 1}).await,
        doc! {"_id": 1, "title": "A tale of two people", "categories": [1], "authors": [1, 2]}
    );
    assert_eq!(
        raw_one(&t, "books", doc! {"_id": 2}).await,
        doc! {"_id": 2, "title": "A tale of two space ships", "categories": [2], "authors": [1]}
    );
    assert_eq!(raw_one(&t, "categories", doc! {"_id": 1}).await, doc! {"_id": 1, "name": "drama"});
    assert_eq!(raw_one(&t, "categories", doc! {"_id": 2}).await, doc! {"_id": 2, "name": "scifi"});
    assert_eq!(log.cost("           and the books referring to it ({categories: id})"), Some(1));
    Ok(())
}

#[tokio::test]
async fn patrons_embed_at_most_three_addresses() -> docrel::Result<()> {
    let t = TestDb::new("ex_patrons").await?;
    let log = patrons::common::Log::new(t.trips.clone());
    let out = patrons::scenario(&t.db, &log).await?;
    let refused = out.refused.expect("the fourth address is refused");
    assert!(
        matches!(refused, Error::EmbedFull { collection: "patrons", field: "addresses", max: 3, len: 4, .. }),
        "{refused}"
    );
    // patrons: {_id, name, addresses: [{street, city, state, zip}]}
    assert_eq!(
        raw_one(&t, "patrons", doc! {"_id": "joe"}).await,
        doc! {
            "_id": "joe",
            "name": "Joe Bookreader",
            "addresses": [
                {"street": "123 Fake Street", "city": "Faketon", "state": "MA", "zip": "12345"},
                {"street": "1 Some Other Street", "city": "Boston", "state": "MA", "zip": "12345"},
                {"street": "7 Summer Street", "city": "Salem", "state": "MA", "zip": "01970"},
            ]
        }
    );
    Ok(())
}

#[tokio::test]
async fn reviews_the_product_keeps_its_ten_newest() -> docrel::Result<()> {
    let t = TestDb::new("ex_reviews").await?;
    let log = reviews::common::Log::new(t.trips.clone());
    let out = reviews::scenario(&t.db, &log).await?;
    assert_eq!(out.kept, [786, 785, 784, 783, 782, 781, 779, 778, 777, 776]);
    assert!(out.consistent);
    let date = |s: &str| DateTime::parse_rfc3339_str(s).expect("a date");

    // products: {_id: 1, name, description, price: {value, currency}, reviews: [...]}
    let stored = raw_one(&t, "products", doc! {"_id": 1}).await;
    assert_eq!(keys(&stored), ["_id", "name", "description", "price", "reviews", "_docrel"]);
    assert_eq!(stored.get_str("name").ok(), Some("Super Widget"));
    assert_eq!(stored.get_str("description").ok(), Some("This is the most useful item in your toolbox."));
    let value: Decimal128 = "119.99".parse().expect("a decimal");
    assert_eq!(stored.get_document("price").ok(), Some(&doc! {"value": value, "currency": "USD"}));
    let kept = elements(&stored, "reviews");
    assert_eq!(
        kept[0],
        doc! {
            "review_id": 786,
            "review_author": "Kristina",
            "review_text": "This is indeed an amazing widget.",
            "published_date": date("2019-02-18T00:00:00Z"),
        }
    );
    assert_eq!(kept[1].get_str("review_text").ok(), Some("Nice product. Shipping was slow."), "the edit followed");
    assert_eq!(
        kept[9],
        doc! {
            "review_id": 776,
            "review_author": "Pablo",
            "review_text": "Amazing!",
            "published_date": date("2019-02-16T04:00:00Z"),
        }
    );
    for r in &kept {
        assert_eq!(keys(r), ["review_id", "review_author", "review_text", "published_date"]);
    }

    // reviews: {review_id, product_id, review_author, review_text, published_date}
    let stored = raw_one(&t, "reviews", doc! {"review_id": 1}).await;
    assert_eq!(keys(&stored), ["_id", "review_id", "product_id", "review_author", "review_text", "published_date"]);
    assert_eq!(
        without_id(data(stored, false)),
        doc! {
            "review_id": 1,
            "product_id": 1,
            "review_author": "Hans",
            "review_text": "Meh, it's okay.",
            "published_date": date("2017-12-06T00:00:00Z"),
        }
    );
    // An edited review keeps the text's shape: nothing is copied from it,
    // so it carries no version (its summary is rewritten from the edit itself).
    let stored = data(raw_one(&t, "reviews", doc! {"review_id": 785}).await, false);
    assert_eq!(stored.get_str("review_text").ok(), Some("Nice product. Shipping was slow."));
    assert_eq!(count(&t, "reviews", doc! {}).await, 11);
    assert_eq!(count(&t, "reviews", doc! {"review_id": 780}).await, 0);
    Ok(())
}

#[tokio::test]
async fn blog_comments_fill_buckets_of_50() -> docrel::Result<()> {
    let t = TestDb::new("ex_blog").await?;
    let log = blog::common::Log::new(t.trips.clone());
    let out = blog::scenario(&t.db, &log).await?;
    assert_eq!(out.latest, Some((2, 10)));
    assert_eq!(out.total, blog::COMMENTS);

    // posts: {_id: 1, title, url, text}
    assert_eq!(
        raw_one(&t, "posts", doc! {"_id": 1}).await,
        doc! {
            "_id": 1,
            "title": "An awesome blog",
            "url": "http://awesomeblog.com",
            "text": "This is an awesome blog we have just started",
        }
    );
    // comments: {blog_entry_id, page, count, comments: [{name, created_on, comment}]}
    let pages = raw_all(&t, "comments", doc! {}).await;
    assert_eq!(pages.len(), 2);
    let first = raw_one(&t, "comments", doc! {"blog_entry_id": 1, "page": 1}).await;
    assert_eq!(keys(&first), ["_id", "blog_entry_id", "page", "count", "comments"]);
    assert_eq!((first.get_i32("count").ok(), elements(&first, "comments").len()), (Some(50), 50));
    let comments = elements(&first, "comments");
    let date = |s: &str| DateTime::parse_rfc3339_str(s).expect("a date");
    assert_eq!(
        comments[0],
        doc! {"name": "Peter Critic", "created_on": date("2014-01-01T10:01:22Z"), "comment": "Awesome blog post"}
    );
    assert_eq!(
        comments[1],
        doc! {"name": "John Page", "created_on": date("2014-01-01T11:01:22Z"), "comment": "Not so awesome blog"}
    );
    let second = without_id(raw_one(&t, "comments", doc! {"blog_entry_id": 1, "page": 2}).await);
    assert_eq!(keys(&second), ["blog_entry_id", "page", "count", "comments"]);
    assert_eq!((second.get_i32("count").ok(), elements(&second, "comments").len()), (Some(10), 10));
    Ok(())
}

#[tokio::test]
async fn admin_reports_and_repairs_stale_copies() -> docrel::Result<()> {
    let t = TestDb::new("ex_admin").await?;
    let log = admin::common::Log::new(t.trips.clone());
    let out = admin::scenario(&t.db, &log).await?;
    // The report covers every type linked into this test program, the catalog's among them.
    for line in [
        "| products | parts | one-to-many (child references) |",
        "| parts | product_name | denormalized copy | of Product::name via `product` | product_name <- products.name |",
        "- `parts` -> `products` through `parts.id`: name -> name",
        "- `products`: `{catalog_number: 1}` unique",
        "```mermaid",
    ] {
        assert!(out.report.contains(line), "the report has {line:?}:\n{}", out.report);
    }
    assert_eq!(out.indexes, ["partno_1", "product_1", "catalog_number_1", "parts.id_1"]);
    let n = admin::PRODUCTS as u64;
    assert_eq!((out.before.scanned, out.before.stale, out.before.fixed), (n, n, 0));
    assert_eq!((out.repaired.scanned, out.repaired.stale, out.repaired.fixed), (n, n, n));
    assert_eq!((out.after.scanned, out.after.stale, out.after.dangling), (n, 0, 0));
    let batches: Vec<u64> = (1..=n.div_ceil(admin::BATCH as u64)).map(|b| (b * admin::BATCH as u64).min(n)).collect();
    assert_eq!(out.progress, batches);
    // Every product's copy now has the name the other client wrote.
    let grommet: ObjectId =
        raw_one(&t, "parts", doc! {"partno": "123-aff-456"}).await.get_object_id("_id").expect("an id");
    assert_eq!(count(&t, "products", doc! {"parts": {"id": grommet, "name": "#4 grommet, brass"}}).await, n);
    Ok(())
}

/// The schema report of the examples, generated from their derives, pinned
/// as `tests/snapshots/examples_schema.md` (refresh with
/// `DOCREL_OVERWRITE=1 cargo test --test examples`, then read the diff).
#[test]
fn the_schema_report_of_the_examples_is_pinned() {
    use docrel::Document;
    let report = docrel::admin::report::report_of(&[
        catalog::Part::schema(),
        catalog::Product::schema(),
        logging::Host::schema(),
        logging::LogMsg::schema(),
        tasks::Person::schema(),
        tasks::Task::schema(),
        library::Author::schema(),
        library::Book::schema(),
        library::Category::schema(),
        patrons::Patron::schema(),
        reviews::Product::schema(),
        reviews::Review::schema(),
        blog::Post::schema(),
        blog::CommentPage::schema(),
    ]);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/examples_schema.md");
    if std::env::var_os("DOCREL_OVERWRITE").is_some() {
        std::fs::write(&path, &report).expect("snapshot written");
    }
    let pinned = std::fs::read_to_string(&path).expect("tests/snapshots/examples_schema.md exists");
    assert_eq!(report, pinned, "the schema report changed: refresh with DOCREL_OVERWRITE=1 and review the diff");
}
