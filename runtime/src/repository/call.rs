//! Every repository call is a builder, as the driver's actions are: set
//! options, then `.await` it. One option is shared by all of them:
//! [`Call::session`] runs the call, and everything docrel derives from it
//! (copies filled and fanned out, subsets, the inverse side of two-way
//! references, `on_delete` rules), in the caller's session, so writes made
//! between the caller's `start_transaction` and `commit_transaction` are
//! committed, or aborted, together.

use super::{Repository, UpdateOutcome};
use crate::error::{Error, Result};
use crate::id::{show, DocId};
use crate::schema::document::Document;
use crate::store::query::{Filter, Update};
use futures::future::BoxFuture;
use mongodb::bson::doc;
use mongodb::ClientSession;
use std::future::IntoFuture;

/// A repository call: `.await` it, or set its session first.
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
/// let parts = Part::repo(&db);
/// let bolt = Part { id: ObjectId::new(), name: "bolt".into(), qty: 5 };
/// let nut = Part { id: ObjectId::new(), name: "nut".into(), qty: 9 };
///
/// let driver = |e| docrel::Error::driver("session", "", e);
/// let mut s = db.client().start_session().await.map_err(driver)?;
/// s.start_transaction().await.map_err(driver)?;
/// parts.insert(&bolt).session(&mut s).await?;
/// parts.update_by_id(&bolt.id, Part::fields().qty.set(4)).session(&mut s).await?;
/// parts.insert(&nut).session(&mut s).await?;
/// // The transaction sees its own writes; nothing is visible outside it yet.
/// assert_eq!(parts.count(docrel::Filter::all()).session(&mut s).await?, 2);
/// assert_eq!(parts.count(docrel::Filter::all()).await?, 0);
/// s.commit_transaction().await.map_err(driver)?;
/// assert_eq!(parts.require(&bolt.id).await?.qty, 4);
/// # Ok(()) });
/// ```
///
/// When the session is in a transaction, a write that would open a
/// transaction of its own ([`Repository::transactional_fan_out`], two-way
/// links) joins the caller's instead. When a write fails inside the
/// caller's transaction, abort it: some of the write's effects may be in it
/// already. The session must come from the client of the repository's database.
#[must_use = "a repository call does nothing until it is awaited"]
pub struct Call<'a, T, O> {
    repo: &'a Repository<T>,
    op: O,
    session: Option<&'a mut ClientSession>,
}

impl<'a, T, O> Call<'a, T, O> {
    pub(super) fn new(repo: &'a Repository<T>, op: O) -> Self {
        Call { repo, op, session: None }
    }

    /// Runs the call, and every side effect docrel derives from it, in
    /// `session` (like the driver's `.session(&mut s)`).
    pub fn session(mut self, session: &'a mut ClientSession) -> Self {
        self.session = Some(session);
        self
    }
}

impl<T, O> std::fmt::Debug for Call<'_, T, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("collection", &self.repo.raw.namespace())
            .field("operation", &std::any::type_name::<O>().rsplit("::").next())
            .field("in_session", &self.session.is_some())
            .finish()
    }
}

impl<'a, T: Document, O: Operation<'a, T>> IntoFuture for Call<'a, T, O> {
    type Output = Result<O::Output>;
    type IntoFuture = BoxFuture<'a, Result<O::Output>>;

    fn into_future(self) -> Self::IntoFuture {
        self.op.run(self.repo, self.session)
    }
}

mod sealed {
    pub trait Sealed {}
}

/// What a [`Call`] runs: one of the operations in [`ops`]. Sealed: the
/// repository's own methods make them.
pub trait Operation<'a, T>: sealed::Sealed + Send + 'a {
    /// What the call returns.
    type Output: Send + 'a;
    #[doc(hidden)]
    fn run(
        self,
        repo: &'a Repository<T>,
        session: Option<&'a mut ClientSession>,
    ) -> BoxFuture<'a, Result<Self::Output>>;
}

