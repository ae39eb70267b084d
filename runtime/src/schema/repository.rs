//! The declaration of [`Repository`], the handle of a document type's
//! collection in one database. It is declared here, in the schema layer,
//! so that the `Document` trait's `repo` can return it and code generic
//! over any document reaches its repository (`T::repo(&db)`); its
//! constructor and every call on it are in the repository layer above.

use mongodb::bson::RawDocumentBuf;
use mongodb::{Collection, Database};
use std::marker::PhantomData;

/// The typed repository of document type `T` in one database.
///
/// ```
/// # docrel::testing::doc_test(|db| async move {
/// use docrel::{Document, repository::Repository, bson::oid::ObjectId};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Document, Serialize, Deserialize, Debug, PartialEq)]
/// #[document(collection = "parts")]
/// struct Part { #[serde(rename = "_id")] id: ObjectId, name: String, qty: i32 }
///
/// let parts = Part::repo(&db);
/// let grommet = Part { id: ObjectId::new(), name: "#4 grommet".into(), qty: 94 };
/// parts.insert(&grommet).await?;
/// assert_eq!(parts.get(&grommet.id).await?, Some(grommet));
/// let low = parts.find(Part::fields().qty.lt(100)).to_vec().await?;
/// assert_eq!(low.len(), 1);
/// # Ok(()) });
/// ```
pub struct Repository<T> {
    pub(crate) db: Database,
    pub(crate) raw: Collection<RawDocumentBuf>,
    pub(crate) mode: Mode,
    _doc: PhantomData<fn() -> T>,
}

impl<T> Clone for Repository<T> {
    fn clone(&self) -> Self {
        Repository { db: self.db.clone(), raw: self.raw.clone(), mode: self.mode, _doc: PhantomData }
    }
}

impl<T> std::fmt::Debug for Repository<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repository").field("collection", &self.raw.namespace()).finish()
    }
}

impl<T> Repository<T> {
    /// The repository of the documents of `collection` in `db`, of type
    /// `T` (`Repository::new` and `Document::repo` name the collection).
    pub(crate) fn on(db: &Database, collection: &str) -> Self {
        Repository { db: db.clone(), raw: db.collection(collection), mode: Mode::Immediate, _doc: PhantomData }
    }
}

/// How a repository's writes fan out: one mode, so which of
/// `deferred_fan_out()` and `transactional_fan_out()` wins when both are
/// asked for is said once, where the mode is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Mode {
    /// The write and its fan-out, one after the other.
    #[default]
    Immediate,
    /// Copies are left to the sync worker: the write only versions the
    /// source. Wins over `Transactional`: there is no fan-out to commit.
    Deferred,
    /// A write and its copies' fan-out commit together.
    Transactional,
}
