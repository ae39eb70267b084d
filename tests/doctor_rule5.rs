//! The doctor's rule 5 counts what docrel sends (issue 42): a rename of a
//! copied field counts as a write of its source whichever command carried
//! it (on MongoDB 8.0+ docrel sends it with its fan-out as one client-level
//! `bulkWrite`; other updates go as `findAndModify` or `update`), and a write
//! of the source that sets no copied field, such as the push of a new child
//! into the parent's subset, does not count. Figures from the profiler,
//! turned on for the test's database and for `admin`, where a server that
//! profiles a `bulkWrite` whole (this one) records it.

use docrel::admin::{run, Console, Exit};
use docrel::bson::{doc, oid::ObjectId, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::{Document, View};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "r5_users")]
struct User {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    karma: i32,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "r5_posts")]
struct Post {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = User)]
    author: ObjectId,
    #[denormalize(from = User::name, via = author)]
    author_name: String,
}

/// The IoT service's device: its name is copied into every alert, and its
/// newest alerts are kept as a subset whose elements have a `name` too.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "r5_devices")]
struct Device {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    #[embed(max = 10, subset_of = Alert, sort = "-n", key = n)]
    latest: Vec<AlertLine>,
}

#[derive(View, Serialize, Deserialize, Debug, Clone)]
#[view(of = Alert)]
struct AlertLine {
    n: i32,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "r5_alerts")]
struct Alert {
    #[serde(rename = "_id")]
    id: ObjectId,
    n: i32,
    name: String,
    #[parent_ref(to = Device)]
    device: ObjectId,
    #[denormalize(from = Device::name, via = device)]
    device_name: String,
}

async fn profile(t: &TestDb, database: &str, level: i32) {
    t.client.database(database).run_command(doc! {"profile": level}).await.expect("profile");
}

async fn doctor_json(t: &TestDb) -> serde_json::Value {
    let mut console = Console::captured();
    let exit = run(["admin", "--db", t.db.name(), "doctor", "--json"], &mut console, std::future::pending()).await;
    assert_eq!(exit, Exit::Ok, "{}{}", console.output(), console.errors());
    serde_json::from_str(&console.output()).expect("JSON")
}

fn copy<'a>(report: &'a serde_json::Value, copy: &str) -> &'a serde_json::Value {
    report["copies"].as_array().expect("copies").iter().find(|c| c["copy"] == copy).expect(copy)
}

#[tokio::test]
async fn renames_count_however_sent_and_pushes_into_a_subset_do_not() -> docrel::Result<()> {
    let t = TestDb::new("r5_counts").await?;
    profile(&t, t.db.name(), 2).await;
    profile(&t, "admin", 2).await;

    let (users, posts) = (User::repo(&t.db), Post::repo(&t.db));
    let ann = User { id: ObjectId::new(), name: "ann".into(), karma: 0 };
    users.insert(&ann).await?;
    posts.insert(&Post { id: ObjectId::new(), author: ann.id, author_name: String::new() }).await?;
    let name = User::fields().name;
    for i in 0..3 {
        users.update_by_id(&ann.id, name.set(format!("ann {i}"))).await?;
    }
    for i in 3..6 {
        // With another field: not the bulkWrite path.
        users.update_by_id(&ann.id, name.set(format!("ann {i}")).and(User::fields().karma.inc(1))).await?;
    }
    // Writes of a field nothing copies are no writes of the copy's source.
    for _ in 0..4 {
        users.update_by_id(&ann.id, User::fields().karma.inc(1)).await?;
    }

    let pump = Device { id: ObjectId::new(), name: "pump".into(), latest: vec![] };
    Device::repo(&t.db).insert(&pump).await?;
    let alert = |n: i32| Alert {
        id: ObjectId::new(),
        n,
        name: format!("alert {n}"),
        device: pump.id,
        device_name: String::new(),
    };
    for n in 0..6 {
        Alert::repo(&t.db).insert(&alert(n)).await?;
    }
    Alert::repo(&t.db).insert_many(&(6..12).map(alert).collect::<Vec<_>>()).await?;

    let report = doctor_json(&t).await;
    profile(&t, "admin", 0).await;
    profile(&t, t.db.name(), 0).await;

    // As stored: the copies followed, the subset holds the newest ten.
    let post = t.db.collection::<BsonDoc>("r5_posts").find_one(doc! {"author": ann.id}).await?.expect("the post");
    assert_eq!(post.get_str("author_name").ok(), Some("ann 5"));
    let device = t.db.collection::<BsonDoc>("r5_devices").find_one(doc! {"_id": pump.id}).await?.expect("pump");
    assert_eq!((device.get_str("name").ok(), device.get_array("latest").map(Vec::len).ok()), (Some("pump"), Some(10)));

    let renamed = copy(&report, "r5_posts.author_name");
    assert_eq!(renamed["measured_from"], "profiler", "{renamed:#}");
    assert_eq!(renamed["writes"].as_u64(), Some(6), "six renames: {renamed:#}");
    let by = renamed["writes_by"].as_object().expect("by command");
    assert_eq!(by.values().filter_map(serde_json::Value::as_u64).sum::<u64>(), 6, "{by:?}");
    let carriers = ["bulkWrite (", "findAndModify (", "update ("];
    assert!(
        by.keys().all(|k| carriers.iter().any(|c| k.starts_with(c)) && k.ends_with(".system.profile)")),
        "each names its command and the profile it was read from: {by:?}"
    );
    assert!(report["notes"].to_string().contains("a push into a subset, does not count"), "{}", report["notes"]);
    let pushed = copy(&report, "r5_alerts.device_name");
    assert_eq!((pushed["writes"].as_u64(), pushed["writes_by"].as_object().map(|b| b.len())), (Some(0), Some(0)));
    let rule5 = report["findings"].as_array().expect("findings").iter().filter(|f| f["rule"] == "rule 5");
    assert_eq!(rule5.count(), 0, "no copy to drop: {report:#}");
    Ok(())
}
