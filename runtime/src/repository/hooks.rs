//! Lifecycle hooks: application invariants kept beside docrel's. A type
//! that implements [`Hooks`] has them run by every write its repository
//! makes: the `before_` hooks first, before docrel's write plan is made
//! and before its first round trip (so a refusal writes nothing, and an
//! update a hook adds to is planned, guarded and fanned out whole), and
//! [`Hooks::after_commit`] once per write that committed.
//!
//! The hooks are plain functions, not `async`: they run between docrel's
//! checks and its first write, in the caller's session when there is one,
//! and a hook that awaited there would hold that session (and a
//! transaction's locks) for a round trip docrel cannot count or retry. They
//! get no database handle for that reason; code that must read before
//! writing reads before the call. `after_commit` gets the database, to hand
//! follow-up work to a task of its own (`tokio::spawn`) rather than block.

use crate::error::{Error, Result};
use crate::schema::document::Document;
use crate::store::session::Cx;
use crate::store::Update;
use mongodb::bson::Document as BsonDoc;
use mongodb::Database;
use std::any::Any;
use std::marker::PhantomData;

/// Hooks a document type runs around the writes of its repository.
/// Implement the ones you need; the others do nothing. The derive finds
/// the implementation: nothing else to declare.
///
/// What each may do: a `before_` hook checks (and refuses with an error,
/// which the call returns, adding that nothing was written) and
/// `before_update` may add to the update; none is `async`, none gets a
/// database handle or the session, and none sees the writes docrel derives
/// on other types (copies rewritten, cascades, subset pushes, two-way
/// sides), which run those types' rules, not their hooks. `after_commit`
/// runs once per write that committed and wrote something: at once for a
/// call without a session (or in a session outside a transaction); for a
/// call in the caller's transaction, when [`crate::repository::commit`] commits it
/// (never, if it aborts). It cannot fail the write, which is done: it
/// should not panic, and should hand slow work to a task.
///
/// ```
/// # docrel::testing::doc_test(|db| async move {
/// use docrel::repository::{Committed, Write};
/// use docrel::{Document, Error, repository::Hooks, Misuse, Update, bson::{oid::ObjectId, Document as BsonDoc, DateTime}};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "parts")]
/// struct Part {
///     #[serde(rename = "_id")] id: ObjectId,
///     name: String,
///     qty: i64,
///     #[serde(default)] changed: Option<DateTime>,
/// }
///
/// impl Hooks for Part {
///     fn before_insert(&self, _write: Write) -> docrel::Result<()> {
///         if self.qty < 0 {
///             return Err(Error::Invalid { what: Misuse::Application("part"), message: "qty below zero".into() });
///         }
///         Ok(())
///     }
///     fn before_update(update: &mut Update<Self>, _filter: &BsonDoc, _write: Write) -> docrel::Result<()> {
///         update.also(Part::fields().changed.set(Some(DateTime::now()))); // every update stamps `changed`
///         Ok(())
///     }
///     fn after_commit(committed: &Committed<Self>) {
///         println!("{:?} wrote {} part(s)", committed.write, committed.count);
///     }
/// }
///
/// let parts = Part::repo(&db);
/// let bolt = Part { id: ObjectId::new(), name: "bolt".into(), qty: -1, changed: None };
/// let refused = parts.insert(&bolt).await.unwrap_err();
/// assert!(refused.to_string().contains("nothing was written"));
/// assert_eq!(parts.count(docrel::Filter::all()).await?, 0);
///
/// let bolt = Part { qty: 5, ..bolt };
/// parts.insert(&bolt).await?;
/// parts.update_by_id(&bolt.id, Part::fields().qty.set(4)).await?;
/// assert!(parts.require(&bolt.id).await?.changed.is_some());
/// # Ok(()) });
/// ```
pub trait Hooks: Document {
    /// Before a whole document is written: `insert`, `insert_many` (for
    /// each document, all before the first write), `replace` and `save`.
    fn before_insert(&self, write: Write) -> Result<()> {
        let _ = write;
        Ok(())
    }

    /// Before an update (`update_by_id`, `update_one`, `update_many`,
    /// `upsert`), with its filter (`{_id: ..}` by id); it may add to the
    /// update ([`Update::also`]).
    fn before_update(update: &mut Update<Self>, filter: &BsonDoc, write: Write) -> Result<()> {
        let _ = (update, filter, write);
        Ok(())
    }

    /// Before a delete (`delete_by_id`, `delete`, `delete_one`,
    /// `delete_many`), with its filter, before its `on_delete` rules.
    fn before_delete(filter: &BsonDoc, write: Write) -> Result<()> {
        let _ = (filter, write);
        Ok(())
    }

    /// After a write that wrote something has committed, once.
    fn after_commit(committed: &Committed<Self>) {
        let _ = committed;
    }
}

