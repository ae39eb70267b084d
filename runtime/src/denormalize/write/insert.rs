//! The plan of an insert (and what a replace or save that creates a
//! document owes, in `put.rs`): the repository hands the documents over in
//! one call and the plan runs all they owe the documents around them, so
//! an insert is read in one place, as an update is in [`super::UpdatePlan`].
//!
//! Two-way references are kept by `relations`, a layer above this one; the
//! repository hands the plan their side as a [`TwoWaySides`] (the subsets
//! a new parent keeps live below, in `patterns`, and are called directly).

use super::document::DocumentPlan;
use super::encode::{encode_all, Encoded};
use super::outcome::Mode;
use super::sides::{Linking, TwoWaySides};
use crate::denormalize::fanout;
use crate::denormalize::fill::{self, Sources};
use crate::error::{Error, Result};
use crate::id::DocId;
use crate::patterns::{subset, subset_rebuild};
use crate::schema::document::Document;
use crate::schema::graph::Graph;
use crate::store::codec::encode;
use crate::store::session::{in_session, Cx};
use crate::store::transaction;
use mongodb::bson::{self, doc, RawDocumentBuf};
use mongodb::Collection;
use std::marker::PhantomData;

/// The plan of a write of whole documents of `T` into `raw`.
pub(crate) struct InsertPlan<'r, T> {
    pub(super) raw: &'r Collection<RawDocumentBuf>,
    pub(super) mode: Mode,
    pub(super) facts: DocumentPlan,
    pub(super) sides: &'static dyn TwoWaySides,
    _doc: PhantomData<fn() -> T>,
}

impl<T> Clone for InsertPlan<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for InsertPlan<'_, T> {}

