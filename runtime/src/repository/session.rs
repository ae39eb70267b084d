//! A repository bound to the caller's session: every operation, and every
//! side effect docrel derives from it, runs in that session, so writes made
//! between the caller's `start_transaction` and `commit_transaction` are
//! committed, or aborted, together.

use super::{Repository, UpdateOutcome};
use crate::error::{Error, Result};
use crate::id::{show, DocId};
use crate::schema::document::Document;
use crate::store::find::{Find, FindIn};
use crate::store::query::{Filter, Update};
use futures::future::BoxFuture;
use mongodb::bson;
use mongodb::ClientSession;

/// The repository of `T` bound to the caller's session; from
/// [`Repository::with_session`].
///
/// Everything a write derives runs in the session too: the copies it fills
/// and fans out, the subsets it pushes to or rebuilds, the inverse side of
/// its two-way references and its `on_delete` rules. When the session is in
/// a transaction, a write that would open a transaction of its own
/// ([`Repository::transactional_fan_out`], two-way links) joins the
/// caller's instead. When a write fails inside the caller's transaction,
/// abort it: some of the write's effects may be in it already.
///
/// ```
/// # docrel::testing::doc_test(|db| async move {
/// use docrel::{Document, bson::oid::ObjectId};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "parts")]
/// struct Part { #[serde(rename = "_id")] id: ObjectId, name: String, qty: i32 }
///
/// let bolt = Part { id: ObjectId::new(), name: "bolt".into(), qty: 5 };
/// let nut = Part { id: ObjectId::new(), name: "nut".into(), qty: 9 };
///
/// let driver = |e| docrel::Error::driver("session", "", e);
/// let mut s = db.client().start_session().await.map_err(driver)?;
/// s.start_transaction().await.map_err(driver)?;
/// let mut parts = Part::repo(&db).with_session(&mut s);
/// parts.insert(&bolt).await?;
/// parts.update_by_id(&bolt.id, Part::fields().qty.set(4)).await?;
/// parts.insert(&nut).await?;
/// assert_eq!(parts.count(docrel::Filter::all()).await?, 2); // the transaction sees its writes
/// s.commit_transaction().await.map_err(driver)?;
/// assert_eq!(Part::repo(&db).require(&bolt.id).await?.qty, 4);
/// # Ok(()) });
/// ```
pub struct InSession<'s, T> {
    repo: Repository<T>,
    session: &'s mut ClientSession,
}

impl<T> std::fmt::Debug for InSession<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InSession").field("collection", &self.repo.raw.namespace()).finish()
    }
}

impl<T: Document> Repository<T> {
    /// This repository bound to `session`, like the driver's
    /// `.session(&mut s)` on each action: see [`InSession`]. The session
    /// must come from the client of this repository's database.
    pub fn with_session<'s>(&self, session: &'s mut ClientSession) -> InSession<'s, T> {
        InSession { repo: self.clone(), session }
    }
}

impl<T: Document> InSession<'_, T> {
    /// The session.
    pub fn session(&mut self) -> &mut ClientSession {
        self.session
    }

    /// The repository, outside the session.
    pub fn repository(&self) -> &Repository<T> {
        &self.repo
    }

    /// [`Repository::insert`] in the session.
    pub async fn insert(&mut self, doc: &T) -> Result<()> {
        self.repo.insert_many_in(std::slice::from_ref(doc), Some(self.session)).await
    }

    /// [`Repository::insert_many`] in the session.
    pub async fn insert_many(&mut self, docs: &[T]) -> Result<()> {
        self.repo.insert_many_in(docs, Some(self.session)).await
    }

    /// [`Repository::get`] in the session (inside a transaction, it sees
    /// the transaction's writes).
    pub async fn get(&mut self, id: &T::Id) -> Result<Option<T>> {
        self.find(bson::doc! {"_id": id.to_bson()}).one().await
    }

    /// [`Repository::require`] in the session.
    pub async fn require(&mut self, id: &T::Id) -> Result<T> {
        self.get(id).await?.ok_or_else(|| Error::NotFound { collection: T::COLLECTION, id: show(id) })
    }

    /// [`Repository::find`] in the session: await it, or call [`FindIn::one`].
    /// To set options first, build the [`Find`] on the repository and call
    /// [`Find::session`].
    pub fn find(&mut self, filter: impl Into<Filter>) -> FindIn<'_, T, T> {
        Find::new(self.repo.raw.clone(), filter).session(self.session)
    }

    /// [`Repository::count`] in the session.
    pub async fn count(&mut self, filter: impl Into<Filter>) -> Result<u64> {
        self.repo.count_in(filter, Some(self.session)).await
    }

    /// [`Repository::update_by_id`] in the session.
    pub fn update_by_id<'s>(&'s mut self, id: &'s T::Id, update: Update<T>) -> BoxFuture<'s, Result<UpdateOutcome>>
    where
        T: crate::schema::document::RoutedById,
    {
        Box::pin(self.repo.update_by_id_in(id, update, Some(self.session)))
    }

    /// [`Repository::update_one`] in the session.
    pub async fn update_one(&mut self, filter: impl Into<Filter>, update: Update<T>) -> Result<UpdateOutcome> {
        self.repo.update_matching(filter, update, false, Some(self.session)).await
    }

    /// [`Repository::update_many`] in the session.
    pub async fn update_many(&mut self, filter: impl Into<Filter>, update: Update<T>) -> Result<UpdateOutcome> {
        self.repo.update_matching(filter, update, true, Some(self.session)).await
    }

    /// [`Repository::replace`] in the session.
    pub async fn replace(&mut self, doc: &T) -> Result<()> {
        self.repo.replace_in(doc, Some(self.session)).await
    }

    /// [`Repository::save`] in the session.
    pub async fn save(&mut self, doc: &T) -> Result<()> {
        self.repo.save_in(doc, Some(self.session)).await
    }

    /// [`Repository::delete_by_id`] in the session, `on_delete` rules included.
    pub fn delete_by_id<'s>(&'s mut self, id: &'s T::Id) -> BoxFuture<'s, Result<bool>>
    where
        T: crate::schema::document::RoutedById,
    {
        Box::pin(self.repo.delete_by_id_in(id, Some(self.session)))
    }

    /// [`Repository::delete`] in the session, `on_delete` rules included.
    pub async fn delete(&mut self, doc: &T) -> Result<bool> {
        self.repo.delete_in(doc, Some(self.session)).await
    }

    /// [`Repository::delete_one`] in the session, `on_delete` rules included.
    pub async fn delete_one(&mut self, filter: impl Into<Filter>) -> Result<bool> {
        self.repo.delete_one_in(filter, Some(self.session)).await
    }

    /// [`Repository::delete_many`] in the session, `on_delete` rules included.
    pub async fn delete_many(&mut self, filter: impl Into<Filter>) -> Result<u64> {
        self.repo.delete_many_in(filter, Some(self.session)).await
    }
}
