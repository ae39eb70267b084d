//! Two-way arrays changing direction (issue 39, N:M), published in the
//! moves document beside the moves in progress, read with the schema by
//! every process:
//!
//! - `retiring`: a side that stops being kept (two-way → one-way). While one
//!   is listed every process renews its lease row saying whether its types
//!   still declare that side, so `docrel schema retire` takes it out of the
//!   stored schema only once no live process of the old version reads it.
//! - `building`: a side an online change is building (one-way → two-way).
//!   Until it is built it holds only the links written since its inverse
//!   was published, so a program declaring it reads it from the arrays
//!   that name each document.

use crate::error::{Error, Misuse, Result};
use mongodb::bson::{Bson, DateTime, Document as BsonDoc};
use serde::de::DeserializeOwned;
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

/// The other side of an array made two-way, while a change builds it:
/// [`collection`](Self::collection)`.`[`field`](Self::field) holds the ids
/// of the documents of [`from_collection`](Self::from_collection) whose
/// [`from_field`](Self::from_field) names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct BuildingInverse {
    /// The collection of the side being built (`courses`).
    pub collection: String,
    /// Its stored name (`students`).
    pub field: String,
    /// The collection of the array it is built from (`students`).
    pub from_collection: String,
    /// That array's stored name (`courses`).
    pub from_field: String,
}

impl From<&super::inverses::InverseChange> for BuildingInverse {
    /// The other side `c` builds.
    fn from(c: &super::inverses::InverseChange) -> Self {
        BuildingInverse {
            collection: c.target.clone(),
            field: c.inverse.clone(),
            from_collection: c.collection.clone(),
            from_field: c.field.clone(),
        }
    }
}

/// The stored rules a graph keeps beside its types: bounds, adopted
/// inverses, other sides not built yet.
pub(crate) type Rules = (Vec<(String, String, u32)>, Vec<super::inverses::AdoptedInverse>, Vec<BuildingInverse>);

/// The entries a moves document lists under `key` (none when it lists none).
pub(super) fn decode<T: DeserializeOwned>(d: &BsonDoc, key: &str) -> Result<Vec<T>> {
    let Some(Bson::Array(listed)) = d.get(key) else { return Ok(Vec::new()) };
    let bad = |message: String| Error::Invalid {
        what: Misuse::Schema,
        message: format!("the `{key}` list of the `$moves` document cannot be read: {message}"),
    };
    listed
        .iter()
        .map(|r| match r {
            Bson::Document(r) => crate::bson_compat::from_document(r.clone()).map_err(|e| bad(e.to_string())),
            other => Err(bad(format!("an entry is {other}, not a document"))),
        })
        .collect()
}

/// `listed` as the moves document stores it; an error names `what` an
/// entry is (`a move`).
pub(super) fn encode<T: Serialize>(listed: &[T], what: &str) -> Result<Vec<Bson>> {
    listed
        .iter()
        .map(|r| crate::bson_compat::to_document(r).map(Bson::Document))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| Error::Invalid { what: Misuse::Schema, message: format!("{what} cannot be stored: {e}") })
}
