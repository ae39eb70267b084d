//! What docrel keeps for a caller's transaction until it ends: the
//! after-commit hooks of the writes made in it, and the rules (a
//! database's schema graph) each write followed. [`commit`] runs the hooks
//! once the transaction committed, and first confirms that the rules did
//! not change past the lease they were followed under: a rule change waits
//! two leases and backfills what writers committed before, so a
//! transaction that outlives the lease and commits writes made under old
//! rules would escape the backfill.

use crate::error::{Error, Result};
use mongodb::{ClientSession, Database};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// An after-commit hook waiting for its transaction's commit.
pub(super) type Pending = Box<dyn FnOnce() + Send>;

/// One transaction: its server session's id and that session's
/// transaction number. The driver pools server sessions, so the id alone
/// names every transaction a pooled session ever runs: hooks of one that
/// ended without docrel's `commit` or `abort` (the driver's abort, a
/// dropped session) would run at the next one's commit.
type Txn = (String, Option<i64>);

/// The rules a write in the transaction followed: the database, its graph,
/// and when the lease they were confirmed under lapses.
type Followed = (Database, &'static crate::schema::graph::Graph, Option<Instant>);

#[derive(Default)]
struct Waiting {
    hooks: Vec<Pending>,
    followed: Vec<Followed>,
}

/// What waits for callers' transactions, by transaction. Keyed by the
/// server session's id, a random UUID no two sessions share, in any
/// deployment.
fn waiting() -> &'static Mutex<HashMap<Txn, Waiting>> {
    static WAITING: OnceLock<Mutex<HashMap<Txn, Waiting>>> = OnceLock::new();
    WAITING.get_or_init(Default::default)
}

fn key(session: &ClientSession) -> Txn {
    (session.id().to_string(), txn_number(session))
}

/// The session's transaction number. The driver keeps it private and
/// shows it only in the session's `Debug` form (`txn_number: N`). If a
/// driver upgrade hides it, hooks fall back to the id alone, and
/// `tests/hooks.rs`' `hooks_of_a_transaction_the_driver_aborted_never_run`
/// fails, so the upgrade cannot pass unnoticed.
fn txn_number(session: &ClientSession) -> Option<i64> {
    let shown = format!("{session:?}");
    let at = shown.find("txn_number: ")? + "txn_number: ".len();
    let digits: String = shown[at..].chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

fn take(session: &ClientSession) -> Waiting {
    waiting().lock().ok().and_then(|mut w| w.remove(&key(session))).unwrap_or_default()
}

/// What waits for the transaction `session` is in, once what waits for
/// earlier transactions of its server session, which ended without
/// docrel's `commit` or `abort`, is dropped (their hooks never run).
/// `None` when the session is in no transaction: only the drop is done.
fn with_current<R>(session: &ClientSession, in_transaction: bool, f: impl FnOnce(&mut Waiting) -> R) -> Option<R> {
    // The session's `Debug` form is long: its key is made once per call.
    let (id, now) = key(session);
    let mut w = waiting().lock().ok()?;
    w.retain(|(other, txn), _| *other != id || *txn == now);
    in_transaction.then(|| f(w.entry((id, now)).or_default()))
}

/// Drops what waits for transactions of this server session that ended
/// without docrel's `commit` or `abort`: their hooks never run.
pub(super) fn drop_ended(session: &ClientSession) {
    with_current(session, false, |_| ());
}

/// Queues `hook` for the commit of the transaction `session` is in.
pub(super) fn wait(session: &ClientSession, hook: Pending) {
    with_current(session, true, |w| w.hooks.push(hook));
}

/// Records that a write in the caller's session followed the rules of
/// `db` as they are now, when the session is in a transaction.
pub(super) async fn followed(session: &mut ClientSession, db: &Database) {
    if !crate::store::transaction::in_transaction(session).await {
        return;
    }
    let graph = crate::schema::graph::of(db);
    let until = crate::schema::stored::held_until(db);
    with_current(session, true, |w| {
        if !w.followed.iter().any(|(d, g, _)| d.name() == db.name() && std::ptr::eq(*g, graph)) {
            w.followed.push((db.clone(), graph, until));
        }
    });
}

/// The first database whose rules changed since a write of the
/// transaction followed them past their lease, confirming lapsed ones.
async fn changed(followed: &[Followed]) -> Result<Option<Error>> {
    for (db, graph, until) in followed {
        if until.is_none_or(|until| Instant::now() < until) {
            continue;
        }
        crate::schema::stored::hold(db).await?;
        if !std::ptr::eq(crate::schema::graph::of(db), *graph) {
            let lease = crate::schema::lease_for(db);
            return Ok(Some(Error::RulesChanged { database: db.name().to_owned(), lease }));
        }
    }
    Ok(None)
}

/// Commits the transaction of `session` with the driver, then runs the
/// [`super::Hooks::after_commit`] hooks of the docrel writes made in it,
/// once each, in order. When the commit fails they wait for a retried
/// `commit` (an unknown commit result may be retried) or are dropped by
/// [`abort`]. A transaction committed with the driver's own
/// `commit_transaction` runs none: docrel does not see that commit.
///
/// When the transaction outlived the lease under which its docrel writes
/// followed the published rules, and those rules changed meanwhile, it is
/// aborted instead ([`Error::RulesChanged`]: nothing was written; run it
/// again), since the rule change's backfill would not see its writes.
///
/// ```
/// # docrel::testing::doc_test(|db| async move {
/// # use docrel::{Document, bson::oid::ObjectId};
/// # use serde::{Deserialize, Serialize};
/// # #[derive(Document, Serialize, Deserialize)]
/// # #[document(collection = "parts")]
/// # struct Part { #[serde(rename = "_id")] id: ObjectId, name: String }
/// let driver = |e| docrel::Error::driver("session", "", e);
/// let mut s = db.client().start_session().await.map_err(driver)?;
/// s.start_transaction().await.map_err(driver)?;
/// Part::repo(&db).insert(&Part { id: ObjectId::new(), name: "bolt".into() }).session(&mut s).await?;
/// docrel::repository::commit(&mut s).await?; // Part's after-commit hooks, if any, run now
/// # Ok(()) });
/// ```
pub async fn commit(session: &mut ClientSession) -> Result<()> {
    let waits = take(session);
    let stop = match changed(&waits.followed).await {
        Ok(stop) => stop,
        Err(e) => Some(e),
    };
    if let Some(stop) = stop {
        let _ = session.abort_transaction().await;
        return Err(stop);
    }
    if let Err(e) = session.commit_transaction().await {
        // A retried `commit` runs them once the commit succeeds.
        if let Ok(mut w) = waiting().lock() {
            w.insert(key(session), waits);
        }
        return Err(Error::driver("commitTransaction", "", e));
    }
    for hook in waits.hooks {
        hook();
    }
    Ok(())
}

/// Aborts the transaction of `session` with the driver, and drops the
/// after-commit hooks of the docrel writes made in it: they never run.
pub async fn abort(session: &mut ClientSession) -> Result<()> {
    drop(take(session));
    session.abort_transaction().await.map_err(|e| Error::driver("abortTransaction", "", e))
}
