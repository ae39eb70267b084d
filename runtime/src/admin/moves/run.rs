//! Running a move online: announced → maintained → (the copy) → moved →
//! switched, each state published with the schema and entered only once
//! every live lease holder has seen the one before and two leases have
//! passed ([`super::may_enter`]). The states and the copy's checkpoint are
//! saved in the database: a stopped or crashed run resumes where it was,
//! and running it again after it is done changes nothing.

use super::indexes::Which;
use super::progress::Step;
use super::states::{may_enter, Wait};
use crate::error::{Error, Misuse, Result};
use crate::schema::stored::{self, ActiveMove, MoveState, OldArray, StoredMove, StoredType};
use mongodb::bson::{doc, DateTime, Document as BsonDoc};
use mongodb::Database;
use serde::Serialize;
use std::time::Duration;

/// What a run did to each move, and where it stands.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MoveReport {
    /// The move's id.
    pub id: String,
    /// `posts.comments → comments`.
    pub label: String,
    /// The state it reached (`None`: not announced, the run was stopped).
    pub state: Option<MoveState>,
    /// Whether it resumed a run stopped before.
    pub resumed: bool,
    /// Pages of parents the copy wrote in this run.
    pub pages: u64,
    /// Elements the copy wrote in this run (each a document of the new
    /// collection; a page copied again after a stop counts again).
    pub elements: u64,
    /// Parents reconciled after the copy's pages, for writes made meanwhile.
    pub settled: u64,
}

impl MoveReport {
    /// Whether the move reached `switched`: the new version reads the new shape.
    pub fn switched(&self) -> bool {
        self.state.is_some_and(|s| s >= MoveState::Switched)
    }
}

/// Parents per page of the copy.
const PAGE: i64 = 200;

/// Parents per page of an offline copy: with no writes to reconcile after
/// a page, a larger one spends less on finding the pages' bounds (a scan
/// of the parents on the embedded server) and on checkpoints; a stopped
/// copy resumes from the last one written.
const OFFLINE_PAGE: i64 = 2000;

/// Whether other programs may write while a run takes its moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fleet {
    /// They may ([`run`]).
    Writing,
    /// None holds a live lease as the run begins ([`run_offline`]).
    Stopped,
}

/// Runs (or resumes) the moves `program` declares up to `switched`. `stop`
/// is asked between steps and pages; `step` hears each step, in words or
/// as the copy's progress ([`Step`]).
/// Refused, with nothing written, when a plan has refusals.
pub async fn run(
    db: &Database,
    program: &[StoredType],
    moves: &[StoredMove],
    lease: Duration,
    stop: impl FnMut() -> bool,
    step: impl FnMut(&Step),
) -> Result<Vec<MoveReport>> {
    run_as(Fleet::Writing, db, (program, moves), lease, stop, step).await
}

/// [`run`] in a maintenance window, while no other program writes `db`
/// (`docrel schema apply --offline`): refused, with nothing written, while
/// another process holds a live lease ([`super::holders`]). Each move's
/// non-unique indexes are then built after its copy, as a bulk load builds
/// them, rather than kept up through the copy for writes that come in
/// meanwhile. The states are kept as online: a program started during the
/// move still keeps both shapes, and if one holds a lease when a copy
/// begins, that move's indexes are built first after all.
///
/// ```no_run
/// # async fn f(db: docrel::mongodb::Database) -> docrel::Result<()> {
/// let program = docrel::schema::stored::read_export(&docrel::schema::export()).expect("an export");
/// let lease = std::time::Duration::from_secs(30);
/// let done = docrel::admin::moves::run_offline(&db, &program.types, &program.moves, lease, || false, |s| {
///     eprintln!("{s}")
/// })
/// .await?;
/// assert!(done.iter().all(|m| m.switched()));
/// # Ok(()) }
/// ```
pub async fn run_offline(
    db: &Database,
    program: &[StoredType],
    moves: &[StoredMove],
    lease: Duration,
    stop: impl FnMut() -> bool,
    step: impl FnMut(&Step),
) -> Result<Vec<MoveReport>> {
    let others = others_writing(db).await?;
    if !others.is_empty() {
        return Err(Error::Invalid {
            what: Misuse::Schema,
            message: format!(
                "an offline move runs only while no other program holds the schema, and {} hold(s) a live lease, \
                 nothing was written: stop them (`docrel schema status` lists them), or run the move online \
                 (without `--offline`)",
                others.join("; ")
            ),
        });
    }
    run_as(Fleet::Stopped, db, (program, moves), lease, stop, step).await
}