/// The operations of a [`Call`], one per repository method; they name the
/// call's type (`Call<'_, Part, ops::Insert<'_, Part>>`) and carry its arguments.
pub mod ops {
    use super::*;

    /// Writes `Operation` for one operation struct: its fields, its output
    /// and the body that runs it (`repo`, `session` and the fields in scope).
    macro_rules! operation {
        ($(#[$doc:meta])* $name:ident<$a:lifetime, $t:ident> { $($field:ident: $ty:ty),* } -> $out:ty,
         |$repo:ident, $session:ident| $body:expr) => {
            $(#[$doc])*
            pub struct $name<$a, $t: Document> {
                $(pub(in crate::repository) $field: $ty,)*
                pub(in crate::repository) _doc: std::marker::PhantomData<(&$a (), fn() -> $t)>,
            }
            impl<$a, $t: Document> super::sealed::Sealed for $name<$a, $t> {}
            impl<$a, $t: Document> Operation<$a, $t> for $name<$a, $t> {
                type Output = $out;
                fn run(self, $repo: &$a Repository<$t>, $session: Option<&$a mut ClientSession>) -> BoxFuture<$a, Result<$out>> {
                    let $name { $($field,)* _doc } = self;
                    Box::pin($body)
                }
            }
        };
    }

    operation!(
        /// [`Repository::insert_many`] (and [`Repository::insert`], one document).
        Insert<'a, T> { docs: &'a [T] } -> (),
        |repo, session| repo.insert_many_in(docs, session)
    );
    operation!(
        /// [`Repository::get`].
        Get<'a, T> { id: &'a T::Id } -> Option<T>,
        |repo, session| async move {
            let find = repo.find(doc! {"_id": id.to_bson()});
            match session {
                Some(s) => find.session(s).one().await,
                None => find.one().await,
            }
        }
    );
    operation!(
        /// [`Repository::require`].
        Require<'a, T> { id: &'a T::Id } -> T,
        |repo, session| async move {
            let find = repo.find(doc! {"_id": id.to_bson()});
            let found = match session {
                Some(s) => find.session(s).one().await?,
                None => find.one().await?,
            };
            found.ok_or_else(|| Error::NotFound { collection: T::COLLECTION, id: show(id) })
        }
    );
    operation!(
        /// [`Repository::count`].
        Count<'a, T> { filter: Filter } -> u64,
        |repo, session| repo.count_in(filter, session)
    );
    operation!(
        /// [`Repository::update_by_id`] (whose `RoutedById` bound is the
        /// only way to make one).
        UpdateById<'a, T> { id: &'a T::Id, update: Update<T> } -> UpdateOutcome,
        |repo, session| repo.update_by_id_in(id, update, session)
    );
    operation!(
        /// [`Repository::update_one`] and [`Repository::update_many`].
        UpdateWhere<'a, T> { filter: Filter, update: Update<T>, many: bool } -> UpdateOutcome,
        |repo, session| repo.update_matching(filter, update, many, session)
    );
    operation!(
        /// [`Repository::replace`].
        Replace<'a, T> { doc: &'a T } -> (),
        |repo, session| repo.replace_in(doc, session)
    );
    operation!(
        /// [`Repository::save`].
        Save<'a, T> { doc: &'a T } -> (),
        |repo, session| repo.save_in(doc, session)
    );
    operation!(
        /// [`Repository::delete_by_id`].
        DeleteById<'a, T> { id: &'a T::Id } -> bool,
        |repo, session| repo.delete_by_id_in(id, session)
    );
    operation!(
        /// [`Repository::delete`].
        Delete<'a, T> { doc: &'a T } -> bool,
        |repo, session| repo.delete_in(doc, session)
    );
    operation!(
        /// [`Repository::delete_one`].
        DeleteOne<'a, T> { filter: Filter } -> bool,
        |repo, session| repo.delete_one_in(filter, session)
    );
    operation!(
        /// [`Repository::delete_many`].
        DeleteMany<'a, T> { filter: Filter } -> u64,
        |repo, session| repo.delete_many_in(filter, session)
    );
}
