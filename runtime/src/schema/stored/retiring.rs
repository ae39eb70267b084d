//! Two-way arrays being made one-way (issue 39, N:M two-way → one-way),
//! published in the moves document beside the moves in progress: while
//! one is listed every process renews its lease row saying whether its
//! types still declare the side that goes, so `docrel schema retire`
//! takes that side out of the stored schema only once no live process of
//! the old version reads it.

use crate::error::{Error, Misuse, Result};
use mongodb::bson::{Bson, DateTime, Document as BsonDoc};
use serde::{Deserialize, Serialize};

/// A stored two-way pair whose side [`collection`](Self::collection)`.`[`field`](Self::field)
/// stops being kept; [`kept_collection`](Self::kept_collection)`.`[`kept_field`](Self::kept_field) stays.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetiringInverse {
    /// The collection of the side that goes (`courses`).
    pub collection: String,
    /// Its stored name (`students`).
    pub field: String,
    /// The collection of the array that stays (`students`).
    pub kept_collection: String,
    /// Its stored name (`courses`).
    pub kept_field: String,
    /// Whether the stored schema keeps the pair one-way already.
    pub retracted: bool,
    /// When it was listed, or retracted (server time).
    pub since: DateTime,
}

impl RetiringInverse {
    /// `courses.students`: the side that goes, as lease rows name it.
    pub fn side(&self) -> String {
        format!("{}.{}", self.collection, self.field)
    }

    /// `students.courses ↔ courses.students → one-way`, for messages.
    pub fn label(&self) -> String {
        format!("{}.{} ↔ {} → one-way", self.kept_collection, self.kept_field, self.side())
    }
}

/// The retiring pairs a moves document lists (none when it lists none).
pub(super) fn decode(d: &BsonDoc) -> Result<Vec<RetiringInverse>> {
    let Some(Bson::Array(listed)) = d.get("retiring") else { return Ok(Vec::new()) };
    let bad = |message: String| Error::Invalid {
        what: Misuse::Schema,
        message: format!("the two-way arrays being made one-way (in the `$moves` document) cannot be read: {message}"),
    };
    listed
        .iter()
        .map(|r| match r {
            Bson::Document(r) => crate::bson_compat::from_document(r.clone()).map_err(|e| bad(e.to_string())),
            other => Err(bad(format!("an entry is {other}, not a document"))),
        })
        .collect()
}

/// `retiring` as the moves document stores it.
pub(super) fn encode(retiring: &[RetiringInverse]) -> Result<Vec<Bson>> {
    retiring
        .iter()
        .map(|r| crate::bson_compat::to_document(r).map(Bson::Document))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| Error::Invalid {
            what: Misuse::Schema,
            message: format!("a retiring array cannot be stored: {e}"),
        })
}