async fn run_as(
    fleet: Fleet,
    db: &Database,
    (program, moves): (&[StoredType], &[StoredMove]),
    lease: Duration,
    mut stop: impl FnMut() -> bool,
    mut step: impl FnMut(&Step),
) -> Result<Vec<MoveReport>> {
    let mut out = Vec::new();
    for mv in moves {
        let mut report = MoveReport { id: mv.id.clone(), label: mv.label(), ..MoveReport::default() };
        let active = match stored::load_moves(db).await?.into_iter().find(|m| m.spec.id == mv.id) {
            Some(active) => {
                report.resumed = true;
                active
            }
            None if reached(db, mv, "switched").await? => {
                step(&format!("{}: switched already", mv.label()).into());
                report.state = Some(MoveState::Switched);
                out.push(report);
                continue;
            }
            None => announce(db, program, mv, fleet, &mut step).await?,
        };
        report.state = Some(active.state);
        advance(db, (active, fleet), lease, &mut report, &mut stop, &mut step).await?;
        out.push(report);
    }
    Ok(out)
}

/// The other processes holding a live lease on `db` (as `schema status`
/// names them): any of them may be writing.
async fn others_writing(db: &Database) -> Result<Vec<String>> {
    let me = stored::this_process();
    let holders = super::holders::holders(db).await?;
    Ok(holders
        .iter()
        .filter(|h| h.live && h.process != me)
        .map(|h| format!("{} (pid {} on {})", h.program, h.pid, h.host))
        .collect())
}

/// Builds every index the move needs that is not there yet, from the
/// types published when it was announced.
async fn all_indexes(db: &Database, active: &ActiveMove, step: &mut impl FnMut(&Step)) -> Result<()> {
    let types = stored::load(db).await?;
    let on = (&active.spec, active.old, active.field.as_str());
    super::indexes::build(db, &types, on, Which::All, &mut |s: &str| step(&s.into())).await
}

/// Deletes the marks of `mv`, in a transaction: a writer still marking
/// (one that began under `maintained`) writes them in its own, and a plain
/// multi-document delete meeting a document an open transaction wrote
/// stalls the embedded test server for good (`tests/history/gate.rs`).
pub(super) async fn forget_marks(db: &Database, mv: &StoredMove) -> Result<()> {
    use crate::denormalize::moved::MARKS_COLLECTION;
    let (db2, id) = (db.clone(), mv.id.clone());
    crate::store::transaction::run(db, "forgetting a move's marks", &mut |s| {
        let (db, id) = (db2.clone(), id.clone());
        Box::pin(async move {
            let marks = db.collection::<BsonDoc>(MARKS_COLLECTION);
            marks
                .delete_many(doc! {"_id.m": id})
                .session(s)
                .await
                .map_err(|e| Error::driver("delete", MARKS_COLLECTION, e))?;
            Ok(())
        })
    })
    .await
}

/// Whether a run took `mv` as far as `flag` (`switched`, `complete`)
/// before: its checkpoint says so.
pub(super) async fn reached(db: &Database, mv: &StoredMove, flag: &str) -> Result<bool> {
    let saved = checkpoints(db).find_one(doc! {"_id": checkpoint_id(mv)}).await;
    let saved = saved.map_err(|e| Error::driver("find", crate::admin::backfilled::CHANGE_COLLECTION, e))?;
    Ok(saved.is_some_and(|s| s.get_bool(flag).unwrap_or(false)))
}

