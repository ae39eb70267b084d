//! The moves in progress in a database, published beside the stored types
//! (one document, [`MOVES_ID`], in the schema collection) so every process
//! reads them with the schema, in the same round trip, under the same
//! lease. Its format is [`super::moves::MOVES_FORMAT`]: an older docrel cannot
//! read it and refuses to write (`Error::SchemaLease`) while a move runs,
//! which fails closed rather than keeping one shape only.

use super::moves::StoredMove;
pub use super::old_array::OldArray;
use crate::error::{Error, Misuse, Result};
use mongodb::bson::{doc, Bson, DateTime, Document as BsonDoc};
use serde::{Deserialize, Serialize};

/// The `_id` of the moves document: no collection can be named so.
pub const MOVES_ID: &str = "$moves";

/// Where a move stands, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MoveState {
    /// Published: every process learns of the move before anything depends
    /// on it.
    Announced,
    /// Every docrel write of either shape is applied to the other too.
    Maintained,
    /// The existing elements are copied; both shapes are still kept.
    Moved,
    /// The new version reads the new shape.
    Switched,
    /// The old shape is no longer kept.
    Retired,
}

impl MoveState {
    /// Every state, in order.
    pub const ALL: [MoveState; 5] =
        [MoveState::Announced, MoveState::Maintained, MoveState::Moved, MoveState::Switched, MoveState::Retired];

    /// The state after this one (`None` after the last).
    pub fn next(self) -> Option<MoveState> {
        Self::ALL.iter().position(|s| *s == self).and_then(|i| Self::ALL.get(i + 1)).copied()
    }

    /// Its stored name.
    pub fn name(self) -> &'static str {
        match self {
            MoveState::Announced => "announced",
            MoveState::Maintained => "maintained",
            MoveState::Moved => "moved",
            MoveState::Switched => "switched",
            MoveState::Retired => "retired",
        }
    }
}

impl std::fmt::Display for MoveState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A move in progress, as published.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActiveMove {
    /// What moves where.
    #[serde(rename = "move")]
    pub spec: StoredMove,
    /// The stored name of the old array (`comments`), as the old version
    /// published it.
    pub field: String,
    /// The old array's bound, which holds until the move is retired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<u32>,
    /// What the old array holds: the elements themselves, or the ids of
    /// documents that are already in the new collection.
    #[serde(default, skip_serializing_if = "OldArray::is_elements")]
    pub old: OldArray,
    /// The old field is one document the old version's type requires (no
    /// `Option`): while the old shape is kept, a parent keeps its document
    /// ([`OldArray::One`] only).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// Its state.
    pub state: MoveState,
    /// When it entered that state (server time).
    pub since: DateTime,
    /// The change running it (`_docrel_schema_changes`).
    pub change: String,
}

/// Whether a document of the schema collection is the moves document.
pub(super) fn is_moves(d: &BsonDoc) -> bool {
    d.get_str("_id").is_ok_and(|id| id == MOVES_ID)
}

/// The moves a moves document lists; refused when its format is unknown.
pub(super) fn decode(d: &BsonDoc) -> Result<Vec<ActiveMove>> {
    let bad = |message: String| Error::Invalid {
        what: Misuse::Schema,
        message: format!(
            "the moves in progress (the `$moves` document of the stored schema) cannot be read: {message}"
        ),
    };
    let format = d.get("format").and_then(|f| f.as_i32().map(i64::from).or_else(|| f.as_i64())).unwrap_or(0);
    if format != i64::from(super::moves::MOVES_FORMAT) {
        return Err(bad(format!(
            "format {format} where this docrel reads {}; upgrade docrel",
            super::moves::MOVES_FORMAT
        )));
    }
    // A document listing only two-way arrays changing direction has none.
    let Some(moves) = d.get("moves") else { return Ok(Vec::new()) };
    let moves = moves.as_array().ok_or_else(|| bad(format!("`moves` is {moves}, not an array")))?;
    moves
        .iter()
        .map(|m| match m {
            Bson::Document(m) => crate::bson_compat::from_document(m.clone()).map_err(|e| bad(e.to_string())),
            other => Err(bad(format!("a move is {other}, not a document"))),
        })
        .collect()
}
