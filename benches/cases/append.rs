//! Case 8 (issue 40): 5,000 readings appended across 50 devices' time
//! buckets (an hour each, two hours of readings), each round into hours
//! of its own. docrel: `Bucket::append_many`: a read of the devices and
//! their last buckets, one `update`, a read confirming the buckets it
//! opened (a batch into hours already open sends no third). By hand: one
//! `update` command of guarded upserts with `$push`/`$each` and `$inc`,
//! one per device and hour, trusting the batch to fit the buckets.

use super::{err, ratio, Bench};
use docrel::bson::{doc, oid::ObjectId, Bson, DateTime, Document as BsonDoc};
use docrel::mongodb::Database;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "app_devices")]
struct Device {
    #[serde(rename = "_id")]
    id: i32,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
struct Reading {
    t: DateTime,
    v: f64,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "app_hours")]
struct Hour {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Device)]
    device: i32,
    start: DateTime,
    count: i32,
    #[bucket(by = t, window = "hour")]
    readings: Vec<Reading>,
}

const HOUR: i64 = 3_600_000;
const READINGS: i64 = 5_000;
const DEVICES: i64 = 50;

/// Round `r`'s readings: round robin across the devices, over two hours of its own.
fn batch(r: usize) -> Vec<(i32, Reading)> {
    let t0 = 1_700_006_400_000 + r as i64 * 2 * HOUR;
    (0..READINGS)
        .map(|i| {
            ((i % DEVICES) as i32 + 1, Reading { t: DateTime::from_millis(t0 + i * 2 * HOUR / READINGS), v: i as f64 })
        })
        .collect()
}

/// By hand: the readings grouped by device and hour, one upsert each.
async fn hand(db: &Database, readings: &[(i32, Reading)]) -> docrel::Result<()> {
    let mut groups: Vec<((i32, i64), Vec<Bson>)> = Vec::new();
    for (device, r) in readings {
        let start = r.t.timestamp_millis() / HOUR * HOUR;
        let value = Bson::Document(doc! {"t": r.t, "v": r.v});
        match groups.iter_mut().find(|(k, _)| *k == (*device, start)) {
            Some((_, list)) => list.push(value),
            None => groups.push(((*device, start), vec![value])),
        }
    }
    let updates: Vec<BsonDoc> = groups
        .into_iter()
        .map(|((device, start), list)| {
            let m = list.len() as i32;
            doc! {
                "q": {"device": device, "start": DateTime::from_millis(start), "count": {"$lte": 1000 - m}},
                "u": {"$inc": {"count": m}, "$push": {"readings": {"$each": list}}},
                "upsert": true,
            }
        })
        .collect();
    db.run_command(doc! {"update": "app_hours", "updates": updates, "ordered": false}).await.map_err(err)?;
    Ok(())
}

pub(crate) async fn append_case(b: &Bench) -> docrel::Result<()> {
    let devices: Vec<Device> = (1..=DEVICES as i32).map(|id| Device { id }).collect();
    Device::repo(&b.timed).insert_many(&devices).await?;
    Hour::repo(&b.timed).ensure_indexes().await?;
    let case = "append_5000_readings_across_50_devices_time_buckets";
    let (d, h) = b
        .pair(
            case,
            READINGS as usize,
            |db, r| async move {
                Hour::rels().readings.append_many(&db, &batch(r)).await?;
                Ok(())
            },
            |db, r| async move { hand(&db, &batch(r)).await },
        )
        .await;
    ratio(case, d, h, None);
    Ok(())
}