/// What a plan is made of, but the collection's handle.
type Parts = (Mode, DocumentPlan, &'static dyn TwoWaySides);

/// What an insert did: the ids written (a generated one included), and
/// when asked for, the first document as written and whether what the
/// insert owed changed it since.
pub(crate) struct Inserted<T: Document> {
    pub(crate) ids: Vec<T::Id>,
    first: Option<(RawDocumentBuf, bool)>,
}

/// When an insert reads the copies around the documents it wrote (their
/// own confirmed against their sources, holders already referring to them
/// filled): now, with the sources its fill read, or once the transaction
/// it runs in has committed.
pub(super) enum Around {
    Now(Option<Sources>),
    AfterCommit,
}

impl<'r, T: Document> InsertPlan<'r, T> {
    pub(crate) fn new(
        raw: &'r Collection<RawDocumentBuf>,
        mode: Mode,
        sides: &'static dyn TwoWaySides,
        graph: &'static Graph,
    ) -> Self {
        InsertPlan { raw, mode, facts: DocumentPlan::of(graph, T::schema()), sides, _doc: PhantomData }
    }

    /// The same plan on another handle of the collection (one a
    /// transaction's body owns, which must not borrow this plan).
    fn on<'s>(raw: &'s Collection<RawDocumentBuf>, (mode, facts, sides): Parts) -> InsertPlan<'s, T> {
        InsertPlan { raw, mode, facts, sides, _doc: PhantomData }
    }

    pub(super) fn err(operation: &'static str) -> impl FnOnce(mongodb::error::Error) -> Error {
        move |e| Error::driver(operation, T::COLLECTION, e)
    }

    /// The insert of `docs` and everything it owes; with `keep`, the first
    /// document as written is kept for [`Inserted::stored`].
    pub(crate) async fn insert(&self, cx: &mut Cx<'_>, docs: &[T], keep: bool) -> Result<Inserted<T>> {
        let encoded = encode_all(cx, docs, true, &self.facts, self.sides).await?;
        // The ids as written (a generated one included), for the hooks.
        let ids: Vec<T::Id> =
            encoded.raws.iter().filter_map(|r| r.get("_id").ok().flatten().and_then(T::Id::from_raw)).collect();
        let first = keep.then(|| encoded.raws.first().cloned()).flatten();
        // Several documents, or one whose links may be refused (the other
        // side full): all or nothing, where the deployment has transactions.
        let changed = match docs.len() > 1 || self.facts.two_way {
            true => match self.in_transaction(encoded, cx).await? {
                Ok(changed) => changed,
                Err(encoded) => self.ordered(encoded, cx).await?,
            },
            false => self.ordered(encoded, cx).await?,
        };
        Ok(Inserted { ids, first: first.map(|raw| (raw, changed)) })
    }

    /// What depends on documents just written (all of `written`): their
    /// copies confirmed, holders already referring to them filled, their
    /// summaries pushed into their parents' subsets. Returns whether that
    /// may have changed the written documents themselves (a copy refreshed
    /// on a race, a two-way side or a subset filled in, a copy of itself).
    pub(super) async fn after_insert(
        &self,
        written: &[bson::Document],
        around: Around,
        cx: &mut Cx<'_>,
    ) -> Result<bool> {
        if written.is_empty() {
            return Ok(false);
        }
        let mut changed = self.facts.changes_new();
        if let Around::Now(filled) = around {
            changed |= self.copies_around(written, filled, cx).await?;
        }
        self.after_new(written, cx).await?;
        if self.facts.summarized {
            // The summaries in the parents' subsets: one push per parent.
            subset::after_insert(cx, T::COLLECTION, written).await?;
        }
        Ok(changed)
    }

    /// What a new document of `T` owes the documents around it: the other
    /// side of its two-way references, and the subsets it keeps of children
    /// that already exist.
    pub(super) async fn after_new(&self, docs: &[bson::Document], cx: &mut Cx<'_>) -> Result<()> {
        if self.facts.two_way {
            self.sides.link(cx, T::schema(), docs, Linking::Both).await?;
        }
        let ids: Vec<bson::Bson> = docs.iter().filter_map(|d| d.get("_id").cloned()).collect();
        subset_rebuild::rebuild_kept(cx, T::schema(), &ids).await
    }

    /// The insert and everything it owes the documents around it in one
    /// transaction (the caller's when its session is in one): whether it
    /// changed the documents after their write (see `after_insert`) once
    /// done, or the documents back when the server has no transactions.
    async fn in_transaction(&self, encoded: Encoded, cx: &mut Cx<'_>) -> Result<Result<bool, Encoded>> {
        if !cx.has_session() && transaction::standalone(cx.db) {
            return Ok(Err(encoded));
        }
        let (raw, db, parts) = (self.raw.clone(), cx.db.clone(), (self.mode, self.facts, self.sides));
        let joined = match cx.session() {
            Some(s) => transaction::in_transaction(s).await,
            None => false,
        };
        // Shared by every attempt of the body, not copied for each.
        let shared = std::sync::Arc::new(encoded);
        let result = transaction::run_or_join(cx, "insert_many", &mut |session| {
            let (raw, db, encoded) = (raw.clone(), db.clone(), shared.clone());
            Box::pin(async move {
                let (cx, plan) = (&mut Cx::new(&db, Some(session)), InsertPlan::<T>::on(&raw, parts));
                if plan.facts.pushes_with_insert(joined, plan.raw.client()) {
                    let confirmed = fill::insert_and_push(cx, T::schema(), &encoded.plain, encoded.filled.as_ref());
                    return Ok((plan.facts.changes_new(), confirmed.await?));
                }
                let written = plan.write_new(encoded.raws.clone(), cx).await;
                written.map_err(|e| Error::driver("insert_many", T::COLLECTION, e))?;
                // A transaction of its own reads them once committed
                // ([`Self::after_commit`]), which sees all a read inside it would.
                let around = if joined { Around::Now(encoded.filled.clone()) } else { Around::AfterCommit };
                Ok((plan.after_insert(&encoded.plain, around, cx).await?, false))
            })
        })
        .await;
        match result {
            Ok((changed, _)) if joined => Ok(Ok(changed)),
            Ok((changed, confirmed)) => {
                // Pushes guarded by the versions the fill read confirmed the copies.
                let filled = if confirmed { None } else { shared.filled.clone() };
                Ok(Ok(changed | self.after_commit(&shared.plain, filled, cx).await?))
            }
            // Refused at its first write: nothing was written.
            Err(e) if transaction::unsupported(&e) => {
                transaction::remember_standalone(cx.db);
                Ok(Err(std::sync::Arc::unwrap_or_clone(shared)))
            }
            Err(e) => Err(e),
        }
    }

    /// What a committed insert transaction read again: the transaction read
    /// a snapshot, so a holder of these documents written by another client
    /// while it ran, or a source of their copies committed meanwhile, was in
    /// none of its reads, and that writer's own reads did not see these
    /// uncommitted documents either. Now that they are committed, one more
    /// read of each finds what the other missed (version guards make a copy
    /// written twice the same). Returns whether it changed the documents.
    async fn after_commit(&self, written: &[bson::Document], filled: Option<Sources>, cx: &mut Cx<'_>) -> Result<bool> {
        let changed = self.copies_around(written, filled, cx).await?;
        if self.facts.two_way {
            self.sides.link(cx, T::schema(), written, Linking::Referring).await?;
        }
        Ok(changed)
    }

    /// The copies around documents just written: theirs confirmed against
    /// their sources (when they were filled), and those of holders already
    /// referring to them filled. Returns whether their own copies changed.
    async fn copies_around(
        &self,
        written: &[bson::Document],
        filled: Option<Sources>,
        cx: &mut Cx<'_>,
    ) -> Result<bool> {
        let changed = match filled {
            Some(filled) => fill::confirm(cx, T::schema(), written, filled).await?,
            None => false,
        };
        fanout::fan_out_inserted(cx, T::COLLECTION, written).await?;
        Ok(changed)
    }

    /// An ordered insert, then what the documents it wrote owe: on a
    /// refused document the ones before it are written (with everything
    /// derived from them) and the rest are not. Returns what `after_insert` does.
    async fn ordered(&self, encoded: Encoded, cx: &mut Cx<'_>) -> Result<bool> {
        let Encoded { raws, plain, filled } = encoded;
        let op = if raws.len() == 1 { "insert" } else { "insert_many" };
        match self.write_new(raws, cx).await.map_err(Self::err(op)) {
            Ok(()) => self.after_insert(&plain, Around::Now(filled), cx).await,
            Err(e) => {
                if !plain.is_empty() {
                    let landed = super::landed::landed(self.raw, T::COLLECTION, &e, &plain, cx).await?;
                    self.after_insert(&plain[..landed], Around::Now(filled), cx).await?;
                }
                Err(e)
            }
        }
    }

    /// The insert command itself: `insert_one` for one document.
    async fn write_new(&self, mut raws: Vec<RawDocumentBuf>, cx: &mut Cx<'_>) -> mongodb::error::Result<()> {
        match raws.len() {
            1 => in_session!(self.raw.insert_one(raws.remove(0)), cx.session()).map(|_| ()),
            _ => in_session!(self.raw.insert_many(raws), cx.session()).map(|_| ()),
        }
    }
}

