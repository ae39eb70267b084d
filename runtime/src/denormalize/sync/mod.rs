//! The asynchronous mode of derived data: a sync worker follows the change
//! stream of the collections something is derived from and applies what a
//! write through a deferred repository left undone — the fan-out of copies,
//! and the maintenance of subsets when their children change.
//!
//! Why a change stream and a stored resume token: a fan-out must never be
//! lost when the application stops between a source write and its copies.
//! The token (in [`SYNC_COLLECTION`]) says how far the copies are known to
//! follow; the next worker resumes there and replays what is missing.
//! Replaying is harmless: fan-outs are guarded by versions and subsets are
//! rebuilt from the full collection, so applying an event twice, or late,
//! never makes derived data older.
//!
//! A token is only useful while the oplog still holds its position, so the
//! worker keeps it near the present even when no write it cares about
//! arrives (the server's post-batch token moves with any write), at most
//! every [`SyncWorker::checkpoint_every`]. When history is lost anyway (the
//! worker was stopped for longer than the oplog window), replay is
//! impossible: the worker stops with [`Error::SyncHistoryLost`], or, with
//! [`HistoryLost::RepairAndContinue`], repairs every source and goes on
//! from the present.
//!
//! An event it cannot apply never stops it: a transient error (the server
//! unreachable or stepping down, a write conflict) is retried until it
//! succeeds; any other is the event's own, and after a few attempts the
//! worker records the event as a dead letter ([`DEAD_LETTER_COLLECTION`],
//! with its reason) and goes on with the next. The admin tool's `verify`
//! lists dead letters as problems, and `repair` (or
//! [`repair_dead_letters`]) re-applies each once its cause is fixed.
//!
//! When its stream is invalidated (the database dropped), the worker saves
//! the invalidate's token as a `startAfter` position and opens a new stream
//! after it: resuming before the invalidate would meet it again at every
//! start.
//!
//! # Limits
//!
//! - A change event of a deleted child carries only its `_id`. Its parent is
//!   known from the pre-image where the child collection keeps them
//!   (`collMod` with `changeStreamPreAndPostImages: {enabled: true}`), or
//!   from the subsets holding a summary with that `_id` when summaries
//!   carry it; otherwise the parent's subset stays as it was until its next
//!   change or a repair. Deletes through docrel rebuild subsets themselves,
//!   in deferred mode too: this concerns deletes made outside docrel.
//! - With subsets in the schema, the stream asks for pre-images
//!   (`fullDocumentBeforeChange: whenAvailable`), which needs MongoDB 6.0.

mod apply;
mod dead_letter;
pub(crate) mod dead_letter_check;
mod retry;
mod watched;

pub use apply::{touched_fields, Applied};
pub use dead_letter::DEAD_LETTER_COLLECTION;

use crate::bson_compat;
use crate::error::{Error, Result};
use mongodb::bson::{self, doc, Document as BsonDoc};
use mongodb::change_stream::event::{ChangeStreamEvent, OperationType, ResumeToken};
use mongodb::change_stream::ChangeStream;
use mongodb::options::{FullDocumentBeforeChangeType, FullDocumentType};
use mongodb::Database;
use retry::{retrying, Outcome};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};
use watched::Watched;

/// The collection the workers keep their resume tokens in.
pub const SYNC_COLLECTION: &str = "_docrel_sync";

/// Server code of a resume point that fell off the oplog.
const CHANGE_STREAM_HISTORY_LOST: i32 = 286;
/// Server code of a change stream that cannot go on (for example the
/// resume point is gone on a server that says so this way).
const CHANGE_STREAM_FATAL_ERROR: i32 = 280;

