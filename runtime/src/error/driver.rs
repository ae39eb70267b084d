//! What the driver said, in words: a duplicate key by its index and key,
//! anything else as the server's reason in one sentence, and whether a
//! server went away.

use super::reason::reason;

/// ` on collection `name`` for a message, or nothing when the collection
/// is unknown (an error converted with `?`).
pub(super) fn on_collection(collection: &str) -> String {
    match collection {
        "" => String::new(),
        c => format!(" on collection `{c}`"),
    }
}

/// The index and the key of a duplicate-key refusal (11000), from the
/// server's message (`... index: sku_1 dup key: { sku: "x" }`).
pub(super) fn duplicate_key(e: &mongodb::error::Error) -> Option<(String, String)> {
    use mongodb::error::{ErrorKind, WriteFailure};
    let message = match &*e.kind {
        ErrorKind::Write(WriteFailure::WriteError(w)) if w.code == 11000 => w.message.clone(),
        ErrorKind::Command(c) if c.code == 11000 => c.message.clone(),
        ErrorKind::InsertMany(m) => m.write_errors.as_ref()?.iter().find(|w| w.code == 11000)?.message.clone(),
        ErrorKind::BulkWrite(b) => {
            let first = b.write_errors.iter().filter(|(_, w)| w.code == 11000).min_by_key(|(i, _)| **i)?;
            first.1.message.clone()
        }
        _ => return None,
    };
    let index = message.split("index: ").nth(1).and_then(|r| r.split(" dup key").next()).unwrap_or("?");
    let key = message.split("dup key: ").nth(1).unwrap_or("?");
    Some((index.trim().to_owned(), key.trim().to_owned()))
}

/// What the driver said, in words: a duplicate key by its index and key,
/// anything else as [`reason`] gives it.
pub(super) fn explained(e: &mongodb::error::Error) -> String {
    match duplicate_key(e) {
        Some((index, key)) => format!(
            "a document with the same unique key is already stored (index `{index}`, key {key}); catch it with \
             `Error::is_duplicate_key()`"
        ),
        None => reason(e),
    }
}

/// A server that could not be reached or went away, or answered with one of
/// the codes the drivers' retryable reads and writes specifications retry
/// (shutting down, stepping down, not primary, network).
pub(super) fn unreachable(e: &mongodb::error::Error) -> bool {
    use mongodb::error::ErrorKind;
    const RETRYABLE_CODES: [i32; 13] = [6, 7, 89, 91, 134, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436];
    match &*e.kind {
        ErrorKind::Io(_) | ErrorKind::ServerSelection { .. } | ErrorKind::ConnectionPoolCleared { .. } => true,
        ErrorKind::Command(c) => RETRYABLE_CODES.contains(&c.code),
        _ => false,
    }
}

/// For a transient error, a sentence saying so.
pub(super) fn transient_note(e: &mongodb::error::Error) -> &'static str {
    if e.contains_label("TransientTransactionError") {
        ". This is transient (TransientTransactionError): running the whole transaction again may succeed"
    } else if e.contains_label("RetryableWriteError") || unreachable(e) {
        ". This is transient: the server was unreachable or stepping down; the operation may succeed when \
         retried, and a write may or may not have been applied (read it back before retrying one that is \
         not idempotent)"
    } else {
        ""
    }
}

/// What a failed operation says about trying it again, from the one place
/// that reads the server's codes: the sync worker retries a
/// [`Failure::Passing`] one without limit, and a repair goes on past a
/// holder whose write is [`Failure::Refused`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// It may go away by itself: the server unreachable or stepping down, a
    /// retryable or transient label, a write conflict, a lock taken. The
    /// same operation succeeds once the server is back or the other
    /// writer done.
    Passing,
    /// The server refused a write for what it would make of the document
    /// (a validator, a document grown too large, a duplicate key): the
    /// same write fails the same way.
    Refused,
    /// Anything else (a command the server refuses, bad input).
    Other,
}

/// Server codes that say "try again" without a retryable label: write
/// conflicts and locks outside a transaction, an operation interrupted by
/// a step-down or an election (MongoDB 9.0 interrupts change streams with
/// 11602 at an election), a node that is no longer primary or shutting
/// down. The server labels most of them on the commands the driver
/// retries; reads, aggregates and a change stream's `getMore` may come
/// without the label.
const PASSING_CODES: [i32; 10] = [
    112,   // WriteConflict
    24,    // LockTimeout
    46,    // LockBusy
    11601, // Interrupted
    11602, // InterruptedDueToReplStateChange
    11600, // InterruptedAtShutdown
    91,    // ShutdownInProgress
    189,   // PrimarySteppedDown
    10107, // NotWritablePrimary
    13435, // NotPrimaryNoSecondaryOk
];

/// [`Failure`] of an error of the driver.
pub(crate) fn failure(e: &mongodb::error::Error) -> Failure {
    use mongodb::error::{ErrorKind, WriteFailure};
    let code = match &*e.kind {
        ErrorKind::Command(c) => Some(c.code),
        ErrorKind::Write(WriteFailure::WriteError(w)) => Some(w.code),
        ErrorKind::Write(WriteFailure::WriteConcernError(w)) => Some(w.code),
        _ => None,
    };
    let labelled = e.contains_label("TransientTransactionError") || e.contains_label("RetryableWriteError");
    if labelled || unreachable(e) || code.is_some_and(|c| PASSING_CODES.contains(&c)) {
        return Failure::Passing;
    }
    match &*e.kind {
        ErrorKind::Write(WriteFailure::WriteError(_)) => Failure::Refused,
        _ => Failure::Other,
    }
}