impl<T: Document> Inserted<T> {
    fn err_find(e: mongodb::error::Error) -> Error {
        Error::driver("find", T::COLLECTION, e)
    }

    /// The insert of no document.
    pub(crate) fn none() -> Self {
        Inserted { ids: Vec::new(), first: None }
    }

    /// The first document inserted, as stored: decoded from what was
    /// written, copies filled (no round trip), or read back by `_id` when
    /// what the insert owed changed it after the write.
    pub(crate) async fn stored(self, raw: &Collection<RawDocumentBuf>, cx: &mut Cx<'_>) -> Result<T> {
        let Some((written, changed)) = self.first else {
            return Err(Error::Invalid { what: crate::error::Misuse::Insert, message: "nothing encoded".into() });
        };
        if changed {
            // By the id written: the caller's, or the one generated.
            let id = written.get("_id").ok().flatten().map(bson::Bson::try_from).transpose();
            let id = id.ok().flatten().unwrap_or(bson::Bson::Null);
            // On the primary, whatever the client's read preference: a
            // secondary may not have the insert yet (it said NotFound).
            let read = raw
                .find_one(doc! {"_id": id.clone()})
                .projection(doc! { crate::store::find::BOOKKEEPING: 0 })
                .selection_criteria(crate::store::primary());
            let found = crate::store::session::in_session!(read, cx.session()).map_err(Self::err_find)?;
            let id = crate::error::show_id(&id);
            let found = found.ok_or(Error::NotFound { collection: T::COLLECTION, id })?;
            return crate::store::codec::decode::<T>(T::COLLECTION, &found);
        }
        let mut written = bson::Document::try_from(written.as_ref())
            .map_err(|e| Error::Encode { what: "a document".into(), message: e.to_string() })?;
        written.remove(crate::store::find::BOOKKEEPING);
        crate::store::codec::decode::<T>(T::COLLECTION, &encode(T::COLLECTION, &written)?)
    }
}
