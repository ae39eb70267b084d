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

#[cfg(test)]
mod tests {
    use mongodb::error::{BulkWriteError, Error, ErrorKind, WriteError};

    fn write_error(code: i32, message: &str) -> WriteError {
        serde_json::from_value(serde_json::json!({"code": code, "errmsg": message})).expect("a write error")
    }

    /// docrel's messages carry the sentence; the driver's error stays
    /// whole behind `source()` and the accessors.
    #[test]
    fn docrels_message_says_the_sentence_and_keeps_the_drivers_error() {
        use std::error::Error as _;
        let mut b = BulkWriteError::default();
        b.write_errors.insert(1, write_error(121, "Document failed validation"));
        let cause = super::super::Error::driver("bulkWrite", "products", Error::from(ErrorKind::BulkWrite(b)));
        let text = cause.to_string();
        assert!(text.starts_with("bulkWrite on collection `products` failed: server error 121"), "{text}");
        assert!(text.contains("Document failed validation"), "{text}");
        for dump in ["BulkWriteError {", "WriteError {", "Kind:", "partial_result"] {
            assert!(!text.contains(dump), "`{dump}` in: {text}");
        }
        // `source()` is the field, the box included.
        let source = cause.source().and_then(|s| s.downcast_ref::<Box<Error>>()).expect("the driver's error");
        assert!(matches!(&*source.kind, ErrorKind::BulkWrite(b) if b.write_errors[&1].code == 121));
        assert!(!cause.is_duplicate_key() && !cause.is_transient());

        let mut dup = BulkWriteError::default();
        let key = "E11000 duplicate key error collection: db.parts index: sku_1 dup key: { sku: \"x\" }";
        dup.write_errors.insert(1, write_error(11000, key));
        let dup = super::super::Error::driver("bulkWrite", "parts", Error::from(ErrorKind::BulkWrite(dup)));
        assert!(dup.is_duplicate_key(), "{dup}");
        assert!(dup.to_string().contains("index `sku_1`"), "{dup}");
    }
}
