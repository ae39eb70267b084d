//! What a repository call may write, for the mirror of a move
//! (`moved.rs`): named before the call runs, computed only when its
//! collection takes part in a move.

use crate::error::{Error, Result};
use crate::id::DocId;
use crate::schema::document::Document;
use crate::store::{Filter, Update};
use mongodb::bson::{Bson, Document as BsonDoc};

/// The documents a call may write: by id, by filter, or given whole.
#[derive(Debug, Clone, Default)]
pub struct Affected {
    pub(super) ids: Vec<Bson>,
    pub(super) filter: Option<BsonDoc>,
    pub(super) docs: Vec<BsonDoc>,
    /// The fields an update touches; `None`: any (a whole document).
    pub(super) touched: Option<Vec<String>>,
    /// A document given whole has no id yet: its insert generates one.
    pub(super) unnamed: bool,
}

impl Affected {
    pub(super) fn documents<T: Document>(docs: &[T]) -> Result<Self> {
        let mut out = Affected::default();
        for d in docs {
            let body = crate::bson_compat::to_document(d).map_err(|e| Error::Encode {
                what: format!("a document of `{}`", T::COLLECTION),
                message: e.to_string(),
            })?;
            match d.id() {
                Some(id) => out.ids.push(id.to_bson()),
                None => out.unnamed = true,
            }
            out.docs.push(body);
        }
        Ok(out)
    }

    pub(super) fn by_id<T>(id: Bson, update: Option<&Update<T>>) -> Self {
        Affected { ids: vec![id], touched: update.map(touched), ..Affected::default() }
    }

    pub(super) fn matching<T>(filter: &Filter, update: Option<&Update<T>>) -> Result<Self> {
        Ok(Affected {
            filter: Some(filter.clone().into_document()?),
            touched: update.map(touched),
            ..Affected::default()
        })
    }

    /// Whether the call may write the array `field`.
    pub(super) fn writes(&self, field: &str) -> bool {
        self.touched.as_ref().is_none_or(|t| {
            t.iter().any(|p| p == field || p.strip_prefix(field).is_some_and(|rest| rest.starts_with('.')))
        })
    }
}

fn touched<T>(update: &Update<T>) -> Vec<String> {
    update.touched().map(str::to_owned).collect()
}
