//! The repository itself: where a document type lives and how its writes
//! fan out. Every repository call is a builder, as the driver's actions are: set
//! options, then `.await` it. One option is shared by all of them:
//! [`Call::session`] runs the call, and everything docrel derives from it
//! (copies filled and fanned out, subsets, the inverse side of two-way
//! references, `on_delete` rules), in the caller's session, so writes made
//! between the caller's `start_transaction` and `commit_transaction` are
//! committed, or aborted, together.

use crate::client::trace::Op;
use crate::denormalize::write::{Mode, UpdateOutcome};
use crate::error::{Error, Result};
use crate::id::{show, DocId};
use crate::schema::document::{Document, RoutedById};
use crate::store::find::Find;
use crate::store::{Filter, Update};
use futures::future::BoxFuture;
use mongodb::bson::{self, doc, RawDocumentBuf};
use mongodb::{ClientSession, Collection, Database};
use std::marker::PhantomData;

pub use crate::schema::repository::Repository;

impl<T: Document> Repository<T> {
    /// The repository of `T` in `db`.
    pub fn new(db: &Database) -> Self {
        Repository::on(db, T::COLLECTION)
    }

    /// This repository in deferred mode: writes of copied fields still
    /// version the source, but leave the fan-out to a
    /// [`SyncWorker`](crate::denormalize::SyncWorker) following the change stream (the write
    /// costs no extra round trip; the copies follow shortly after).
    pub fn deferred_fan_out(mut self) -> Self {
        self.mode = Mode::Deferred;
        self
    }

    /// This repository with transactional fan-out: an update by id of a
    /// copied field and the rewrite of all its copies commit together, or
    /// not at all (on replica sets and sharded clusters; elsewhere the
    /// update is refused with [`Error::Invalid`]). It costs one more round
    /// trip (`commitTransaction`), and a large fan-out makes a large transaction.
    pub fn transactional_fan_out(mut self) -> Self {
        // Deferred mode fans out nothing to commit: it stays deferred.
        if self.mode != Mode::Deferred {
            self.mode = Mode::Transactional;
        }
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
        self.mode
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
                    crate::store::moving::count(&self.raw, filter, session).await
                },
                |n| Some(*n as usize),
            )
            .await
    }

    /// Creates the indexes the document type declares (with their options:
    /// unique, sparse, TTL, partial, collation, text) and the ones its
    /// relationships need (one `createIndexes` command), returning their
    /// names. An index that exists with other options is an error of the
    /// server's (`IndexOptionsConflict`): the admin tool's `indexes plan`
    /// shows it as `recreate`, and `indexes apply` drops and creates it.
    pub async fn ensure_indexes(&self) -> Result<Vec<String>> {
        let models = crate::schema::indexes::needed_by(T::schema())?;
        if models.is_empty() {
            return Ok(Vec::new());
        }
        let created = self.raw.create_indexes(models).await.map_err(self.err("createIndexes"))?;
        Ok(created.index_names)
    }
}

impl<T: Document> Repository<T> {
    /// Installs a `$jsonSchema` validator with `maxItems` for every bounded
    /// array of `T` and `required` for every reference that is not an
    /// `Option`, so the server itself refuses a write that would break them,
    /// whoever writes (the collection is created if needed). The level is
    /// `constraint` on MongoDB 9.0 and later, where the server refuses to
    /// raise it while a stored document breaks the rules: the error then
    /// says how many do, and the validator stays at `strict`, which every
    /// earlier server gets. Returns the validator, or `None` when `T`
    /// declares neither (nothing is sent).
    pub async fn ensure_validator(&self) -> Result<Option<bson::Document>> {
        let Some(validator) = crate::schema::indexes::validator(T::schema()) else { return Ok(None) };
        super::validator::install(&self.db, T::COLLECTION, &validator).await?;
        Ok(Some(validator))
    }
}

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
    pub(super) repo: &'a Repository<T>,
    pub(super) op: O,
    pub(super) session: Option<&'a mut ClientSession>,
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

