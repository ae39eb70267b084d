//! The schema published in the database, so the rules of derived data
//! travel with the data: every docrel process can read them, whether or not
//! it links the types that declare them.
//!
//! [`publish`] writes this program's part (one document per collection in
//! [`SCHEMA_COLLECTION`], versioned with [`FORMAT`] and a [`fingerprint`]),
//! [`load`] reads what every program published, and [`export`] gives this
//! program's part as JSON without a database (for `docrel schema diff`).

mod bounds;
mod descriptors;
mod diff;
mod form;
mod holders;
pub(crate) mod inverses;
mod lease;
mod lease_time;
mod merge;
pub(crate) mod moves;
pub(crate) mod moves_state;
mod obey;
mod old_array;
mod publish;
mod rebound;
mod retract;
pub(crate) mod transitions;

pub use bounds::BoundChange;
pub(crate) use descriptors::schema as descriptor;
pub(crate) use diff::diff_building;
pub use diff::{diff, Diff};
pub use form::program;
pub use form::{
    Key, StoredBucket, StoredCopy, StoredElemCopy, StoredElemRef, StoredField, StoredIndex, StoredKind, StoredRelation,
    StoredSubset, StoredType, FORMAT,
};
pub(crate) use holders::this_process;
pub use holders::LEASES_COLLECTION;
pub use inverses::{AdoptedInverse, InverseChange};
pub(crate) use lease::{held_until, hold};
pub use lease_time::{lease, lease_for, set_lease, set_lease_for, DEFAULT_LEASE};
pub use merge::Conflict;
pub use moves::{program_moves, read_export, Exported, MoveEnd, StoredBuckets, StoredMove, MOVES_FORMAT};
pub use moves_state::{ActiveMove, MoveState, OldArray, MOVES_ID};
#[cfg(feature = "testing")]
pub(crate) use obey::obey_saying;
pub use obey::{active_moves, confirmed_ago, keep_current, obey, Obeyed};
pub(crate) use publish::load_transitions;
pub use publish::{
    fingerprint, load, load_building, load_moves, load_retiring, publish, publish_building, publish_moves,
    publish_retiring, publish_types, Published, SCHEMA_COLLECTION,
};
pub use rebound::{rebound, reinverse};
pub use retract::retract;
pub(crate) use retract::without as without_rule;
pub use transitions::{BuildingInverse, RetiringInverse};

/// The rules of `ours` joined to those of `stored` (a rule both declare
/// differently is `ours`'s).
pub(crate) fn merge_rules(stored: &StoredType, ours: &StoredType) -> StoredType {
    merge::merge(stored, ours).map_or_else(|_| ours.clone(), |(merged, _)| merged)
}

/// This program's part of the schema as JSON (what [`publish`] would
/// write, before merging with other programs' parts), with the moves it
/// declares (`#[document(moved_from = ..)]`): then its format is
/// [`MOVES_FORMAT`], which older docrel versions refuse.
///
/// ```
/// #[derive(docrel::Document, serde::Serialize, serde::Deserialize)]
/// #[document(collection = "hosts")]
/// struct Host { #[serde(rename = "_id")] id: i64, name: String }
///
/// let json = docrel::schema::export();
/// assert!(json.contains("\"collection\": \"hosts\""));
/// ```
pub fn export() -> String {
    let moves = program_moves();
    let value = if moves.is_empty() {
        serde_json::json!({"format": FORMAT, "types": program()})
    } else {
        serde_json::json!({"format": MOVES_FORMAT, "types": program(), "moves": moves})
    };
    serde_json::to_string_pretty(&value).unwrap_or_default()
}
