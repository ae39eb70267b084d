//! Bounded memory at scale: a cascade delete of a host with N log messages,
//! and a repair over N holders of stale copies, each measured for peak
//! memory (the process's high-water mark, reset before the operation) and
//! the commands it sent. Run it for two sizes: the peak should not grow
//! with N, and the commands should be N / 1000 pages (on MongoDB 8.0+ the
//! cascade into messages, which nothing refers to, is one `deleteMany` by
//! the host in one `bulkWrite`: no page of ids is read at all).
//!
//! ```text
//! MONGODB_URI=mongodb://... cargo run --release --example scale -- 10000 100000
//! MONGODB_URI=mongodb://... cargo run --release --example scale -- repair 100000
//! ```
//!
//! Numbers are the sizes; `cascade` or `repair` runs that case alone.
//!
//! Prints one JSON line per case. Linux only (it reads `/proc/self/status`).

use docrel::bson::{doc, oid::ObjectId, DateTime, Document as BsonDoc};
use docrel::mongodb::Database;
use docrel::{client::RoundTrips, Document};
use serde::{Deserialize, Serialize};
use std::time::Instant;

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "hosts")]
struct Host {
    #[serde(rename = "_id")]
    id: i32,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "logmsg")]
struct LogMsg {
    #[serde(rename = "_id")]
    id: ObjectId,
    time: DateTime,
    message: String,
    #[parent_ref(to = Host, sort = "-time", on_delete = cascade)]
    host: i32,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "suppliers")]
struct Supplier {
    #[serde(rename = "_id")]
    id: i32,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Supplier)]
    supplier: i32,
    #[denormalize(from = Supplier::name, via = supplier)]
    supplier_name: String,
}

/// `VmHWM` or `VmRSS` of this process, in KiB.
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Resets the high-water mark to the current resident set (Linux 4.0+).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Inserts with the raw driver, 10,000 at a time, so the set-up's own
/// memory stays small and is not what is measured.
async fn insert_raw(db: &Database, collection: &str, n: usize, make: impl Fn(usize) -> BsonDoc) {
    let coll = db.collection::<BsonDoc>(collection);
    for start in (0..n).step_by(10_000) {
        let docs: Vec<BsonDoc> = (start..(start + 10_000).min(n)).map(&make).collect();
        coll.insert_many(docs).await.expect("insert");
    }
}

fn line(case: &str, n: usize, trips: &RoundTrips, mark: docrel::client::Mark, before_kib: u64, started: Instant) {
    let commands = trips.commands_since(mark);
    let mut counts = std::collections::BTreeMap::<&str, usize>::new();
    for c in &commands {
        *counts.entry(c.as_str()).or_default() += 1;
    }
    let counts: Vec<String> = counts.iter().map(|(c, n)| format!("\"{c}\": {n}")).collect();
    println!(
        "{{\"case\": \"{case}\", \"n\": {n}, \"secs\": {:.1}, \"rss_before_mib\": {:.1}, \"peak_mib\": {:.1}, \
         \"peak_over_before_mib\": {:.1}, \"commands\": {{{}}}}}",
        started.elapsed().as_secs_f64(),
        before_kib as f64 / 1024.0,
        status_kib("VmHWM:") as f64 / 1024.0,
        status_kib("VmHWM:").saturating_sub(before_kib) as f64 / 1024.0,
        counts.join(", ")
    );
}

#[tokio::main]
async fn main() -> docrel::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sizes: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![10_000, 100_000] } else { sizes };
    let named: Vec<&str> = args.iter().map(String::as_str).filter(|a| a.parse::<usize>().is_err()).collect();
    let runs = |case: &str| named.is_empty() || named.contains(&case);
    let uri = std::env::var(docrel::client::URI_VARIABLE).expect("MONGODB_URI");
    let mut options = docrel::client::options(&uri).await?;
    let trips = RoundTrips::new();
    trips.install(&mut options);
    let client = docrel::connect_with(&uri, options).await?;
    for n in sizes {
        let db = client.database(&format!("docrel_scale_{n}"));
        db.drop().await.map_err(|e| docrel::Error::driver("dropDatabase", db.name(), e))?;
        LogMsg::repo(&db).ensure_indexes().await?;
        Part::repo(&db).ensure_indexes().await?;

        if runs("cascade") {
            cascade(&db, &trips, n).await?;
        }
        if runs("repair") {
            repair(&db, &trips, n).await?;
        }
        db.drop().await.map_err(|e| docrel::Error::driver("dropDatabase", db.name(), e))?;
    }
    Ok(())
}

/// A cascade delete of a host with n messages.
async fn cascade(db: &Database, trips: &RoundTrips, n: usize) -> docrel::Result<()> {
    Host::repo(db).insert(&Host { id: 1, name: "www".into() }).await?;
    insert_raw(db, "logmsg", n, |i| {
        doc! {"_id": ObjectId::new(), "time": DateTime::now(), "message": format!("message {i}"), "host": 1}
    })
    .await;
    let before = status_kib("VmRSS:");
    reset_peak();
    let (mark, started) = (trips.mark(), Instant::now());
    Host::repo(db).delete_by_id(&1).await?;
    line("cascade_delete", n, trips, mark, before, started);
    assert_eq!(db.collection::<BsonDoc>("logmsg").count_documents(doc! {}).await.unwrap(), 0);
    Ok(())
}

/// A repair over n holders of a stale copy (written behind docrel's back).
async fn repair(db: &Database, trips: &RoundTrips, n: usize) -> docrel::Result<()> {
    Supplier::repo(db).insert(&Supplier { id: 7, name: "Acme Corp".into() }).await?;
    insert_raw(db, "parts", n, |_| doc! {"_id": ObjectId::new(), "supplier": 7, "supplier_name": "Acme"}).await;
    let before = status_kib("VmRSS:");
    reset_peak();
    let (mark, started) = (trips.mark(), Instant::now());
    let report = docrel::check::copies::<Supplier>().repair(db).run().await?;
    line("repair", n, trips, mark, before, started);
    assert_eq!(report.fixed, n as u64, "{report:?}");
    Ok(())
}