impl<'a, T: Document> Call<'a, T, ops::InsertOne<'a, T>> {
    /// Gives the document as stored instead of `()`: its copies filled from
    /// their sources, without docrel's bookkeeping. It is what the insert
    /// wrote, so it costs no round trip; only when what the insert owed
    /// changed the document after its write (a source changed while its
    /// copies were filled, a two-way side or a subset filled in) is it read
    /// back, one `find` by `_id`.
    ///
    /// ```
    /// # docrel::testing::doc_test(|db| async move {
    /// use docrel::{Document, bson::oid::ObjectId};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "makers")]
    /// struct Maker { #[serde(rename = "_id")] id: ObjectId, name: String }
    ///
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "gadgets")]
    /// struct Gadget {
    ///     #[serde(rename = "_id")]
    ///     id: ObjectId,
    ///     #[reference(to = Maker)]
    ///     maker: ObjectId,
    ///     #[denormalize(from = Maker::name, via = maker)]
    ///     maker_name: String,
    /// }
    ///
    /// let acme = Maker { id: ObjectId::new(), name: "acme".into() };
    /// Maker::repo(&db).insert(&acme).await?;
    /// let gadget = Gadget { id: ObjectId::new(), maker: acme.id, maker_name: String::new() };
    /// let stored = Gadget::repo(&db).insert(&gadget).returning().await?;
    /// assert_eq!(stored.maker_name, "acme");
    /// # Ok(()) });
    /// ```
    pub fn returning(self) -> Call<'a, T, ops::InsertReturning<'a, T>> {
        let ops::InsertOne { doc, _doc } = self.op;
        Call { repo: self.repo, op: ops::InsertReturning { doc, _doc }, session: self.session }
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

impl<T: Document> Repository<T> {
    /// Inserts one document, after checking its bounds and its size. Its
    /// denormalized copies are filled from their sources first. With
    /// [`Call::returning`], the call gives the document as stored. An
    /// `Option` id that is `None` is generated first ([`crate::GeneratedId`]);
    /// `returning()` gives the document with it.
    pub fn insert<'a>(&'a self, doc: &'a T) -> Call<'a, T, ops::InsertOne<'a, T>> {
        Call::new(self, ops::InsertOne { doc, _doc: PhantomData })
    }

    /// Inserts many documents, all or nothing. Every one is checked first:
    /// if any breaks a bound or the size limit, nothing is written. The
    /// insert and everything it owes the documents around it (two-way
    /// links, subset summaries, holders already referring to them) run in
    /// one transaction (yours, when the call has a session in one): if the
    /// server refuses one document (a duplicate key, say) or a link is
    /// refused, none is written. MongoDB bounds a transaction's time (60 s
    /// by default), so load very large sets in batches.
    ///
    /// Each `Option` id that is `None` gets its own generated id; to know
    /// them, set them yourself (`Some(ObjectId::new())`).
    ///
    /// A standalone server has no transactions: there the insert is
    /// ordered, as the driver's; the documents before a refused one are
    /// written, with everything derived from them, and the rest are not.
    /// A single document of a type with two-way references is inserted
    /// with its links in one transaction in the same way.
    pub fn insert_many<'a>(&'a self, docs: &'a [T]) -> Call<'a, T, ops::Insert<'a, T>> {
        Call::new(self, ops::Insert { docs, _doc: PhantomData })
    }

    /// The document with this id, if any.
    pub fn get<'a>(&'a self, id: &'a T::Id) -> Call<'a, T, ops::Get<'a, T>> {
        Call::new(self, ops::Get { id, _doc: PhantomData })
    }

    /// The document with this id, or [`Error::NotFound`].
    pub fn require<'a>(&'a self, id: &'a T::Id) -> Call<'a, T, ops::Require<'a, T>> {
        Call::new(self, ops::Require { id, _doc: PhantomData })
    }

    /// How many documents match.
    pub fn count(&self, filter: impl Into<Filter>) -> Call<'_, T, ops::Count<'_, T>> {
        Call::new(self, ops::Count { filter: filter.into(), _doc: PhantomData })
    }

    /// Applies an update to the document with this id. A push into a bounded
    /// array happens only while the array has room for every pushed element,
    /// atomically (the filter requires index `max - n` to be absent), so
    /// concurrent pushes never pass the bound; otherwise the result is
    /// [`Error::EmbedFull`] and nothing is written. A missing document is
    /// [`Error::NotFound`].
    ///
    /// A type sharded on more than `_id` updates one document with
    /// [`Repository::update_one`] and a filter on its whole shard key
    /// instead (see [`crate::schema::RoutedById`]).
    // A boxed future, not an `async fn`: rustc reports an unmet bound of an
    // `async fn` three times (the call, its future, the `.await`), of a
    // plain `fn` with a concrete return type once.
    pub fn update_by_id<'a>(&'a self, id: &'a T::Id, update: Update<T>) -> Call<'a, T, ops::UpdateById<'a, T>>
    where
        T: RoutedById,
    {
        Call::new(self, ops::UpdateById { id, update, _doc: PhantomData })
    }

    /// Applies an update to the first document matching a filter (bounded
    /// pushes guarded as in [`Repository::update_by_id`]). On a sharded type
    /// the filter must fix the whole shard key, so that the write reaches
    /// one shard ([`crate::Misuse::ShardKey`] otherwise).
    pub fn update_one(&self, filter: impl Into<Filter>, update: Update<T>) -> Call<'_, T, ops::UpdateWhere<'_, T>> {
        Call::new(self, ops::UpdateWhere { filter: filter.into(), update, many: false, _doc: PhantomData })
    }

    /// Applies `update` to the first document matching `filter` as
    /// [`Repository::update_one`] does (the version moved on, copies held
    /// by others refreshed, bounded pushes guarded); when none matches,
    /// inserts one built from the filter's equalities and the update, its
    /// [`Field::set_on_insert`](crate::Field::set_on_insert) values
    /// included, which owes what an insert owes: a source's first version
    /// from the clock, holders already referring to its id filled, the
    /// copies it holds filled from their sources, its subset summaries and
    /// two-way sides. A bounded push into a full matching document is
    /// [`Error::EmbedFull`], not a second document.
    ///
    /// Round trips: a type none of that concerns upserts in one `update`;
    /// any other updates first and, when nothing matched, inserts with one
    /// `findAndModify` (returning the new document), then writes what the
    /// insert owes. As with the driver, two concurrent upserts of a filter
    /// no unique index covers may both insert. On a sharded type the
    /// filter must fix the whole shard key ([`crate::Misuse::ShardKey`]).
    ///
    /// ```
    /// # docrel::testing::doc_test(|db| async move {
    /// use docrel::{Document, bson::oid::ObjectId};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "counters")]
    /// struct Counter { #[serde(rename = "_id")] id: String, hits: i64, #[serde(default)] label: String }
    ///
    /// let f = Counter::fields();
    /// let hit = || f.hits.inc(1).and(f.label.set_on_insert("home page".into()));
    /// let first = Counter::repo(&db).upsert(f.id.eq("home"), hit()).await?;
    /// assert_eq!(first.upserted_id.as_deref(), Some("home"));
    /// let second = Counter::repo(&db).upsert(f.id.eq("home"), hit()).await?;
    /// assert_eq!((second.matched, second.upserted_id), (1, None));
    /// let home = Counter::repo(&db).require(&"home".to_owned()).await?;
    /// assert_eq!((home.hits, home.label.as_str()), (2, "home page"));
    /// # Ok(()) });
    /// ```
    pub fn upsert(&self, filter: impl Into<Filter>, update: Update<T>) -> Call<'_, T, ops::Upsert<'_, T>> {
        Call::new(self, ops::Upsert { filter: filter.into(), update, _doc: PhantomData })
    }

    /// Applies an update to every document matching a filter. Documents whose
    /// bounded arrays have no room for a push are left out (not matched).
    pub fn update_many(&self, filter: impl Into<Filter>, update: Update<T>) -> Call<'_, T, ops::UpdateWhere<'_, T>> {
        Call::new(self, ops::UpdateWhere { filter: filter.into(), update, many: true, _doc: PhantomData })
    }

    /// Replaces the stored document with the same id, after checking bounds
    /// and size; [`Error::NotFound`] when there is none. Its copies are
    /// filled from their sources and confirmed after the write.
    pub fn replace<'a>(&'a self, doc: &'a T) -> Call<'a, T, ops::Replace<'a, T>> {
        Call::new(self, ops::Replace { doc, _doc: PhantomData })
    }

    /// Inserts the document, or replaces the stored one with the same id
    /// (copies filled and confirmed as in [`Repository::replace`]).
    pub fn save<'a>(&'a self, doc: &'a T) -> Call<'a, T, ops::Save<'a, T>> {
        Call::new(self, ops::Save { doc, _doc: PhantomData })
    }

    /// Deletes the document with this id, applying the `on_delete` rules of
    /// every reference to `T` (see [`crate::schema::OnDelete`]). Returns whether it
    /// existed. A type sharded on more than `_id` deletes with
    /// [`Repository::delete`] or [`Repository::delete_one`] instead (see
    /// [`crate::schema::RoutedById`]).
    pub fn delete_by_id<'a>(&'a self, id: &'a T::Id) -> Call<'a, T, ops::DeleteById<'a, T>>
    where
        T: RoutedById,
    {
        Call::new(self, ops::DeleteById { id, _doc: PhantomData })
    }

    /// Deletes this document, found by its `_id` and shard key, applying
    /// the `on_delete` rules as [`Repository::delete_by_id`] does. Returns
    /// whether it existed.
    pub fn delete<'a>(&'a self, doc: &'a T) -> Call<'a, T, ops::Delete<'a, T>> {
        Call::new(self, ops::Delete { doc, _doc: PhantomData })
    }

    /// Deletes the first document matching a filter, applying the
    /// `on_delete` rules to it. On a sharded type the filter must fix the
    /// whole shard key ([`crate::Misuse::ShardKey`] otherwise). Returns
    /// whether one was deleted.
    pub fn delete_one(&self, filter: impl Into<Filter>) -> Call<'_, T, ops::DeleteOne<'_, T>> {
        Call::new(self, ops::DeleteOne { filter: filter.into(), _doc: PhantomData })
    }

    /// Deletes every document matching a filter, applying the `on_delete`
    /// rules to each. The documents are found first and exactly those are
    /// deleted, so one inserted while the rules run is not deleted without
    /// its rules. Returns how many were deleted.
    pub fn delete_many(&self, filter: impl Into<Filter>) -> Call<'_, T, ops::DeleteMany<'_, T>> {
        Call::new(self, ops::DeleteMany { filter: filter.into(), _doc: PhantomData })
    }
}

