//! What runs beside a history's workers: the sync worker of a deferred
//! history, and the reaper of transactions left open.

use super::gate::{Class, Gate, ALL_GROUPS};
use super::schema::Part;
use super::universe::Universe;
use docrel::bson::{doc, Bson};
use docrel::denormalize::{Applied, SyncWorker};
use docrel::mongodb::Database;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the sync worker may take to catch up at the end.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(60);

/// Whether `note` is the one about the sync worker's pauses.
fn stopped_for_transaction(note: Option<&String>) -> bool {
    note.is_some_and(|n| n.contains("stopped for a transaction"))
}

/// The sync worker of a deferred history, restarted whenever it stops,
/// and stopped whenever a transaction wants in (see `gate.rs`).
pub struct Sync {
    task: tokio::task::JoinHandle<()>,
    applied: tokio::sync::mpsc::UnboundedReceiver<Applied>,
}

impl Sync {
    pub async fn start(
        db: &Database,
        gate: Arc<Gate>,
        notes: Arc<Mutex<Vec<String>>>,
        t0: Instant,
    ) -> Result<Sync, String> {
        let (tx, applied) = tokio::sync::mpsc::unbounded_channel();
        let worker_db = db.clone();
        let task = tokio::spawn(async move {
            let mut paused = 0usize;
            loop {
                while gate.transactions() > 0 {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                // Every group, as a plain writer (see gate.rs).
                let every = ALL_GROUPS.map(|g| (g, Class::Plain));
                let pass = gate.enter_as(&every).await;
                let tx = tx.clone();
                let worker = SyncWorker::new(&worker_db, "history");
                let run = worker.run(move |a| drop(tx.send(a.clone())));
                let wanted = async {
                    while gate.transactions() == 0 {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                };
                let stopped = tokio::select! {
                    result = run => Some(result),
                    () = wanted => None,
                };
                drop(pass);
                let restarted = stopped.is_some();
                let note = match stopped {
                    Some(result) => format!("sync worker stopped ({result:?}); restarted"),
                    None => {
                        paused += 1;
                        format!("sync worker stopped for a transaction ({paused} times), resumed after it")
                    }
                };
                if let Ok(mut n) = notes.lock() {
                    let note = format!("{:.3}s {note}", t0.elapsed().as_secs_f64());
                    // One note for the pauses, the last one.
                    if stopped_for_transaction(n.last()) && note.contains("for a transaction") {
                        n.pop();
                    }
                    n.push(note);
                }
                if restarted {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match SyncWorker::new(db, "history").stored_token().await {
                Ok(Some(_)) => break,
                Ok(None) | Err(_) if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(20)).await,
                other => {
                    task.abort();
                    return Err(format!("the sync worker never stored a resume token: {other:?}"));
                }
            }
        }
        Ok(Sync { task, applied })
    }

    /// Stops the worker without waiting for it to catch up.
    pub fn abort(self) {
        self.task.abort();
    }

    /// Writes the drain marker and waits for the worker to apply it: the
    /// change stream is ordered, so everything before it was applied too.
    pub async fn drain(mut self, db: &Database) -> Result<(), String> {
        let marker = Part::repo(db)
            .deferred_fan_out()
            .update_by_id(&Universe::sentinel_part(), Part::fields().name.set("drained".into()))
            .await;
        if let Err(e) = marker {
            self.task.abort();
            return Err(format!("writing the drain marker failed: {e}"));
        }
        let deadline = tokio::time::Instant::now() + DRAIN_TIMEOUT;
        let result = loop {
            match tokio::time::timeout_at(deadline, self.applied.recv()).await {
                Ok(Some(a)) if a.source == "parts" && a.id == Bson::ObjectId(Universe::sentinel_part()) => break Ok(()),
                Ok(Some(_)) => {}
                Ok(None) => break Err("the sync worker's channel closed".to_owned()),
                Err(_) => {
                    break Err(format!("the sync worker did not apply the drain marker within {DRAIN_TIMEOUT:?}"))
                }
            }
        };
        self.task.abort();
        let _ = self.task.await;
        result
    }
}

/// mongod aborts a transaction idle for 60 s on its own; SecantusDB only
/// when some transaction statement reaches its registry. This task sends
/// one every few seconds (a read in a transaction, aborted, on a client of
/// its own that no fail point targets), so that a transaction left open by
/// a cut connection is reaped as mongod would reap it.
pub struct Reaper(tokio::task::JoinHandle<()>);

impl Reaper {
    pub async fn start(db_name: &str) -> Result<Reaper, String> {
        let uri = std::env::var(docrel::client::URI_VARIABLE).map_err(|_| "MONGODB_URI is not set".to_owned())?;
        let client = docrel::connect(&uri).await.map_err(|e| e.to_string())?;
        let coll = client.database(db_name).collection::<docrel::bson::Document>("_history_reaper");
        Ok(Reaper(tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(5)).await;
                let Ok(mut session) = client.start_session().await else { continue };
                if session.start_transaction().await.is_ok() {
                    let _ = tokio::time::timeout(Duration::from_secs(5), coll.find_one(doc! {}).session(&mut session))
                        .await;
                    let _ = session.abort_transaction().await;
                }
            }
        })))
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        self.0.abort();
    }
}
