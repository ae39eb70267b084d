//! The `sync` command: the change-stream sync worker of deferred fan-outs,
//! run until SIGINT/SIGTERM, with a line of progress, lag and dead letters
//! (events it could not apply) every few seconds.

use super::console::{Console, Exit, Shutdown};
use crate::denormalize::sync::{HistoryLost, SyncWorker, DEAD_LETTER_COLLECTION, SYNC_COLLECTION};
use crate::error::Result;
use crate::schema::graph;
use mongodb::bson::{self, doc, Bson, Document as BsonDoc};
use mongodb::Database;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The cluster time a resume token stands for, in seconds, where its format
/// is known: MongoDB's (hex KeyString starting with a timestamp) or a BSON
/// document with a timestamp field (the embedded test server's).
fn token_seconds(token: &Bson) -> Option<u32> {
    let data = token.as_document()?.get_str("_data").ok()?;
    let bytes: Vec<u8> =
        (0..data.len() / 2).filter_map(|i| u8::from_str_radix(data.get(2 * i..2 * i + 2)?, 16).ok()).collect();
    if bytes.first() == Some(&0x82) && bytes.len() >= 9 {
        return Some(u32::from_be_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]));
    }
    let d = bson::Document::from_reader(&mut bytes.as_slice()).ok()?;
    d.values().find_map(|v| match v {
        Bson::Timestamp(t) => Some(t.time),
        _ => None,
    })
}

/// How far the worker's saved position is behind the server, in words.
async fn lag(db: &Database, name: &str) -> String {
    let saved = db.collection::<BsonDoc>(SYNC_COLLECTION).find_one(doc! {"_id": name}).await.ok().flatten();
    let Some(saved) = saved else { return "no position saved yet".into() };
    let now = db.run_command(doc! {"hello": 1}).await.ok().and_then(|r| match r.get("operationTime") {
        Some(Bson::Timestamp(t)) => Some(t.time),
        _ => None,
    });
    if let (Some(at), Some(now)) = (saved.get("token").and_then(token_seconds), now) {
        return format!("position {} s behind the server's clock (from the resume token)", now.saturating_sub(at));
    }
    match saved.get_datetime("saved") {
        Ok(t) => format!(
            "position saved {:.1} s ago (the token's time is not readable on this server)",
            (bson::DateTime::now().timestamp_millis() - t.timestamp_millis()) as f64 / 1000.0
        ),
        Err(_) => "lag unknown".into(),
    }
}

/// The dead letters stored, in words (empty when there are none).
async fn dead_letters(db: &Database) -> String {
    match db.collection::<BsonDoc>(DEAD_LETTER_COLLECTION).count_documents(doc! {}).await {
        Ok(0) => String::new(),
        Ok(n) => format!(
            "; {n} dead letters (events it could not apply): `verify` lists them, `repair` re-applies them once \
             their cause is fixed"
        ),
        Err(e) => format!("; dead letters not counted ({})", crate::error::reason(&e)),
    }
}

/// Starts the worker named `name` (resuming its stored token) and follows
/// the stream until `shutdown`.
pub(super) async fn sync(
    db: &Database,
    console: &mut Console,
    shutdown: &mut Shutdown<'_>,
    name: &str,
    checkpoint_every: u64,
    report_every: u64,
    repair_on_lost_history: bool,
) -> Result<Exit> {
    let g = graph::of(db);
    let sources = g.sources();
    let children = g.subset_children();
    if sources.is_empty() && children.is_empty() {
        console.note("sync: nothing in this schema is derived from another collection; there is nothing to follow");
        return Ok(Exit::Ok);
    }
    let mut worker = SyncWorker::new(db, name).checkpoint_every(Duration::from_secs(checkpoint_every.max(1)));
    if repair_on_lost_history {
        worker = worker.on_history_lost(HistoryLost::RepairAndContinue);
    }
    let resumed = worker.stored_token().await?.is_some();
    console.note(&format!(
        "sync `{name}` on database `{}`: following sources [{}] and subset children [{}]; {}{}. Stop with Ctrl-C \
         or SIGTERM",
        db.name(),
        sources.join(", "),
        children.join(", "),
        if resumed { "resuming from its stored token" } else { "starting from now" },
        dead_letters(db).await,
    ));
    let every = Duration::from_secs(report_every.max(1));
    follow(db, console, shutdown, worker, name, every).await
}

/// Runs the worker until `shutdown`, writing a line of progress and lag
/// every `every`, and a last one when it stopped.
async fn follow(
    db: &Database,
    console: &mut Console,
    shutdown: &mut Shutdown<'_>,
    worker: SyncWorker,
    name: &str,
    every: Duration,
) -> Result<Exit> {
    let ready = Arc::new(AtomicU64::new(0));
    let opened = ready.clone();
    let worker = worker.on_ready(move || {
        opened.fetch_add(1, Ordering::SeqCst);
    });
    let applied = Arc::new(AtomicU64::new(0));
    let counter = applied.clone();
    let lines: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = lines.clone();
    let reporter = async {
        let mut before = 0;
        loop {
            tokio::time::sleep(every).await;
            let now = applied.load(Ordering::SeqCst);
            let line = format!(
                "sync: {now} changes applied ({} in the last {} s); {}{}{}",
                now - before,
                every.as_secs(),
                lag(db, name).await,
                dead_letters(db).await,
                if ready.load(Ordering::SeqCst) == 0 { "; stream not open yet" } else { "" }
            );
            before = now;
            if let Ok(mut l) = sink.lock() {
                l.push(line);
            }
        }
    };
    let work = worker.run_until(shutdown.wait(), move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    // Report lines are written as they come, between awaits of the worker.
    let outcome = {
        let mut work = std::pin::pin!(work);
        let mut reporter = std::pin::pin!(reporter);
        loop {
            tokio::select! {
                r = &mut work => break r,
                () = &mut reporter => {}
                () = tokio::time::sleep(Duration::from_millis(200)) => {}
            }
            let pending: Vec<String> = lines.lock().map(|mut l| l.drain(..).collect()).unwrap_or_default();
            for line in pending {
                console.note(&line);
            }
        }
    };
    for line in lines.lock().map(|mut l| l.drain(..).collect::<Vec<_>>()).unwrap_or_default() {
        console.note(&line);
    }
    outcome?;
    console.note(&format!(
        "sync: stopped after {} changes applied; position saved ({})",
        applied.load(Ordering::SeqCst),
        lag(db, name).await
    ));
    Ok(Exit::Ok)
}