/// What a worker does when its resume point is no longer in the oplog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum HistoryLost {
    /// Stop with [`Error::SyncHistoryLost`], leaving the stored token as it
    /// was, so the operator decides when to pay for a repair (the default:
    /// a full repair scans every copy and rebuilds every subset).
    #[default]
    Fail,
    /// Open the stream from the present, repair the copies of every source
    /// (as [`crate::check::copies`] does) and rebuild every
    /// subset, then save the new position and go on. Writes made during the
    /// repair are in the new stream, so none is missed. A part of the
    /// repair that fails for good (a parent whose validator refuses its
    /// rebuilt subset, a summary over `max_bytes`) is a dead letter, as an
    /// event would be, and the repair goes on; if it fails transiently, the
    /// old token stays stored and the next start repairs again.
    RepairAndContinue,
}

/// Where the stream goes on from.
#[derive(Debug, Clone, PartialEq)]
struct Position {
    token: ResumeToken,
    /// The token is an invalidate event's: only `startAfter` may pass it
    /// (`resumeAfter` would be refused, and would mean resuming inside a
    /// stream the server has ended).
    start_after: bool,
}

/// The position last saved, and when.
#[derive(Debug)]
struct Saved {
    position: Option<Position>,
    at: Instant,
}

/// A change stream being followed, and where it stands.
struct Followed {
    stream: ChangeStream<ChangeStreamEvent<BsonDoc>>,
    /// Where the stream is now.
    position: Option<Position>,
    saved: Saved,
    /// The stream was opened from now after a repair and has not answered
    /// yet: lost history again means the stream itself is failing.
    fresh: bool,
    /// Changes were applied since the position was last saved.
    unsaved_work: bool,
}

/// How following a stream ended.
enum Ended {
    /// `shutdown` completed, and the position is saved.
    Shutdown,
    /// Open a new stream `from` this position (`None`: from now), repairing
    /// everything first when `repair` (history was lost).
    Reopen { from: Option<Position>, repair: bool },
}

type OnReady = Arc<dyn Fn() + Send + Sync>;

/// Follows the change stream of a database and brings the derived data of
/// what changed up to date: the copies of every registered source, and the
/// subsets summarizing every registered child collection. Pair it with
/// repositories in deferred mode
/// ([`crate::repository::Repository::deferred_fan_out`]); running it beside
/// synchronous writes is harmless too (it redoes what they did).
///
/// ```no_run
/// # async fn f(db: docrel::mongodb::Database) -> docrel::Result<()> {
/// use docrel::denormalize::{HistoryLost, SyncWorker};
/// // Runs until the task is dropped or it fails; restarted, it resumes from its token.
/// SyncWorker::new(&db, "catalog-sync")
///     .on_history_lost(HistoryLost::RepairAndContinue)
///     .run(|applied| println!("{applied:?}"))
///     .await?;
/// # Ok(()) }
/// ```
///
/// With a ready signal and a graceful shutdown (this one stops as soon as
/// its stream is open, leaving its position saved):
///
/// ```
/// # docrel::testing::doc_test(|db| async move {
/// use docrel::denormalize::SyncWorker;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
///
/// let opened = Arc::new(AtomicUsize::new(0));
/// let seen = opened.clone();
/// let worker = SyncWorker::new(&db, "catalog-sync").on_ready(move || {
///     seen.fetch_add(1, Ordering::SeqCst);
/// });
/// worker.run_until(async {}, |_| {}).await?;
/// assert_eq!(opened.load(Ordering::SeqCst), 1);
/// assert!(worker.stored_token().await?.is_some());
/// # Ok(()) });
/// ```
#[derive(Clone)]
pub struct SyncWorker {
    db: Database,
    name: String,
    checkpoint_every: Duration,
    history_lost: HistoryLost,
    on_ready: Option<OnReady>,
}

impl std::fmt::Debug for SyncWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyncWorker")
            .field("database", &self.db.name())
            .field("name", &self.name)
            .field("checkpoint_every", &self.checkpoint_every)
            .field("history_lost", &self.history_lost)
            .field("on_ready", &self.on_ready.is_some())
            .finish()
    }
}

