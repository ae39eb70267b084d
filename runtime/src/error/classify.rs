//! What an error says about itself: its kind's name, whether it may pass
//! by itself, what a retry or a repair makes of it.

use super::driver::{self, duplicate_key, unreachable, Failure};
use super::Error;

impl Error {
    /// Wraps a driver error with the operation and collection it came from.
    pub fn driver(operation: &'static str, collection: impl Into<String>, source: mongodb::error::Error) -> Self {
        Error::Driver { operation, collection: collection.into(), source: Box::new(source) }
    }

    /// The variant's name (`"FanOut"`, `"Driver"`, …), for logs and metrics.
    ///
    /// ```
    /// let err = docrel::Error::NotFound { collection: "parts", id: "1".into() };
    /// assert_eq!(err.kind(), "NotFound");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Connect { .. } => "Connect",
            Error::InvalidUri { .. } => "InvalidUri",
            Error::Driver { .. } => "Driver",
            Error::Unsupported { .. } => "Unsupported",
            Error::Decode { .. } => "Decode",
            Error::Encode { .. } => "Encode",
            Error::DocumentTooLarge { .. } => "DocumentTooLarge",
            Error::EmbedFull { .. } => "EmbedFull",
            Error::NotFound { .. } => "NotFound",
            Error::StillReferenced { .. } => "StillReferenced",
            Error::FanOut { .. } => "FanOut",
            Error::UnknownSource { .. } => "UnknownSource",
            Error::SubsetContended { .. } => "SubsetContended",
            Error::TransactionContended { .. } => "TransactionContended",
            Error::CommitUnknown { .. } => "CommitUnknown",
            Error::TwoWayField { .. } => "TwoWayField",
            Error::Invalid { .. } => "Invalid",
            Error::SyncHistoryLost { .. } => "SyncHistoryLost",
            Error::SchemaLease { .. } => "SchemaLease",
            Error::RulesChanged { .. } => "RulesChanged",
            Error::RulesUnfinished { .. } => "RulesUnfinished",
            Error::InsertUnfinished { .. } => "InsertUnfinished",
            Error::Bson { .. } => "Bson",
        }
    }

    /// Is this transient: the server was unreachable, stepping down or
    /// shutting down, or labelled the error retryable or transient? Such an
    /// operation may succeed when run again; a write that failed this way
    /// may or may not have been applied (its error message says so too).
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Connect { .. }
            | Error::SubsetContended { .. }
            | Error::TransactionContended { .. }
            | Error::CommitUnknown { .. } => true,
            Error::FanOut { cause, .. } => cause.is_transient(),
            Error::SchemaLease { transient, .. } => *transient,
            Error::RulesChanged { .. } => true,
            Error::RulesUnfinished { cause, .. } | Error::InsertUnfinished { cause, .. } => cause.is_transient(),
            Error::Driver { source, .. } => {
                source.contains_label("TransientTransactionError")
                    || source.contains_label("RetryableWriteError")
                    || unreachable(source)
            }
            _ => false,
        }
    }

    /// What this failure says about trying again (see [`Failure`]): the
    /// sync worker's retries and a repair's going on past a refused holder
    /// read it from here.
    pub(crate) fn failure(&self) -> Failure {
        match self {
            Error::Connect { .. }
            | Error::SubsetContended { .. }
            | Error::TransactionContended { .. }
            | Error::CommitUnknown { .. } => Failure::Passing,
            Error::FanOut { cause, .. } => cause.failure(),
            Error::SchemaLease { transient: true, .. } | Error::RulesChanged { .. } => Failure::Passing,
            Error::Driver { source, .. } => driver::failure(source),
            _ => Failure::Other,
        }
    }

    /// Is this the server's refusal of a document whose unique key (the
    /// `_id`, or a `#[document(unique)]` index) another document already
    /// has (error 11000)? Matchable without the driver's error internals.
    ///
    /// ```
    /// # docrel::testing::doc_test(|db| async move {
    /// # use docrel::Document;
    /// #[derive(Document, serde::Serialize, serde::Deserialize)]
    /// #[document(collection = "dup_doc_parts")]
    /// struct Part { #[serde(rename = "_id")] id: i32 }
    ///
    /// Part::repo(&db).insert(&Part { id: 1 }).await?;
    /// match Part::repo(&db).insert(&Part { id: 1 }).await {
    ///     Err(e) if e.is_duplicate_key() => assert!(e.to_string().contains("index `_id_`")),
    ///     other => panic!("{other:?}"),
    /// }
    /// # Ok(()) });
    /// ```
    pub fn is_duplicate_key(&self) -> bool {
        match self {
            Error::FanOut { cause, .. } => cause.is_duplicate_key(),
            Error::Driver { source, .. } => duplicate_key(source).is_some(),
            _ => false,
        }
    }

    /// Is this a server that could not be reached (or went away)?
    pub fn is_connection(&self) -> bool {
        match self {
            Error::Connect { .. } => true,
            Error::FanOut { cause, .. } => cause.is_connection(),
            Error::Driver { source, .. } => unreachable(source),
            _ => false,
        }
    }
}