/// The repository call a hook runs for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Write {
    /// `insert`
    Insert,
    /// `insert_many`
    InsertMany,
    /// `replace`
    Replace,
    /// `save`
    Save,
    /// `update_by_id`
    UpdateById,
    /// `update_one`
    UpdateOne,
    /// `update_many`
    UpdateMany,
    /// `upsert`
    Upsert,
    /// `delete_by_id`
    DeleteById,
    /// `delete`
    Delete,
    /// `delete_one`
    DeleteOne,
    /// `delete_many`
    DeleteMany,
}

/// A committed write, as [`Hooks::after_commit`] sees it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Committed<T: Document> {
    /// The call.
    pub write: Write,
    /// The ids of the documents written, where the call names them
    /// (inserts, writes by id, an upsert that inserted); empty for writes
    /// by filter.
    pub ids: Vec<T::Id>,
    /// How many documents it wrote (matched, for updates).
    pub count: u64,
    /// The database, for follow-up work of the hook's own.
    pub database: Database,
}

/// A type's hooks as plain functions, reached through
/// [`Document::__hooks`]. Not public API.
#[doc(hidden)]
pub struct HookTable<T: Document> {
    before_insert: fn(&T, Write) -> Result<()>,
    before_update: fn(&mut Update<T>, &BsonDoc, Write) -> Result<()>,
    before_delete: fn(&BsonDoc, Write) -> Result<()>,
    after_commit: fn(&Committed<T>),
}

impl<T: Hooks> HookTable<T> {
    const TABLE: Self = HookTable {
        before_insert: T::before_insert,
        before_update: T::before_update,
        before_delete: T::before_delete,
        after_commit: T::after_commit,
    };
}

/// How the derive finds out whether a type implements [`Hooks`]: a method
/// call on `&HookProbe<T>` picks [`FoundHooks`] when it does and
/// [`NoHooks`] (one reference further) when it does not. Not public API.
#[doc(hidden)]
pub struct HookProbe<T>(PhantomData<fn() -> T>);

impl<T> HookProbe<T> {
    /// A probe (generated code calls this).
    pub const fn new() -> Self {
        HookProbe(PhantomData)
    }
}

impl<T> Default for HookProbe<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// The probe of a type with hooks. Not public API.
#[doc(hidden)]
pub trait FoundHooks {
    /// The type's hooks.
    fn hooks(&self) -> Option<&'static (dyn Any + Send + Sync)>;
}

impl<T: Hooks> FoundHooks for HookProbe<T> {
    fn hooks(&self) -> Option<&'static (dyn Any + Send + Sync)> {
        Some(const { &HookTable::<T>::TABLE })
    }
}

/// The probe of a type without hooks. Not public API.
#[doc(hidden)]
pub trait NoHooks {
    /// None.
    fn hooks(&self) -> Option<&'static (dyn Any + Send + Sync)> {
        None
    }
}

impl<T> NoHooks for &HookProbe<T> {}

fn table<T: Document>() -> Option<&'static HookTable<T>> {
    T::__hooks()?.downcast_ref()
}

/// A hook's refusal, saying which hook refused and that nothing was written.
fn refused<T: Document>(e: Error, hook: &str) -> Error {
    match e {
        Error::Invalid { what, message } => Error::Invalid {
            what,
            message: format!("{message} (refused by the `{hook}` hook of `{}`; nothing was written)", T::COLLECTION),
        },
        other => other,
    }
}

/// Runs `before_insert` for every document, before any is written.
pub(super) fn before_insert<T: Document>(docs: &[T], write: Write) -> Result<()> {
    let Some(table) = table::<T>() else { return Ok(()) };
    docs.iter().try_for_each(|d| (table.before_insert)(d, write)).map_err(|e| refused::<T>(e, "before_insert"))
}

/// Runs `before_update`, which may add to `update`.
pub(super) fn before_update<T: Document>(update: &mut Update<T>, filter: &BsonDoc, write: Write) -> Result<()> {
    let Some(table) = table::<T>() else { return Ok(()) };
    (table.before_update)(update, filter, write).map_err(|e| refused::<T>(e, "before_update"))
}

/// Runs `before_delete`.
pub(super) fn before_delete<T: Document>(filter: &BsonDoc, write: Write) -> Result<()> {
    let Some(table) = table::<T>() else { return Ok(()) };
    (table.before_delete)(filter, write).map_err(|e| refused::<T>(e, "before_delete"))
}

/// After a write that wrote `count` documents succeeded: its after-commit
/// hook, now or at the commit of the caller's transaction.
pub(super) async fn after<T: Document>(cx: &mut Cx<'_>, write: Write, ids: Vec<T::Id>, count: u64) {
    let Some(table) = table::<T>() else { return };
    if count == 0 {
        return;
    }
    let hook = table.after_commit;
    let committed = Committed { write, ids, count, database: cx.db.clone() };
    let Some(s) = cx.session() else { return hook(&committed) };
    if crate::store::transaction::in_transaction(s).await {
        return super::caller_transaction::wait(s, Box::new(move || hook(&committed)));
    }
    // Outside a transaction: any hook still waiting on this session belongs
    // to one that ended without docrel's `commit` or `abort`, committed or
    // not; it never runs.
    super::caller_transaction::drop_ended(s);
    hook(&committed)
}