/// Records in `mv`'s checkpoint that a run took it as far as `flag`.
pub(super) async fn record(db: &Database, mv: &StoredMove, flag: &str) -> Result<()> {
    checkpoints(db)
        .update_one(doc! {"_id": checkpoint_id(mv)}, doc! {"$set": {flag: true}})
        .upsert(true)
        .await
        .map_err(|e| Error::driver("update", crate::admin::backfilled::CHANGE_COLLECTION, e))?;
    Ok(())
}

fn checkpoints(db: &Database) -> mongodb::Collection<BsonDoc> {
    db.collection(crate::admin::backfilled::CHANGE_COLLECTION)
}

fn checkpoint_id(mv: &StoredMove) -> String {
    format!("move:{}", mv.id)
}

/// Plans `mv`, refuses it when the plan says so, then builds its indexes,
/// publishes the new version's types and the move, announced.
async fn announce(
    db: &Database,
    program: &[StoredType],
    mv: &StoredMove,
    fleet: Fleet,
    step: &mut impl FnMut(&Step),
) -> Result<ActiveMove> {
    let stored_types = stored::load(db).await?;
    let refusals = super::plan::refusals(db, &stored_types, program, mv).await?;
    if !refusals.is_empty() {
        return Err(Error::Invalid {
            what: Misuse::Schema,
            message: format!("the move {} is refused, nothing was written: {}", mv.label(), refusals.join("; ")),
        });
    }
    let (spec, field, holds, bound, required) = shape(&stored_types, program, mv);
    // Offline, the unique ones only; the others after the copy.
    let which = if fleet == Fleet::Stopped { Which::Unique } else { Which::All };
    super::indexes::build(db, program, (&spec, holds, &field), which, &mut |s: &str| step(&s.into())).await?;
    stored::publish_types(db, program).await?;
    let since = DateTime::from_millis(super::holders::server_now(db).await?);
    let (state, change) = (MoveState::Announced, mv.id.clone());
    let active = ActiveMove { spec, field, bound, old: holds, required, state, since, change };
    let mut all = stored::load_moves(db).await?;
    all.push(active.clone());
    stored::publish_moves(db, &all).await?;
    stored::obey(db).await?;
    step(&format!("{}: announced", mv.label()).into());
    Ok(active)
}

/// What a move whose plan has no refusals keeps: its spec (a move back
/// given its parent reference), the old field's stored name, what it
/// holds, its bound, and whether the field is required.
fn shape(
    stored_types: &[StoredType],
    program: &[StoredType],
    mv: &StoredMove,
) -> (StoredMove, String, OldArray, Option<u32>, bool) {
    if mv.kind.is_back() {
        let (spec, field, required) =
            super::back::resolve(stored_types, program, mv).unwrap_or_else(|_| (mv.clone(), String::new(), false));
        return (spec, field, OldArray::One, Some(1), required);
    }
    let old = super::plan::stored_array(stored_types, mv);
    let field = old.map(|r| r.field.clone()).unwrap_or_default();
    let holds = old.and_then(|r| OldArray::of(&r.kind)).unwrap_or_default();
    let bound = old.and_then(|r| holds.bound(&r.kind));
    let required = holds == OldArray::One && super::shapes::required(stored_types, &mv.from.collection, &field);
    (mv.clone(), field, holds, bound, required)
}

