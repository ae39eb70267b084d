//! Running a body of docrel writes in one transaction with the driver's
//! convenient API: the body is retried only on `TransientTransactionError`
//! (a write conflict with a concurrent transaction, say), and only the
//! commit is retried on `UnknownTransactionCommitResult`, so a body is never
//! applied twice; the driver gives up after 120 s of retries.

use crate::error::{Error, Result};
pub(crate) use crate::store::session::in_transaction;
use crate::store::session::Cx;
use mongodb::{ClientSession, Database};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

/// A docrel error raised inside a transaction body, carried through the
/// driver's error (which only knows its own kinds) and taken out again.
#[derive(Clone)]
struct Carried(Arc<Mutex<Option<Error>>>);

/// Turns a docrel error into a driver error for the transaction runner:
/// a driver error keeps its labels (so transient ones are retried), any
/// other is carried to the caller unchanged.
fn into_driver(e: Error, slot: &Carried) -> mongodb::error::Error {
    if let Some(labelled) = transient_source(&e) {
        return labelled;
    }
    if let Ok(mut s) = slot.0.lock() {
        *s = Some(e);
    }
    mongodb::error::Error::custom(slot.clone())
}

/// The driver error inside `e` when it is one the runner retries on.
fn transient_source(e: &Error) -> Option<mongodb::error::Error> {
    match e {
        Error::Driver { source, .. }
            if source.contains_label(mongodb::error::TRANSIENT_TRANSACTION_ERROR)
                || source.contains_label(mongodb::error::UNKNOWN_TRANSACTION_COMMIT_RESULT) =>
        {
            Some((**source).clone())
        }
        Error::FanOut { cause, .. } => transient_source(cause),
        _ => None,
    }
}

/// The body of a transaction: called again from the start on a transient error.
pub(crate) type Body<'a, R> =
    dyn for<'s> FnMut(&'s mut ClientSession) -> Pin<Box<dyn Future<Output = Result<R>> + Send + 's>> + Send + 'a;

/// Runs `body` in a transaction on a session of `db`'s client, retried as
/// the driver's convenient API retries. `what` names the operation in errors.
pub(crate) async fn run<R>(db: &Database, what: &'static str, body: &mut Body<'_, R>) -> Result<R> {
    // Without causal consistency: a retried transaction would otherwise
    // send its first command with a read concern after the last attempt's
    // time, which a first `bulkWrite` may not take (the embedded server
    // refuses it). The transaction reads from the primary, which has every
    // write of the attempt before.
    let session = db.client().start_session().causal_consistency(false);
    let mut session = session.await.map_err(|e| Error::driver("startSession", db.name(), e))?;
    run_in(&mut session, db.name(), what, body).await
}

/// Runs `body` in a transaction without ever nesting one: in the caller's
/// own transaction when `session` is in one (the body's writes then commit
/// or abort with the caller's, and retrying is the caller's), otherwise in
/// a new one on `session`, or on a session of `db`'s client when none is given.
pub(crate) async fn run_or_join<R>(cx: &mut Cx<'_>, what: &'static str, body: &mut Body<'_, R>) -> Result<R> {
    let db = cx.db;
    let Some(s) = cx.session() else { return run(db, what, body).await };
    if in_transaction(s).await {
        body(s).await
    } else {
        run_in(s, db.name(), what, body).await
    }
}

/// [`run`] on a session the caller owns.
pub(crate) async fn run_in<R>(
    session: &mut ClientSession,
    namespace: &str,
    what: &'static str,
    body: &mut Body<'_, R>,
) -> Result<R> {
    let slot = Carried(Arc::new(Mutex::new(None)));
    let mut attempt = 0u32;
    // A transaction reads from the primary: one inheriting the client's
    // `secondaryPreferred` would refuse its first read.
    let result = session
        .start_transaction()
        .selection_criteria(crate::store::primary())
        .and_run((body, slot.clone()), |s, (body, slot)| {
            attempt += 1;
            if attempt > 1 {
                crate::client::trace::retry(what, attempt);
            }
            let slot = slot.clone();
            let fut = body(s);
            Box::pin(async move { fut.await.map_err(|e| into_driver(e, &slot)) })
        })
        .await;
    match result {
        Ok(r) => Ok(r),
        Err(e) => {
            if e.get_custom::<Carried>().is_some() {
                if let Some(carried) = slot.0.lock().ok().and_then(|mut s| s.take()) {
                    return Err(carried);
                }
            }
            // The driver retries a commit of unknown outcome until its
            // budget runs out; that error is the commit's, which may have landed.
            if e.contains_label("UnknownTransactionCommitResult") {
                let message = crate::error::reason(&e);
                return Err(Error::CommitUnknown { operation: what, namespace: namespace.to_owned(), message });
            }
            if matches!(*e.kind, mongodb::error::ErrorKind::Transaction { .. }) && is_timeout(&e) {
                return Err(Error::TransactionContended { operation: what, namespace: namespace.to_owned() });
            }
            Err(Error::driver(what, namespace.to_owned(), e))
        }
    }
}

fn is_timeout(e: &mongodb::error::Error) -> bool {
    e.to_string().to_ascii_lowercase().contains("time")
}

/// Whether the deployment refused a transaction because it has none (a
/// standalone server): code 20, IllegalOperation.
pub(crate) fn unsupported(e: &Error) -> bool {
    match e {
        Error::Driver { source, .. } => match &*source.kind {
            mongodb::error::ErrorKind::Command(c) => c.code == 20,
            mongodb::error::ErrorKind::Transaction { message, .. } => {
                message.contains("replica set") || message.contains("not supported by this deployment")
            }
            _ => source.to_string().contains("Transaction numbers are only allowed"),
        },
        _ => false,
    }
}

/// Whether a deployment's server refused a transaction as a standalone
/// ([`crate::kept`]), so later calls skip the attempt.
#[derive(Default)]
struct Standalone(std::sync::atomic::AtomicBool);

pub(crate) fn standalone(db: &Database) -> bool {
    crate::kept::of_client::<Standalone>(db.client()).0.load(std::sync::atomic::Ordering::Relaxed)
}

pub(crate) fn remember_standalone(db: &Database) {
    crate::kept::of_client::<Standalone>(db.client()).0.store(true, std::sync::atomic::Ordering::Relaxed);
}