impl SyncWorker {
    /// A worker whose resume token is stored under `name` in `_docrel_sync`.
    pub fn new(db: &Database, name: &str) -> Self {
        SyncWorker {
            db: db.clone(),
            name: name.to_owned(),
            checkpoint_every: Duration::from_secs(10),
            history_lost: HistoryLost::Fail,
            on_ready: None,
        }
    }

    /// How often, at most, the position is saved while the stream moves
    /// (10 s by default). Each save is one small write; between saves a
    /// killed worker replays at most this much, harmlessly. The position is
    /// also saved when the stream falls idle after a fan-out, and on a
    /// graceful shutdown. Saving while nothing relevant happens is what
    /// keeps a quiet source's token inside the oplog window.
    pub fn checkpoint_every(mut self, every: Duration) -> Self {
        self.checkpoint_every = every;
        self
    }

    /// What to do when the stored position is no longer in the oplog
    /// ([`HistoryLost::Fail`] by default).
    pub fn on_history_lost(mut self, what: HistoryLost) -> Self {
        self.history_lost = what;
        self
    }

    /// Called each time the change stream is open and its starting position
    /// saved: writes made after it are sure to be followed. It is called
    /// again when the worker reopens its stream (after an invalidate, or a
    /// repair on lost history).
    pub fn on_ready(mut self, f: impl Fn() + Send + Sync + 'static) -> Self {
        self.on_ready = Some(Arc::new(f));
        self
    }

    /// The resume token stored by the last run, if any.
    pub async fn stored_token(&self) -> Result<Option<ResumeToken>> {
        Ok(self.stored_position().await?.map(|p| p.token))
    }

    async fn stored_position(&self) -> Result<Option<Position>> {
        let stored = self
            .db
            .collection::<BsonDoc>(SYNC_COLLECTION)
            .find_one(doc! {"_id": &self.name})
            .await
            .map_err(|e| Error::driver("find", SYNC_COLLECTION, e))?;
        let Some(stored) = stored else { return Ok(None) };
        let Some(token) = stored.get("token").cloned().and_then(|t| bson_compat::from_bson(t).ok()) else {
            return Ok(None);
        };
        Ok(Some(Position { token, start_after: stored.get_bool("start_after").unwrap_or(false) }))
    }

    async fn save(&self, position: &Position) -> Result<()> {
        let token = bson_compat::to_bson(&position.token)
            .map_err(|e| Error::Encode { what: "a resume token".into(), message: e.to_string() })?;
        self.db
            .collection::<BsonDoc>(SYNC_COLLECTION)
            .update_one(
                doc! {"_id": &self.name},
                doc! {"$set": {"token": token, "start_after": position.start_after, "saved": bson::DateTime::now()}},
            )
            .upsert(true)
            .await
            .map_err(|e| Error::driver("update", SYNC_COLLECTION, e))?;
        Ok(())
    }

    /// Opens the change stream (from the stored token, or from now, saving
    /// that position at once) and applies what changed until it fails,
    /// calling `on_applied` after each change brought up to date. It never
    /// returns `Ok` on its own: stop it by dropping the future (a killed
    /// worker; the next one replays from the last saved position), or use
    /// [`SyncWorker::run_until`] to stop gracefully.
    pub async fn run(&self, on_applied: impl FnMut(&Applied)) -> Result<()> {
        self.run_until(std::future::pending::<()>(), on_applied).await
    }