/// Takes `active` from its state to `switched`, copying in `maintained`.
async fn advance(
    db: &Database,
    (mut active, fleet): (ActiveMove, Fleet),
    lease: Duration,
    report: &mut MoveReport,
    stop: &mut impl FnMut() -> bool,
    step: &mut impl FnMut(&Step),
) -> Result<()> {
    while active.state < MoveState::Switched {
        let Some(next) = active.state.next() else { break };
        if !wait_for(db, &active, lease, stop, &mut |s: &str| step(&s.into())).await? {
            step(&"stopped: run `docrel schema apply` again to resume".into());
            return Ok(());
        }
        if active.state == MoveState::Maintained {
            // Indexes are missing only where an offline run announced the
            // move: built now for an online run resuming it, or offline for
            // a program that came meanwhile (its writes find a parent's
            // documents by them).
            let missing = match fleet {
                Fleet::Writing => report.resumed,
                Fleet::Stopped => !others_writing(db).await?.is_empty(),
            };
            if missing {
                all_indexes(db, &active, step).await?;
            }
            let page = if fleet == Fleet::Stopped { OFFLINE_PAGE } else { PAGE };
            let copied = super::copy_run::copy(db, &active, page, stop, step).await?;
            report.pages += copied.pages;
            report.elements += copied.elements;
            report.settled += copied.settled;
            if !copied.finished {
                step(&"stopped: run `docrel schema apply` again to resume the copy".into());
                return Ok(());
            }
            if fleet == Fleet::Stopped {
                all_indexes(db, &active, step).await?;
            }
            // What the new version derives from the moved documents (its
            // subsets of them) is rebuilt from them, now that all are there.
            let to = active.spec.to.collection.clone();
            let forward = !active.spec.kind.is_back();
            if forward && crate::admin::checks::involves(crate::schema::graph::of(db), &to) {
                step(&format!("{}: backfill: repair {to}", active.spec.label()).into());
                let repaired = crate::admin::checks::repair(db, Some(&to))?.run(&mut *stop, |_, _| {}).await?;
                if repaired.interrupted {
                    step(&"stopped: run `docrel schema apply` again to resume the backfill".into());
                    return Ok(());
                }
            }
        }
        active = enter(db, active, next).await?;
        report.state = Some(next);
        step(&format!("{}: {next}", active.spec.label()).into());
    }
    // The copy is done: its marks say nothing more.
    forget_marks(db, &active.spec).await?;
    record(db, &active.spec, "switched").await
}

/// Waits until the move may leave its state; `false` when stopped.
pub(super) async fn wait_for(
    db: &Database,
    active: &ActiveMove,
    lease: Duration,
    stop: &mut impl FnMut() -> bool,
    step: &mut impl FnMut(&str),
) -> Result<bool> {
    let mut said = None;
    loop {
        let (holders, now) = super::holders::holders_now(db).await?;
        let elapsed = Duration::from_millis(u64::try_from(now - active.since.timestamp_millis()).unwrap_or(0));
        let wait = may_enter(&active.spec.id, active.state, elapsed, &holders, lease);
        if wait == Wait::Ready {
            return Ok(true);
        }
        if stop() {
            return Ok(false);
        }
        let words = match &wait {
            Wait::Holders(h) => format!("waiting for {} to see {}", h.join("; "), active.state),
            _ => format!("waiting two leases in {}", active.state),
        };
        if said.as_ref() != Some(&words) {
            step(&words);
            said = Some(words);
        }
        tokio::time::sleep(Duration::from_millis(100).min(lease / 4).max(Duration::from_millis(10))).await;
    }
}

/// Publishes `active` in state `next`, at the server's time, and obeys it.
pub(super) async fn enter(db: &Database, active: ActiveMove, next: MoveState) -> Result<ActiveMove> {
    let since = DateTime::from_millis(super::holders::server_now(db).await?);
    let entered = ActiveMove { state: next, since, ..active };
    let mut all = stored::load_moves(db).await?;
    match all.iter_mut().find(|m| m.spec.id == entered.spec.id) {
        Some(m) => *m = entered.clone(),
        None => all.push(entered.clone()),
    }
    stored::publish_moves(db, &all).await?;
    stored::obey(db).await?;
    Ok(entered)
}
