//! The time-bucket half of `tests/moves_buckets.rs`: `mb_sensors.readings`
//! of the old version, hourly buckets of at most three readings in
//! `mb_hours` in the new one. While both shapes are kept, a sensor's
//! buckets are its array's readings grouped by hour in array order, three
//! a bucket, the first of an hour without a page number and the next
//! numbered 2, 3, ..

use super::{raw, v1, v2, Seeded, COLD};
use docrel::bson::{doc, oid::ObjectId, Bson, DateTime, Document as BsonDoc};
use docrel::{Filter, Update};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Readings per bucket.
const SIZE: usize = 3;
const HOUR: i64 = 3_600_000;
/// The first hour the readings fall in; they spread over four.
const BASE: i64 = 1_700_000_000_000 / HOUR * HOUR;

fn reading(n: &mut Seeded, id: String) -> v1::Reading {
    let t = DateTime::from_millis(BASE + n.below(4) as i64 * HOUR + n.below(3_600) as i64 * 1_000);
    v1::Reading { id, t }
}

/// The old version's sensors: four, with 0 to 7 readings.
pub async fn seed(db: &docrel::mongodb::Database) -> docrel::Result<()> {
    let mut n = Seeded(7);
    for s in 0..4 {
        let readings = (0..(s * 5 % 8)).map(|i| reading(&mut n, format!("seed {s}.{i}"))).collect();
        v1::Sensor::repo(db).insert(&v1::Sensor { id: s, readings }).await?;
    }
    Ok(())
}

async fn sensors(db: &docrel::mongodb::Database) -> docrel::Result<Vec<i64>> {
    let all = raw(db, "mb_sensors").await?;
    Ok(all.iter().filter_map(|s| s.get_i64("_id").ok()).filter(|s| !COLD.contains(s)).collect())
}

/// One write of the old version: readings pushed (of any of four hours, so
/// an older hour's reading comes after a newer one's), the first popped,
/// the array set or the sensor replaced, a sensor inserted or deleted.
pub async fn old_write(db: &docrel::mongodb::Database, n: &mut Seeded, next: i64) -> docrel::Result<()> {
    let sensors = sensors(db).await?;
    let repo = v1::Sensor::repo(db);
    let f = v1::Sensor::fields();
    let (op, s) = (n.below(7), sensors.get(n.below(sensors.len())).copied());
    let mut fresh = |k: usize| (0..k).map(|i| reading(n, format!("old {next}.{i}"))).collect::<Vec<_>>();
    let Some(s) = s.filter(|_| op != 6) else {
        return repo.insert(&v1::Sensor { id: next, readings: fresh(5) }).await.map(drop);
    };
    match op {
        0..=2 => repo.update_by_id(&s, f.readings.push(fresh(2))).await.map(drop),
        3 => repo.update_by_id(&s, Update::raw(doc! {"$pop": {"readings": -1}})).await.map(drop),
        4 => repo.update_by_id(&s, f.readings.set(fresh(4))).await.map(drop),
        5 => repo.delete_by_id(&s).await.map(drop),
        _ => repo.replace(&v1::Sensor { id: s, readings: fresh(6) }).await.map(drop),
    }
}

/// One write of the new version: a reading appended (or two at once), an
/// hour's buckets deleted, or a range read.
pub async fn new_write(db: &docrel::mongodb::Database, n: &mut Seeded) -> docrel::Result<()> {
    let sensors = sensors(db).await?;
    let Some(&s) = sensors.get(n.below(sensors.len())) else { return Ok(()) };
    let hours = v2::Hour::rels().readings;
    let mine = |n: &mut Seeded| {
        let v1::Reading { t, .. } = reading(n, String::new());
        v2::Reading { id: format!("new {}", ObjectId::new()), t }
    };
    match n.below(6) {
        0..=2 => hours.append(db, &s, &mine(n)).await.map(drop),
        3 => hours.append_many(db, &[(s, mine(n)), (s, mine(n))]).await.map(drop),
        4 => {
            let start = DateTime::from_millis(BASE + n.below(4) as i64 * HOUR);
            v2::Hour::repo(db).delete_many(Filter::new(doc! {"sensor": s, "start": start})).await.map(drop)
        }
        _ => {
            let (from, to) = (DateTime::from_millis(BASE), DateTime::from_millis(BASE + 4 * HOUR));
            hours.range(db, &s, from, to).await.map(drop)
        }
    }
}

/// A sensor's readings as its buckets should hold them: by hour, in array
/// order, three a bucket: `(start, page, readings)`, page 1 unnumbered.
fn layout(array: &[Bson]) -> Vec<(i64, Option<i32>, Vec<Bson>)> {
    let mut hours: BTreeMap<i64, Vec<Bson>> = BTreeMap::new();
    for r in array {
        let t = r.as_document().and_then(|d| d.get_datetime("t").ok()).expect("a dated reading").timestamp_millis();
        hours.entry(t.div_euclid(HOUR) * HOUR).or_default().push(r.clone());
    }
    let mut out = Vec::new();
    for (start, readings) in hours {
        for (i, chunk) in readings.chunks(SIZE).enumerate() {
            out.push((start, (i > 0).then_some(i as i32 + 1), chunk.to_vec()));
        }
    }
    out
}

/// Each sensor's buckets are its array's layout, with their counts; no
/// bucket belongs to a sensor that is gone; every reading is held once.
/// Returns the number of buckets.
pub async fn assert_windows(db: &docrel::mongodb::Database) -> docrel::Result<usize> {
    let mut buckets: HashMap<i64, Vec<BsonDoc>> = HashMap::new();
    let all = raw(db, "mb_hours").await?;
    for b in &all {
        buckets.entry(b.get_i64("sensor").expect("an i64 sensor")).or_default().push(b.clone());
    }
    let (mut broken, mut ids) = (Vec::new(), HashSet::new());
    for sensor in raw(db, "mb_sensors").await? {
        let id = sensor.get_i64("_id").unwrap();
        let array = sensor.get_array("readings").cloned().unwrap_or_default();
        let mut got: Vec<(i64, Option<i32>, Vec<Bson>)> = buckets
            .remove(&id)
            .unwrap_or_default()
            .iter()
            .map(|b| {
                let readings = b.get_array("readings").cloned().unwrap_or_default();
                if b.get_i32("count").ok() != Some(readings.len() as i32) {
                    broken.push(format!("bucket {b} counts wrong"));
                }
                let start = b.get_datetime("start").map_or(0, |t| t.timestamp_millis());
                (start, b.get_i32("page").ok(), readings)
            })
            .collect();
        got.sort_by_key(|(start, page, _)| (*start, page.unwrap_or(1)));
        if got != layout(&array) {
            broken.push(format!("sensor {id} holds {array:?}, its buckets are {got:?}"));
        }
        for r in &array {
            let rid = r.as_document().and_then(|d| d.get_str("id").ok()).unwrap_or_default().to_owned();
            if !ids.insert(rid.clone()) {
                broken.push(format!("reading {rid:?} is held twice"));
            }
        }
    }
    broken.extend(buckets.values().flatten().map(|b| format!("{b} belongs to no sensor")));
    assert!(broken.is_empty(), "{} violation(s): {broken:#?}", broken.len());
    Ok(all.len())
}