    /// [`SyncWorker::run`] until `shutdown` completes: the change being
    /// applied is finished, the position saved, and `Ok(())` returned. A
    /// fan-out is never cut in the middle; only the wait for the next event
    /// is, and the pause before an event that failed is tried again (the
    /// position saved is then the one before that event, which the next
    /// start replays).
    pub async fn run_until(
        &self,
        shutdown: impl Future<Output = ()>,
        mut on_applied: impl FnMut(&Applied),
    ) -> Result<()> {
        let mut shutdown = std::pin::pin!(shutdown);
        let mut position = self.stored_position().await?;
        let mut repair = false;
        loop {
            // Read again at every stream: an online change may have made
            // other collections sources or subset children since.
            let watched = Watched::of_graph(crate::schema::graph::of(&self.db));
            let opened = retry::while_passing("open", shutdown.as_mut(), || self.open(&watched, position.as_ref()));
            let stream = match opened.await {
                // Stopped while the server was away: what was applied since
                // the last saved position is replayed by the next start.
                None => return Ok(()),
                Some(Ok(stream)) => stream,
                // Lost history is about a stored position; a stream opened
                // from now that fails this way is not cured by a repair.
                Some(Err(e)) if history_lost(&e) => {
                    self.on_lost(&watched, e, repair || position.is_none())?;
                    position = None;
                    repair = true;
                    continue;
                }
                Some(Err(e)) => return Err(Error::driver("watch", self.db.name(), e)),
            };
            let mut followed = self.start(&watched, stream, position, repair).await?;
            match self.follow(&watched, &mut followed, shutdown.as_mut(), &mut on_applied).await? {
                Ended::Shutdown => return Ok(()),
                Ended::Reopen { from, repair: owed } => (position, repair) = (from, owed),
            }
        }
    }

    /// A stream just opened from `position` (`None`: from now): the repair
    /// owed after lost history, then its first position saved, then the
    /// ready signal.
    async fn start(
        &self,
        watched: &Watched,
        stream: ChangeStream<ChangeStreamEvent<BsonDoc>>,
        mut position: Option<Position>,
        repair: bool,
    ) -> Result<Followed> {
        let opened = stream.resume_token().map(|token| Position { token, start_after: false });
        if repair {
            // Before the new position is saved: if the repair fails, the
            // lost token stays stored and the next start repairs again.
            self.repair(watched).await?;
        }
        let mut saved = Saved { position: position.clone(), at: Instant::now() };
        if position.is_none() {
            position = opened;
            self.save_moved(&mut saved, position.as_ref()).await?;
        }
        if let Some(ready) = &self.on_ready {
            ready();
        }
        Ok(Followed { stream, position, saved, fresh: repair, unsaved_work: false })
    }

    /// Follows the stream until it ends (an invalidate), fails, or
    /// `shutdown` completes.
    async fn follow(
        &self,
        watched: &Watched,
        f: &mut Followed,
        mut shutdown: Pin<&mut impl Future<Output = ()>>,
        on_applied: &mut impl FnMut(&Applied),
    ) -> Result<Ended> {
        loop {
            if !f.stream.is_alive() {
                return Ok(Ended::Reopen { from: f.position.take(), repair: false });
            }
            let next = tokio::select! {
                biased;
                () = &mut shutdown => {
                    self.save_moved(&mut f.saved, current(&f.stream, f.position.as_ref()).as_ref()).await?;
                    return Ok(Ended::Shutdown);
                }
                next = f.stream.next_if_any() => next,
            };
            if next.is_ok() {
                f.fresh = false;
            }
            match next {
                Ok(Some(event)) => {
                    if let Some(ended) = self.on_event(watched, f, &event, shutdown.as_mut(), on_applied).await? {
                        return Ok(ended);
                    }
                }
                Ok(None) => {
                    // Idle: the batch is drained. Save what was applied
                    // now rather than at the next tick.
                    if f.unsaved_work {
                        self.save_moved(&mut f.saved, current(&f.stream, f.position.as_ref()).as_ref()).await?;
                        f.unsaved_work = false;
                    }
                    if self.rules_changed(watched).await {
                        let from = current(&f.stream, f.position.as_ref());
                        self.save_moved(&mut f.saved, from.as_ref()).await?;
                        return Ok(Ended::Reopen { from, repair: false });
                    }
                }
                Err(e) if history_lost(&e) => {
                    // Again before the stream moved after a repair: the
                    // stream itself is failing, and repairing in a loop
                    // would not help.
                    self.on_lost(watched, e, f.fresh)?;
                    return Ok(Ended::Reopen { from: None, repair: true });
                }
                // An election (11602) or a lost server ended the stream where
                // the driver does not resume it: open it again from where it
                // was; nothing it applied is lost, nothing is a dead letter.
                Err(e) if crate::error::driver_failure(&e) == crate::error::Failure::Passing => {
                    let from = current(&f.stream, f.position.as_ref());
                    return Ok(Ended::Reopen { from, repair: false });
                }
                Err(e) => return Err(Error::driver("watch", self.db.name(), e)),
            }
            f.position = current(&f.stream, f.position.as_ref());
            if f.saved.at.elapsed() >= self.checkpoint_every {
                self.save_moved(&mut f.saved, f.position.as_ref()).await?;
                f.unsaved_work = false;
            }
        }
    }

