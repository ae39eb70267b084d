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

impl<T> Repository<T> {
    /// The repository of the documents of `collection` in `db`, of type
    /// `T` (`Repository::new` and `Document::repo` name the collection).
    pub(crate) fn on(db: &Database, collection: &str) -> Self {
        Repository {
            db: db.clone(),
            raw: db.collection(collection),
            deferred: false,
            transactional: false,
            _doc: PhantomData,
        }
    }
}