mod sealed {
    pub trait Sealed {}
}

/// What a [`Call`] runs: one of the operations in [`ops`]. Sealed: the
/// repository's own methods make them.
pub trait Operation<'a, T>: sealed::Sealed + Clone + Send + Sync + 'a {
    /// What the call returns.
    type Output: Send + 'a;
    /// Whether the call writes (and so holds the stored schema first).
    #[doc(hidden)]
    const WRITES: bool = true;
    // The session may live shorter than the call's arguments: a write of a
    // moved shape runs the operation in a transaction of its own.
    #[doc(hidden)]
    fn run<'s>(
        self,
        repo: &'a Repository<T>,
        session: Option<&'s mut ClientSession>,
    ) -> BoxFuture<'s, Result<Self::Output>>
    where
        'a: 's;
    /// The documents the call may write, for a move's mirror.
    #[doc(hidden)]
    fn affected(&self) -> Result<super::affected::Affected>;
}

/// The operations of a [`Call`], one per repository method; they name the
/// call's type (`Call<'_, Part, ops::Insert<'_, Part>>`) and carry its arguments.
pub mod ops {
    use super::super::affected::Affected;
    use super::*;

    /// Writes `Operation` for one operation struct: its fields, its output
    /// and the body that runs it (`repo`, `session` and the fields in scope).
    macro_rules! operation {
        ($(#[$doc:meta])* $(@$read:ident)? $name:ident<$a:lifetime, $t:ident> { $($field:ident: $ty:ty),* } -> $out:ty,
         |$repo:ident, $session:ident| $body:expr, affects |$op:ident| $affected:expr) => {
            $(#[$doc])*
            pub struct $name<$a, $t: Document> {
                $(pub(super) $field: $ty,)*
                pub(super) _doc: std::marker::PhantomData<(&$a (), fn() -> $t)>,
            }
            impl<$a, $t: Document> Clone for $name<$a, $t> {
                fn clone(&self) -> Self {
                    $name { $($field: <$ty as Clone>::clone(&self.$field),)* _doc: std::marker::PhantomData }
                }
            }
            impl<$a, $t: Document> super::sealed::Sealed for $name<$a, $t> {}
            impl<$a, $t: Document> Operation<$a, $t> for $name<$a, $t> {
                type Output = $out;
                $(const WRITES: bool = { let _ = stringify!($read); false };)?
                fn run<'s>(self, $repo: &$a Repository<$t>, $session: Option<&'s mut ClientSession>) -> BoxFuture<'s, Result<$out>>
                where
                    $a: 's,
                {
                    let $name { $($field,)* _doc } = self;
                    Box::pin($body)
                }
                fn affected(&self) -> Result<Affected> {
                    let $op = self;
                    $affected
                }
            }
        };
    }

    operation!(
        /// [`Repository::insert_many`].
        Insert<'a, T> { docs: &'a [T] } -> (),
        |repo, session| repo.insert_many_in(docs, super::super::hooks::Write::InsertMany, session),
        affects |op| Affected::documents(op.docs)
    );
    operation!(
        /// [`Repository::insert`].
        InsertOne<'a, T> { doc: &'a T } -> (),
        |repo, session| repo.insert_many_in(std::slice::from_ref(doc), super::super::hooks::Write::Insert, session),
        affects |op| Affected::documents(std::slice::from_ref(op.doc))
    );
    operation!(
        /// [`Repository::insert`] with [`Call::returning`]: the document as stored.
        InsertReturning<'a, T> { doc: &'a T } -> T,
        |repo, session| repo.insert_returning_in(doc, session),
        affects |op| Affected::documents(std::slice::from_ref(op.doc))
    );
    operation!(
        /// [`Repository::upsert`].
        Upsert<'a, T> { filter: Filter, update: Update<T> } -> crate::denormalize::write::UpsertOutcome<T::Id>,
        |repo, session| repo.upsert_in(filter, update, session),
        affects |op| Affected::matching(&op.filter, Some(&op.update))
    );
    operation!(
        /// [`Repository::get`].
        @read Get<'a, T> { id: &'a T::Id } -> Option<T>,
        |repo, session| async move {
            let find = repo.find(doc! {"_id": id.to_bson()});
            match session {
                Some(s) => find.session(s).one().await,
                None => find.one().await,
            }
        },
        affects |_op| Ok(Affected::default())
    );
    operation!(
        /// [`Repository::require`].
        @read Require<'a, T> { id: &'a T::Id } -> T,
        |repo, session| async move {
            let find = repo.find(doc! {"_id": id.to_bson()});
            let found = match session {
                Some(s) => find.session(s).one().await?,
                None => find.one().await?,
            };
            found.ok_or_else(|| Error::NotFound { collection: T::COLLECTION, id: show(id) })
        },
        affects |_op| Ok(Affected::default())
    );
    operation!(
        /// [`Repository::count`].
        @read Count<'a, T> { filter: Filter } -> u64,
        |repo, session| repo.count_in(filter, session),
        affects |_op| Ok(Affected::default())
    );
    operation!(
        /// [`Repository::update_by_id`] (whose `RoutedById` bound is the
        /// only way to make one).
        UpdateById<'a, T> { id: &'a T::Id, update: Update<T> } -> UpdateOutcome,
        |repo, session| repo.update_by_id_in(id, update, session),
        affects |op| Ok(Affected::by_id(op.id.to_bson(), Some(&op.update)))
    );
    operation!(
        /// [`Repository::update_one`] and [`Repository::update_many`].
        UpdateWhere<'a, T> { filter: Filter, update: Update<T>, many: bool } -> UpdateOutcome,
        |repo, session| repo.update_matching(filter, update, many, session),
        affects |op| Affected::matching(&op.filter, Some(&op.update))
    );
    operation!(
        /// [`Repository::replace`].
        Replace<'a, T> { doc: &'a T } -> (),
        |repo, session| repo.replace_in(doc, session),
        affects |op| Affected::documents(std::slice::from_ref(op.doc))
    );
    operation!(
        /// [`Repository::save`].
        Save<'a, T> { doc: &'a T } -> (),
        |repo, session| repo.save_in(doc, session),
        affects |op| Affected::documents(std::slice::from_ref(op.doc))
    );
    operation!(
        /// [`Repository::delete_by_id`].
        DeleteById<'a, T> { id: &'a T::Id } -> bool,
        |repo, session| repo.delete_by_id_in(id, session),
        affects |op| Ok(Affected::by_id::<T>(op.id.to_bson(), None))
    );
    operation!(
        /// [`Repository::delete`].
        Delete<'a, T> { doc: &'a T } -> bool,
        |repo, session| repo.delete_in(doc, session),
        affects |op| Affected::documents(std::slice::from_ref(op.doc))
    );
    operation!(
        /// [`Repository::delete_one`].
        DeleteOne<'a, T> { filter: Filter } -> bool,
        |repo, session| repo.delete_one_in(filter, session),
        affects |op| Affected::matching::<T>(&op.filter, None)
    );
    operation!(
        /// [`Repository::delete_many`].
        DeleteMany<'a, T> { filter: Filter } -> u64,
        |repo, session| repo.delete_many_in(filter, session),
        affects |op| Affected::matching::<T>(&op.filter, None)
    );
}