    /// Whether the schema of the database, held under its lease as a write
    /// holds it, is no longer the one `watched` was read from: the stream
    /// is then opened again from where it is, watching what the new rules
    /// derive from. A lease that cannot be confirmed now changes nothing
    /// here; the next event's apply refuses under it.
    async fn rules_changed(&self, watched: &Watched) -> bool {
        if crate::schema::stored::hold(&self.db).await.is_err() {
            return false;
        }
        !std::ptr::eq(crate::schema::graph::of(&self.db), watched.graph)
    }

    /// One event of the stream: an invalidate ends it, any other is applied
    /// (retried while it fails, see [`retry`]) or recorded as a dead letter.
    /// `shutdown` completing while it waits to retry stops the worker with
    /// its position before the event, which the next start replays.
    async fn on_event(
        &self,
        watched: &Watched,
        f: &mut Followed,
        event: &ChangeStreamEvent<BsonDoc>,
        mut shutdown: Pin<&mut impl Future<Output = ()>>,
        on_applied: &mut impl FnMut(&Applied),
    ) -> Result<Option<Ended>> {
        if event.operation_type == OperationType::Invalidate {
            // The stream is over (its database was dropped, or its
            // collection renamed or dropped). Go on after the invalidate,
            // never before it: a restart from an earlier token would meet
            // it again, forever.
            let after = Position { token: event.id.clone(), start_after: true };
            self.save(&after).await?;
            return Ok(Some(Ended::Reopen { from: Some(after), repair: false }));
        }
        let mut tried = false;
        let (error, attempts) = match retrying("apply a change event", shutdown.as_mut(), || {
            apply::apply(&self.db, watched, event, std::mem::replace(&mut tried, true))
        })
        .await
        {
            Outcome::Done(applied) => {
                if let Some(applied) = applied {
                    on_applied(&applied);
                    f.unsaved_work = true;
                }
                return Ok(None);
            }
            Outcome::Failed { error, attempts } => (error, attempts),
            Outcome::Stopped => return self.stopped(f).await,
        };
        let record = || dead_letter::record(&self.db, &self.name, event, &error, attempts);
        match retrying("record a dead letter", shutdown, record).await {
            Outcome::Done(()) => {
                f.unsaved_work = true;
                Ok(None)
            }
            // Not recorded: stop here rather than pass it, so that the
            // next start replays it (nothing is lost).
            Outcome::Failed { error, .. } => Err(error),
            Outcome::Stopped => self.stopped(f).await,
        }
    }

    /// A graceful stop in the middle of an event: the position before it is
    /// saved. The server is likely failing (the event was waiting to be
    /// retried), so a save it refuses is no error: the position stored
    /// before is older still, and replaying from it is harmless.
    async fn stopped(&self, f: &mut Followed) -> Result<Option<Ended>> {
        if let Err(error) = self.save_moved(&mut f.saved, f.position.as_ref()).await {
            tracing::warn!(target: "docrel", worker = %self.name, %error, "sync worker stopped; its position was not saved");
        }
        Ok(Some(Ended::Shutdown))
    }

