//! The faults of a migration history: fail points (`configureFailPoint
//! failCommand`) on the clients whose appName is the history's database
//! (the writers' and the move's), drawn from the seed as the history
//! checker draws them (`tests/history/generate.rs`): one to three commands,
//! a closed connection or an error code (BadValue, ShutdownInProgress,
//! WriteConflict), or a write applied and answered with a write-concern
//! error; a commit is cut once at most.

use super::writers::Dice;
use docrel::bson::{doc, Document as BsonDoc};
use docrel::mongodb::{Client, Database};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const COMMANDS: &[&str] =
    &["insert", "update", "delete", "findAndModify", "find", "aggregate", "getMore", "commitTransaction", "bulkWrite"];
const WRITES: &[&str] = &["insert", "update", "delete", "findAndModify", "bulkWrite", "commitTransaction"];
const CODES: &[i32] = &[2, 91, 112];

/// A client of the server named `app` (a fail point targets the clients
/// whose appName is the history's database).
pub async fn client(db: &str, app: &str) -> docrel::Result<Client> {
    let uri = std::env::var(docrel::client::URI_VARIABLE).expect("MONGODB_URI is set by the scripts");
    let mut opts = docrel::client::options(&uri).await?;
    opts.app_name = Some(if app.is_empty() { db.to_owned() } else { app.to_owned() });
    docrel::connect_with(&uri, opts).await
}

/// One fail point drawn from `dice`.
fn fault(dice: &mut Dice, app: &str) -> BsonDoc {
    let mut commands: Vec<&str> = Vec::new();
    for _ in 0..1 + dice.below(3) {
        let c = COMMANDS[dice.below(COMMANDS.len())];
        if !commands.contains(&c) {
            commands.push(c);
        }
    }
    let mut data = doc! {"appName": app};
    if dice.below(4) == 0 {
        commands.retain(|c| WRITES.contains(c));
        if commands.is_empty() {
            commands.push(WRITES[dice.below(WRITES.len())]);
        }
        data.insert("writeConcernError", doc! {"code": 64, "errmsg": "waiting for replication timed out (fault)"});
    } else if dice.below(2) == 0 {
        data.insert("closeConnection", true);
    } else {
        data.insert("errorCode", CODES[dice.below(CODES.len())]);
    }
    // A commit cut more than once stays open on the server until reaped.
    let times = if commands.contains(&"commitTransaction") { 1 } else { 1 + dice.below(3) as i32 };
    data.insert("failCommands", commands);
    doc! {"configureFailPoint": "failCommand", "mode": {"times": times}, "data": data}
}

/// Fail points set, one after another, until stopped.
pub struct Faulting {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<docrel::Result<usize>>,
}

impl Faulting {
    /// Starts setting fail points on `db`'s history, at times drawn from `seed`.
    pub fn start(db: &Database, seed: u64) -> Faulting {
        let stop = Arc::new(AtomicBool::new(false));
        let (app, name, stopped) = (db.name().to_owned(), db.name().to_owned(), stop.clone());
        let task = tokio::spawn(async move {
            let admin = client(&name, "moves-janitor").await?.database("admin");
            let mut dice = Dice::new(seed, 0xfa1);
            let mut set = 0;
            while !stopped.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(50 + dice.below(400) as u64)).await;
                let command = fault(&mut dice, &app);
                admin
                    .run_command(command)
                    .await
                    .map_err(|e| docrel::Error::driver("configureFailPoint", "admin", e))?;
                set += 1;
            }
            Ok(set)
        });
        Faulting { stop, task }
    }

    /// Stops, turns the fail point off, and answers how many were set.
    pub async fn stop(self) -> docrel::Result<usize> {
        self.stop.store(true, Ordering::SeqCst);
        let set = self.task.await.expect("the faults' task")?;
        let admin = client("", "moves-janitor").await?.database("admin");
        let off = doc! {"configureFailPoint": "failCommand", "mode": "off"};
        admin.run_command(off).await.map_err(|e| docrel::Error::driver("configureFailPoint", "admin", e))?;
        Ok(set)
    }
}
