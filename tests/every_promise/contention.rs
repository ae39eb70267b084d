//! A write conflict on a hot parent is normal load (the IoT service: alerts
//! kept as a subset of the newest 10 per device, with a copy of the
//! device's name). Four tasks inserting alerts of one device at once met
//! write conflicts; the retried transaction sent its first command, a
//! `bulkWrite`, with a read concern (the session's causal consistency),
//! which the documented test server refuses (40415), and three of the four
//! failed with an error that was not transient.

use docrel::bson::{doc, oid::ObjectId, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::{Document, View};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "ct_devices")]
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
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "ct_alerts")]
struct Alert {
    #[serde(rename = "_id")]
    id: ObjectId,
    n: i32,
    #[parent_ref(to = Device)]
    device: ObjectId,
    #[denormalize(from = Device::name, via = device)]
    device_name: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_inserts_of_one_parents_children_all_succeed() -> docrel::Result<()> {
    let t = TestDb::new("ct_hot_parent").await?;
    let device = Device { id: ObjectId::new(), name: "pump 1".into(), latest: vec![] };
    Device::repo(&t.db).insert(&device).await?;
    let mut tasks = Vec::new();
    for task in 0..4 {
        let db = t.db.clone();
        let alerts: Vec<Alert> = (0..5)
            .map(|i| Alert { id: ObjectId::new(), n: task * 10 + i, device: device.id, device_name: String::new() })
            .collect();
        tasks.push(tokio::spawn(async move { Alert::repo(&db).insert_many(&alerts).await }));
    }
    for task in tasks {
        task.await.expect("no panic")?;
    }
    let alerts = t.db.collection::<BsonDoc>("ct_alerts").count_documents(doc! {"device_name": "pump 1"}).await;
    assert_eq!(alerts.expect("count"), 20);
    let stored = crate::raw(&t, "ct_devices", device.id).await.expect("device");
    let latest: Vec<i32> = stored
        .get_array("latest")
        .expect("latest")
        .iter()
        .map(|l| l.as_document().expect("a summary").get_i32("n").expect("n"))
        .collect();
    assert_eq!(latest, [34, 33, 32, 31, 30, 24, 23, 22, 21, 20]);
    Ok(())
}
