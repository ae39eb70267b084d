//! The repository itself: where a document type lives, how its writes
//! fan out, and the calls that are not builders.

use crate::client::trace::Op;
use crate::denormalize::write::Mode;
use crate::error::{Error, Result};
use crate::schema::document::Document;
use crate::store::find::Find;
use crate::store::query::Filter;
use crate::store::session::in_session;
use mongodb::bson::{self, doc, RawDocumentBuf};
use mongodb::{ClientSession, Collection, Database};
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
    pub(super) db: Database,
    pub(super) raw: Collection<RawDocumentBuf>,
    pub(super) deferred: bool,
    pub(super) transactional: bool,
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

    /// This repository in deferred mode: writes of copied fields still
    /// version the source, but leave the fan-out to a
    /// [`crate::denormalize::fanout::SyncWorker`] following the change stream (the write
    /// costs no extra round trip; the copies follow shortly after).
    pub fn deferred_fan_out(mut self) -> Self {
        self.deferred = true;
        self
    }

    /// This repository with transactional fan-out: an update by id of a
    /// copied field and the rewrite of all its copies commit together, or
    /// not at all (on replica sets and sharded clusters; elsewhere the
    /// update is refused with [`Error::Invalid`]). It costs one more round
    /// trip (`commitTransaction`), and a large fan-out makes a large transaction.
    pub fn transactional_fan_out(mut self) -> Self {
        self.transactional = true;
        self
    }

    /// The database.
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// The driver's typed collection, for anything docrel does not cover.
    pub fn collection(&self) -> Collection<T> {
        self.raw.clone_with_type()
    }

    /// The driver's raw collection.
    pub fn raw(&self) -> &Collection<RawDocumentBuf> {
        &self.raw
    }

    /// How this repository's writes fan out.
    pub(super) fn mode(&self) -> Mode {
        Mode { deferred: self.deferred, transactional: self.transactional }
    }

    pub(super) fn err(&self, operation: &'static str) -> impl FnOnce(mongodb::error::Error) -> Error {
        move |e| Error::driver(operation, T::COLLECTION, e)
    }

    /// The documents matching a filter; set options, then run it with
    /// [`Find::to_vec`], [`Find::one`] or [`Find::stream`].
    pub fn find(&self, filter: impl Into<Filter>) -> Find<T, T> {
        Find::new(self.raw.clone(), filter)
    }

    pub(super) async fn count_in(&self, filter: impl Into<Filter>, session: Option<&mut ClientSession>) -> Result<u64> {
        Op::new("count", T::COLLECTION)
            .run_counted(
                async move {
                    let filter = filter.into().into_document()?;
                    in_session!(self.raw.count_documents(filter), session).map_err(self.err("count"))
                },
                |n| Some(*n as usize),
            )
            .await
    }

    /// Creates the indexes the document type declares and the ones its
    /// relationships need (one `createIndexes` command), returning their names.
    pub async fn ensure_indexes(&self) -> Result<Vec<String>> {
        let models = crate::schema::indexes::needed_by(T::schema());
        if models.is_empty() {
            return Ok(Vec::new());
        }
        let created = self.raw.create_indexes(models).await.map_err(self.err("createIndexes"))?;
        Ok(created.index_names)
    }
}

impl<T: Document> Repository<T> {
    /// Installs a `$jsonSchema` validator with `maxItems` for every bounded
    /// array of `T`, so the server itself refuses a write that would pass a
    /// bound, whoever writes (the collection is created if needed). Returns
    /// the validator, or `None` when `T` declares no bound (nothing is sent).
    pub async fn ensure_validator(&self) -> Result<Option<bson::Document>> {
        let Some(validator) = crate::schema::indexes::validator(T::schema()) else { return Ok(None) };
        let command = doc! {"collMod": T::COLLECTION, "validator": validator.clone(), "validationLevel": "strict"};
        match self.db.run_command(command).await {
            Ok(_) => {}
            // NamespaceNotFound: create the collection with the validator instead.
            Err(e) if matches!(*e.kind, mongodb::error::ErrorKind::Command(ref c) if c.code == 26) => {
                self.db
                    .create_collection(T::COLLECTION)
                    .validator(validator.clone())
                    .await
                    .map_err(self.err("create"))?;
            }
            Err(e) => return Err(Error::driver("collMod", T::COLLECTION, e)),
        }
        Ok(Some(validator))
    }
}
