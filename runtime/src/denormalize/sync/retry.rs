//! How the worker retries what fails while it applies an event.
//!
//! A transient error (the server unreachable or stepping down, a write
//! conflict, a lock taken) says nothing about the event: the same write
//! succeeds once the server is back, so the worker waits and tries again
//! for as long as it takes, never giving the event up. Any other error is
//! the event's own (a holder the server's validator refuses, a summary
//! over its `max_bytes`): the same write fails the same way, so after
//! [`ATTEMPTS`] the worker records the event as a dead letter and goes on
//! instead of stopping every copy of the database behind it.

use crate::error::{Error, Failure};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// Attempts at an event that fails with a permanent error before it is a
/// dead letter (a retry covers a failure caused by a write racing the
/// event, gone once that write is done).
pub(super) const ATTEMPTS: u32 = 3;
/// The pause after the first failure, doubled after each one up to
/// [`LONGEST_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const LONGEST_PAUSE: Duration = Duration::from_secs(5);

/// Whether `e` may go away by itself: retried without limit (the one
/// classifier of server errors, [`Error::failure`]).
pub(super) fn transient(e: &Error) -> bool {
    e.failure() == Failure::Passing
}

/// How a retried operation ended.
pub(super) enum Outcome<T> {
    /// It succeeded.
    Done(T),
    /// It failed with a permanent error [`ATTEMPTS`] times (`attempts`
    /// counts the transient failures too).
    Failed { error: Error, attempts: u32 },
    /// `shutdown` completed while it waited to try again.
    Stopped,
}

/// Runs `op` until it succeeds, fails [`ATTEMPTS`] times with a permanent
/// error, or `shutdown` completes during a pause (an attempt under way is
/// never cut). `what` names it in the warnings.
pub(super) async fn retrying<T, F, Fut>(
    what: &str,
    mut shutdown: Pin<&mut impl Future<Output = ()>>,
    mut op: F,
) -> Outcome<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = crate::error::Result<T>>,
{
    let (mut attempts, mut permanent, mut pause) = (0u32, 0u32, FIRST_PAUSE);
    loop {
        attempts += 1;
        let error = match op().await {
            Ok(done) => return Outcome::Done(done),
            Err(e) => e,
        };
        let is_transient = transient(&error);
        if !is_transient {
            permanent += 1;
            if permanent >= ATTEMPTS {
                return Outcome::Failed { error, attempts };
            }
        }
        tracing::warn!(target: "docrel", what, attempts, transient = is_transient, %error, "sync worker retries");
        tokio::select! {
            biased;
            () = &mut shutdown => return Outcome::Stopped,
            () = tokio::time::sleep(pause) => {}
        }
        pause = (pause * 2).min(LONGEST_PAUSE);
    }
}

/// Runs `op` again while it fails with an error that may go away by itself
/// (an election interrupting a change stream, the server unreachable),
/// pausing as [`retrying`] does; `None` when `shutdown` completes during a
/// pause. Any other error is returned at once, for the caller to judge.
pub(super) async fn while_passing<T, F, Fut>(
    what: &str,
    mut shutdown: Pin<&mut impl Future<Output = ()>>,
    mut op: F,
) -> Option<mongodb::error::Result<T>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = mongodb::error::Result<T>>,
{
    let (mut attempts, mut pause) = (0u32, FIRST_PAUSE);
    loop {
        attempts += 1;
        match op().await {
            Err(e) if crate::error::driver_failure(&e) == Failure::Passing => {
                let error = crate::error::reason(&e);
                tracing::warn!(target: "docrel", what, attempts, %error, "sync worker opens its stream again");
            }
            done => return Some(done),
        }
        tokio::select! {
            biased;
            () = &mut shutdown => return None,
            () = tokio::time::sleep(pause) => {}
        }
        pause = (pause * 2).min(LONGEST_PAUSE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::error::ErrorKind;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn command_error(code: i32) -> Error {
        let reply = mongodb::bson::doc! {"ok": 0, "code": code, "errmsg": "x"};
        let e: mongodb::error::CommandError = crate::bson_compat::from_document(reply).expect("a command error");
        Error::driver("update", "c", mongodb::error::Error::from(ErrorKind::Command(e)))
    }

    #[test]
    fn conflicts_and_unreachable_servers_are_transient_the_rest_permanent() {
        for code in [112, 24, 46, 11601, 91, 10107, 13435, 189] {
            assert!(transient(&command_error(code)), "{code}");
        }
        for code in [121, 11000, 2, 13] {
            assert!(!transient(&command_error(code)), "{code}");
        }
        let invalid = Error::Invalid { what: crate::error::Misuse::SubsetElement, message: "too big".into() };
        assert!(!transient(&invalid));
    }

    fn write_error(code: i32) -> Error {
        use mongodb::error::{WriteError, WriteFailure};
        let reply = mongodb::bson::doc! {"code": code, "errmsg": "x"};
        let w: WriteError = crate::bson_compat::from_document(reply).expect("a write error");
        Error::driver("update", "c", mongodb::error::Error::from(ErrorKind::Write(WriteFailure::WriteError(w))))
    }

    /// The one classifier ([`Error::failure`]), as the worker and a repair read it.
    #[test]
    fn the_classifier_tells_passing_refused_and_other_apart() {
        use crate::error::Failure;
        assert_eq!(write_error(112).failure(), Failure::Passing, "a write conflict");
        for code in [11602, 91, 189, 10107] {
            assert_eq!(command_error(code).failure(), Failure::Passing, "an election or a shutdown: {code}");
        }
        for code in [121, 11000, 10334, 2] {
            assert_eq!(write_error(code).failure(), Failure::Refused, "write {code}");
        }
        for code in [121, 11000, 2, 13] {
            assert_eq!(command_error(code).failure(), Failure::Other, "command {code}");
        }
        let cause = Box::new(write_error(121));
        let fan_out = Error::FanOut {
            source_collection: "s",
            id: "1".into(),
            target: "t",
            path: "p".into(),
            done: String::new(),
            cause,
        };
        assert_eq!(fan_out.failure(), Failure::Refused, "a fan-out's cause");
        let invalid = Error::Invalid { what: crate::error::Misuse::SubsetElement, message: "too big".into() };
        assert_eq!(invalid.failure(), Failure::Other);
    }

    #[tokio::test]
    async fn permanent_failures_end_after_their_attempts_transient_ones_do_not_count() {
        let calls = AtomicU32::new(0);
        let outcome = retrying("t", std::pin::pin!(std::future::pending()), || async {
            // Transient once, then permanent.
            let n = calls.fetch_add(1, Ordering::SeqCst);
            Err::<(), _>(command_error(if n < 1 { 112 } else { 121 }))
        })
        .await;
        let Outcome::Failed { error, attempts } = outcome else { panic!("not failed") };
        assert_eq!(attempts, 1 + ATTEMPTS);
        assert!(error.to_string().contains("121"), "{error}");

        let outcome = retrying("t", std::pin::pin!(async {}), || async { Err::<(), _>(command_error(112)) }).await;
        assert!(matches!(outcome, Outcome::Stopped));
    }
}