    /// Applies one change event the way the worker does; `None` when
    /// nothing derived depends on what it changed. For programs that read
    /// change events some other way (a queue fed by a connector, a stream of
    /// their own): the event needs `fullDocument` (`updateLookup`), and for
    /// deletes of subset children `fullDocumentBeforeChange` where the
    /// collection keeps pre-images. Applying an event twice, or out of
    /// order, is harmless. It tries once: retrying, and keeping what fails
    /// for good (the worker's dead letters), are the caller's.
    pub async fn apply_event(&self, event: &ChangeStreamEvent<BsonDoc>) -> Result<Option<Applied>> {
        apply::apply(&self.db, &Watched::of_graph(crate::schema::graph::of(&self.db)), event, false).await
    }

    /// Saves `now` unless it is what was saved last.
    async fn save_moved(&self, saved: &mut Saved, now: Option<&Position>) -> Result<()> {
        if let Some(now) = now {
            if saved.position.as_ref() != Some(now) {
                self.save(now).await?;
                *saved = Saved { position: Some(now.clone()), at: Instant::now() };
            }
        }
        Ok(())
    }

    /// What to do with lost history: an error, or go on to repair (not
    /// when the stream failing is one `again` opened from now).
    fn on_lost(&self, watched: &Watched, e: mongodb::error::Error, again: bool) -> Result<()> {
        match self.history_lost {
            HistoryLost::RepairAndContinue if !again => Ok(()),
            _ => Err(Error::SyncHistoryLost {
                worker: self.name.clone(),
                database: self.db.name().to_owned(),
                sources: watched.all().join(", "),
                source: Box::new(e),
            }),
        }
    }

    async fn open(
        &self,
        watched: &Watched,
        position: Option<&Position>,
    ) -> mongodb::error::Result<ChangeStream<ChangeStreamEvent<BsonDoc>>> {
        let mut watch = self.db.watch().pipeline(watched.pipeline()).full_document(FullDocumentType::UpdateLookup);
        if !watched.children.is_empty() {
            // A deleted child's event holds only its `_id`; its pre-image
            // names its parent, where the collection keeps pre-images.
            watch = watch.full_document_before_change(FullDocumentBeforeChangeType::WhenAvailable);
        }
        match position {
            Some(p) if p.start_after => watch.start_after(p.token.clone()).await,
            Some(p) => watch.resume_after(p.token.clone()).await,
            None => watch.await,
        }
    }

    /// Repairs everything derived, after lost history: the copies of every
    /// source, then the subsets of every parent. What fails for good is a
    /// dead letter (repairing it runs that part again), so one source or
    /// parent does not stop the worker at every start; a transient failure
    /// stops it, and the next start repairs again.
    async fn repair(&self, watched: &Watched) -> Result<()> {
        for source in watched.sources.iter().copied() {
            match crate::denormalize::repair::repair_collection(&self.db, source)?.run().await {
                Err(e) if !retry::transient(&e) => {
                    dead_letter::record_repair(&self.db, &self.name, source, bson::Bson::Null, None, &e).await?;
                }
                other => {
                    other?;
                }
            }
        }
        for child in &watched.children {
            apply::rebuild_all_subsets(&self.db, child, &self.name).await?;
        }
        Ok(())
    }
}

/// The stream's position now: its resume token (after the last event
/// returned, or the server's post-batch token when the batch is drained).
fn current(stream: &ChangeStream<ChangeStreamEvent<BsonDoc>>, before: Option<&Position>) -> Option<Position> {
    match stream.resume_token() {
        Some(token) => Some(Position { token, start_after: false }),
        None => before.cloned(),
    }
}

/// Whether the server says the stream cannot resume from where it was.
fn history_lost(e: &mongodb::error::Error) -> bool {
    matches!(
        e.kind.as_ref(),
        mongodb::error::ErrorKind::Command(c) if c.code == CHANGE_STREAM_HISTORY_LOST || c.code == CHANGE_STREAM_FATAL_ERROR
    )
}
