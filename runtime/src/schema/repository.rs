//! The declaration of [`Repository`], the handle of a document type's
//! collection in one database, and its constructor. It is declared here, in
//! the schema layer, so that [`Document::repo`](super::document::Document::repo)
//! can return it and code generic over any document reaches its repository
//! (`T::repo(&db)`); every call on it is in the repository layer above.

use super::document::Document;
use mongodb::bson::RawDocumentBuf;
use mongodb::{Collection, Database};
use std::marker::PhantomData;

/// The typed repository of document type `T` in one database.
///
/// ```
/// # docrel::testing::doc_test(|db| async move {
/// use docrel::{Document, Repository, bson::oid::ObjectId};
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
    pub(crate) deferred: bool,
    pub(crate) transactional: bool,
    _doc: PhantomData<fn() -> T>,
}

impl<T> Clone for Repository<T> {
    fn clone(&self) -> Self {
        Repository {
            db: self.db.clone(),
            raw: self.raw.clone(),
            deferred: self.deferred,
            transactional: self.transactional,
            _doc: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for Repository<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repository").field("collection", &self.raw.namespace()).finish()
    }
}

impl<T: Document> Repository<T> {
    /// The repository of `T` in `db`.
    pub fn new(db: &Database) -> Self {
        Repository {
            db: db.clone(),
            raw: db.collection(T::COLLECTION),
            deferred: false,
            transactional: false,
            _doc: PhantomData,
        }
    }
}
