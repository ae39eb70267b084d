//! The middle of a fleet history, which the move tests of several kinds
//! share: the old version already writes in its own process; the move is
//! cut at a moment the seed draws and run again until switched while the
//! new version writes; then everything stops and the old version is read.

use super::{client, err, faults, Seeded};
use docrel::admin::moves;
use docrel::bson::{doc, Document as BsonDoc};
use docrel::mongodb::Database;
use docrel::schema::stored::{StoredMove, StoredType};
use docrel::Error;
use futures::future::BoxFuture;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One write of the new version, drawn by the generator.
pub type NewWrite = for<'a> fn(&'a Database, &'a mut Seeded) -> BoxFuture<'a, docrel::Result<()>>;

/// What a history is: the database, the move, its lease, and the seed.
pub struct History<'a> {
    pub db: &'a Database,
    pub program: &'a [StoredType],
    pub declared: &'a [StoredMove],
    pub lease: Duration,
    pub seed: u64,
    pub faulted: bool,
    /// The client name no fail point targets, for the stop and clean-up.
    pub janitor: &'a str,
    /// The collection whose first document tells the old version to stop.
    pub stop: &'a str,
}

/// Runs the move of `h` to switched while `new_write` writes (with fail
/// points on every client named after the database when faulted), then
/// stops the new version, the faults and `old`, and ends the transactions
/// a cut connection left open (the embedded server's plain writes meeting
/// one would stall, `tests/history/gate.rs`). Answers what `old` printed;
/// it must have succeeded.
#[allow(dead_code)] // not every fleet test runs a move
pub async fn run_move(h: &History<'_>, old: std::process::Child, new_write: NewWrite) -> docrel::Result<String> {
    let quiet = Arc::new(AtomicBool::new(false));
    let name = h.db.name().to_owned();
    let faulting = h.faulted.then(|| {
        let (name, seed, quiet, janitor) = (name.clone(), h.seed, quiet.clone(), h.janitor.to_owned());
        tokio::spawn(async move { faults(name, seed, quiet, &janitor).await })
    });
    let during = async {
        let stop = Arc::new(AtomicBool::new(false));
        let (db, told, seed, faulted) = (h.db.clone(), stop.clone(), h.seed, h.faulted);
        let new = tokio::spawn(async move {
            let mut n = Seeded(11 + seed * 103);
            while !told.load(Ordering::SeqCst) {
                match new_write(&db, &mut n).await {
                    Err(_) if faulted => {}
                    other => other?,
                }
            }
            Ok::<_, Error>(())
        });
        let cut = moves::run(h.db, h.program, h.declared, h.lease, || false, |_| {});
        let _ = tokio::time::timeout(h.lease * (1 + (h.seed % 5) as u32), cut).await;
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            match moves::run(h.db, h.program, h.declared, h.lease, || false, |_| {}).await {
                Ok(reports) if reports.iter().all(moves::MoveReport::switched) => break,
                Ok(reports) => panic!("a run that was not stopped ended before switched: {reports:?}"),
                Err(e) if h.faulted && Instant::now() < deadline => eprintln!("the move failed ({e}); run again"),
                Err(e) => return Err(e),
            }
        }
        tokio::time::sleep(Duration::from_millis(800)).await;
        stop.store(true, Ordering::SeqCst);
        new.await.expect("the new version's writer")
    };
    let during = during.await;
    quiet.store(true, Ordering::SeqCst);
    if let Ok(janitor) = client(&name, h.janitor).await {
        let _ = janitor.database(&name).collection::<BsonDoc>(h.stop).insert_one(doc! {"stop": true}).await;
    }
    let old = old.wait_with_output().expect("the old version ends");
    if let Some(faulting) = faulting {
        let set = faulting.await.expect("the faults' task")?;
        println!("{set} fail point(s) set");
        let janitor = client(&name, h.janitor).await?;
        janitor.database("admin").run_command(doc! {"killAllSessions": []}).await.map_err(err)?;
    }
    let stdout = String::from_utf8_lossy(&old.stdout).into_owned();
    assert!(old.status.success(), "the old version failed:\n{stdout}\n{}", String::from_utf8_lossy(&old.stderr));
    during?;
    Ok(stdout)
}
