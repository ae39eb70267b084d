//! Running a history: a fresh database, the setup, the workers (tokio
//! tasks) running their operations concurrently, fault injection, the sync
//! worker of deferred histories, then quiescence and the check of the
//! contract:
//!
//! - (a) every docrel call returned `Ok` (or was refused with nothing
//!   written, see [`classify`]): I1–I5 must hold as they are;
//! - (b) some call failed: after one [`repair_everything`] pass, the
//!   invariants must hold ([`CHECKED_AFTER_REPAIR`]: all of them).

use super::background::{Reaper, Sync};
use super::check::{self, Facts, Inv, Snapshot, Violation};
use super::exec::{classify, exec, fail_point, Ctx};
use super::gate::{entry, Gate};
use super::monitor;
use super::op::End;
use super::plan::{Mode, Op, Plan};
use super::process::{self, connect_like, Admission};
use super::repair::{accept_reported_dangling, repair_everything};
use super::rule_change::Changer;
use super::schema::Person;
use super::setup::setup;
use super::universe::Universe;
use docrel::bson::Bson;
use docrel::mongodb::{Client, Database};
use docrel::testing::TestDb;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// An operation taking longer is abandoned and recorded as timed out
/// (longer than the 60 s after which the server reaps an idle transaction).
pub const OP_TIMEOUT: Duration = Duration::from_secs(90);
/// The check of a quiesced history, with its repair pass, takes less.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(300);
/// Operations slower than this are listed in the notes.
pub const SLOW: Duration = Duration::from_secs(10);

/// Invariants checked in a (b)-history, after one repair pass: all of
/// them, I1-I5 each has a repair; [`Inv::Pulled`] needs none, since it
/// only holds deletes that returned `Ok` to their pulls.
pub const CHECKED_AFTER_REPAIR: &[Inv] = &[Inv::I1, Inv::I2, Inv::I3, Inv::I4, Inv::I5, Inv::Pulled, Inv::Call];
/// Invariants checked in an (a)-history.
pub const CHECKED: &[Inv] = &[Inv::I1, Inv::I2, Inv::I3, Inv::I4, Inv::I5, Inv::Pulled, Inv::Call];

/// The invariants an (a)-history of `plan` is held to.
pub fn checked(plan: &Plan) -> Vec<Inv> {
    let mut which = CHECKED.to_vec();
    if plan.strict_records {
        which.push(Inv::Unrecorded);
    }
    which
}

/// What an operation returned.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Res {
    Ok(String),
    /// An error about the request itself, with nothing written (or, for a
    /// duplicate key in `insert_many`, what landed must be consistent):
    /// bound, `restrict`, not found, invalid, duplicate key, a read that
    /// cannot be decoded. Derived data must stay true: the history stays (a).
    Refused(String),
    /// Any other error (the driver's, a cut fan-out): derived data may be
    /// wrong until one repair pass. The history becomes (b).
    Failed(String),
    /// Abandoned after [`OP_TIMEOUT`]; counts as failed.
    TimedOut,
}

impl Res {
    /// Whether this result makes the history a (b)-history.
    pub fn failed(&self) -> bool {
        matches!(self, Res::Failed(_) | Res::TimedOut)
    }
}

impl fmt::Display for Res {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let short = |s: &str| -> String {
            let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
            if one.chars().count() > 220 {
                format!("{}...", one.chars().take(220).collect::<String>())
            } else {
                one
            }
        };
        match self {
            Res::Ok(s) => write!(f, "Ok({s})"),
            Res::Refused(s) => write!(f, "Refused({})", short(s)),
            Res::Failed(s) => write!(f, "FAILED({})", short(s)),
            Res::TimedOut => write!(f, "TIMED OUT"),
        }
    }
}

/// One operation as it ran.
#[derive(Clone, Debug)]
pub struct Record {
    pub worker: usize,
    pub seq: usize,
    pub op: Op,
    pub start: Duration,
    pub end: Duration,
    pub res: Res,
    /// What it sent that its entry to the gate did not declare (`monitor.rs`).
    pub undeclared: Option<String>,
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:>7.3}..{:<7.3} w{}#{:<4} {} -> {}",
            self.start.as_secs_f64(),
            self.end.as_secs_f64(),
            self.worker,
            self.seq,
            self.op,
            self.res
        )
    }
}

/// Whether the contract's (a) or (b) applies to a history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contract {
    /// Every docrel call returned `Ok` or was refused.
    A,
    /// Some call failed or timed out.
    B,
}

/// A history as it ran, and what the check found.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub plan: Plan,
    pub records: Vec<Record>,
    /// What happened besides the operations (sync worker restarts, drain).
    pub notes: Vec<String>,
    pub contract: Contract,
    /// In a (b)-history: what was broken before the repair pass.
    pub before_repair: Vec<Violation>,
    /// What the contract does not allow.
    pub violations: Vec<Violation>,
    /// What one repair pass reported, in a (b)-history.
    pub repair: Vec<String>,
    pub elapsed: Duration,
    /// An operation or the check hung: the server may no longer answer
    /// (see `gate.rs`), so nothing more is run on it.
    pub stuck: bool,
}

impl Outcome {
    pub fn failed(&self) -> bool {
        !self.violations.is_empty()
    }

    /// The invariants broken.
    pub fn invariants(&self) -> BTreeSet<Inv> {
        self.violations.iter().map(|v| v.inv).collect()
    }

    /// The records in the order the operations started.
    pub fn by_start(&self) -> Vec<&Record> {
        let mut r: Vec<&Record> = self.records.iter().collect();
        r.sort_by_key(|r| (r.start, r.worker, r.seq));
        r
    }

    /// How many calls ended each way: (ok, refused, failed).
    pub fn counts(&self) -> (usize, usize, usize) {
        let calls = self.records.iter().filter(|r| !r.op.is_fault());
        let (mut ok, mut refused, mut failed) = (0, 0, 0);
        for r in calls {
            match r.res {
                Res::Ok(_) => ok += 1,
                Res::Refused(_) => refused += 1,
                Res::Failed(_) | Res::TimedOut => failed += 1,
            }
        }
        (ok, refused, failed)
    }
}

pub use super::universe::short_ids;

/// What the history adds to the check of I4.
fn facts(setup: &[(i32, String)], records: &[Record]) -> Facts {
    let mut f = Facts { appended: setup.to_vec(), pulls: super::pulled::Timeline::of(records), ..Facts::default() };
    for r in records {
        match (&r.op, &r.res) {
            (Op::InsertPersonWithTasks { tasks, .. }, Res::Ok(_)) => {
                f.named_by_insert.extend(tasks.iter().map(|t| Bson::ObjectId(Universe::task(*t))))
            }
            // In a session with no transaction a step stands on its own: it
            // may have landed though a later one was refused.
            (op, res)
                if op.steps().iter().any(|s| matches!(s, Op::InsertTaskOwned { .. }))
                    && (matches!(res, Res::Ok(_)) || matches!(op, Op::Session { end: End::NoTxn, .. })) =>
            {
                for step in op.steps() {
                    if let Op::InsertTaskOwned { h, .. } = step {
                        f.owners_named_by_insert.push(Bson::ObjectId(Universe::person(*h)));
                    }
                }
            }
            (Op::InsertTaskOwnedEarly { h, .. }, Res::Ok(_)) => {
                f.owners_named_by_insert.push(Bson::ObjectId(Universe::person(*h)))
            }
            (Op::AppendComment { b, text }, Res::Ok(_)) => f.appended.push((Universe::post(*b), text.clone())),
            (Op::AppendComments { comments }, Res::Ok(_)) => {
                f.appended.extend(comments.iter().map(|(b, text)| (Universe::post(*b), text.clone())))
            }
            (Op::DeletePost { b }, _) => f.posts_deleted.push(Universe::post(*b)),
            (op @ Op::SetPartCopy { .. }, Res::Ok(_)) => f.accepted.push(format!("{op} returned Ok")),
            (op @ Op::PullOneTaskNote { .. }, Res::Ok(said)) if said.starts_with(super::exec::PULLED_OTHERS) => {
                f.accepted.push(format!("{op}: {said}"))
            }
            _ => {}
        }
    }
    f
}

/// Whether `DOCREL_HISTORY_TRACE=1` asks for every operation as it ends (on stderr).
fn trace() -> bool {
    std::env::var("DOCREL_HISTORY_TRACE").is_ok_and(|v| v == "1")
}

/// Runs a history in a database of its own and checks the contract.
/// `Err` is a failure of the harness (no server, setup refused).
pub async fn run(plan: &Plan) -> Result<Outcome, String> {
    let t = TestDb::new(&format!("history_s{}", plan.seed)).await.map_err(|e| e.to_string())?;
    let reaper = Reaper::start(t.db.name()).await?;
    let result = run_in(&t, plan).await;
    if result.as_ref().is_ok_and(|o| o.stuck) {
        // Dropping the database would wait for the stuck server forever.
        std::mem::forget(t);
        return result;
    }
    // The database is dropped while the reaper still runs.
    drop(t);
    drop(reaper);
    result
}

async fn run_in(t: &TestDb, plan: &Plan) -> Result<Outcome, String> {
    let started = Instant::now();
    let db = t.db.clone();
    let mut outcome = Outcome {
        plan: plan.clone(),
        records: Vec::new(),
        notes: Vec::new(),
        contract: Contract::A,
        before_repair: Vec::new(),
        violations: Vec::new(),
        repair: Vec::new(),
        elapsed: Duration::ZERO,
        stuck: false,
    };
    let setup_comments = match set_up(&db, plan).await? {
        Ok(comments) => comments,
        Err(broken) => {
            outcome.notes.push("setup (docrel calls, inline, no faults) already broke the invariants".into());
            outcome.violations = broken;
            outcome.elapsed = started.elapsed();
            return Ok(outcome);
        }
    };
    let t0 = Instant::now();
    let gate = Arc::new(Gate::new(plan.serial_transactions));
    let notes = Arc::new(Mutex::new(Vec::new()));
    let sync = match plan.mode {
        Mode::Deferred => Some(Sync::start(&db, gate.clone(), notes.clone(), t0).await?),
        Mode::Inline => None,
    };
    let progress = Arc::new(AtomicUsize::new(0));
    let local_ops =
        plan.workers.iter().enumerate().filter(|(w, _)| placement(plan, *w).is_some()).map(|(_, o)| o.len());
    let changer = Changer::new(&db, plan, gate.clone(), progress.clone(), local_ops.sum()).await?;
    // The checker's own commands between operations go through it (`monitor.rs`).
    let janitor = process::janitor().await?;
    let workers = run_workers(&db, &janitor, plan, gate, t0, progress);
    let (records, process_notes) = Changer::alongside(changer.as_ref(), workers).await?;
    outcome.notes.extend(process_notes);
    let undeclared = monitor::violations(plan.seed, &records);
    if records.iter().any(|r| r.res == Res::TimedOut) {
        if let Some(sync) = sync {
            sync.abort();
        }
        stopped(&mut outcome, records);
        outcome.violations.extend(undeclared);
        outcome.elapsed = started.elapsed();
        return Ok(outcome);
    }
    let mut liveness = quiesce(&db, &janitor, plan, sync, changer.as_ref()).await?;
    liveness.extend(undeclared);
    outcome.records = records;
    outcome.notes.extend(notes.lock().map(|n| n.clone()).unwrap_or_default());
    for r in &outcome.records {
        if r.end - r.start > SLOW {
            outcome.notes.push(format!("slow ({:.1}s): {r}", (r.end - r.start).as_secs_f64()));
        }
    }
    let facts = facts(&setup_comments, &outcome.records);
    judge_all(&db, &facts, &mut outcome, liveness, changer).await?;
    outcome.elapsed = started.elapsed();
    Ok(outcome)
}

/// The setup of a history, bounded; the comments it appended, or the
/// violations it already left.
async fn set_up(db: &Database, plan: &Plan) -> Result<Result<Vec<(i32, String)>, Vec<Violation>>, String> {
    if trace() {
        eprintln!("seed {}: setup in {}", plan.seed, db.name());
    }
    let setup_comments = tokio::time::timeout(CHECK_TIMEOUT, setup(db, plan.seed))
        .await
        .map_err(|_| format!("setup did not end within {CHECK_TIMEOUT:?}: is the server stuck (see gate.rs)?"))?
        .map_err(|e| format!("setup failed: {e}"))?;
    if trace() {
        eprintln!("seed {}: setup done ({:?}, faults {})", plan.seed, plan.mode, plan.faults);
    }
    let facts0 = Facts { appended: setup_comments.clone(), ..Facts::default() };
    let after_setup = check::check(&Snapshot::read(db).await?, &facts0, &checked(plan));
    Ok(if after_setup.is_empty() { Ok(setup_comments) } else { Err(after_setup) })
}

/// A history an operation of which hung: the server may be stuck for
/// good (see `gate.rs`), so it says which, and nothing more is checked.
fn stopped(outcome: &mut Outcome, records: Vec<Record>) {
    for r in records.iter().filter(|r| r.res == Res::TimedOut) {
        let what = format!(
            "seed {}: w{}#{} {} did not return within {OP_TIMEOUT:?} (the history stopped there)",
            outcome.plan.seed, r.worker, r.seq, r.op
        );
        outcome.violations.push(Violation { inv: Inv::Liveness, what });
    }
    outcome.records = records;
    outcome.stuck = true;
}

/// Quiesces a history: no more faults, the sync worker drained, the rule
/// change completed; what did not end.
async fn quiesce(
    db: &Database,
    janitor: &Client,
    plan: &Plan,
    sync: Option<Sync>,
    changer: Option<&Changer>,
) -> Result<Vec<Violation>, String> {
    if plan.faults {
        // Through a client no fail point targets: the history's own may
        // still take the server for one shutting down (a fault's code 91).
        let off = fail_point(&janitor.database(db.name()), None).await;
        off.map_err(|e| format!("turning the fail point off: {e}"))?;
        reachable(db).await?;
    }
    let mut liveness = Vec::new();
    if let Some(sync) = sync {
        if let Err(e) = sync.drain(db).await {
            liveness.push(Violation { inv: Inv::Liveness, what: e });
        }
    }
    if let Some(changer) = changer {
        changer.finish().await;
    }
    Ok(liveness)
}

/// Waits until the history's client reaches the server again: after a
/// fault's "shutting down" (code 91) the driver selects no server until its
/// monitor has seen it again, which can take longer than one selection
/// waits; the drain, the check and the repair pass would fail meanwhile.
async fn reachable(db: &Database) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match db.run_command(docrel::bson::doc! {"ping": 1}).await {
            Ok(_) => return Ok(()),
            Err(e) if Instant::now() > deadline => return Err(format!("the server stayed unreachable: {e}")),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// Judges a quiesced history ([`judge`], bounded), with its rule change
/// checked before the repair pass when it can be (see `rule_change.rs`).
async fn judge_all(
    db: &Database,
    facts: &Facts,
    outcome: &mut Outcome,
    mut liveness: Vec<Violation>,
    changer: Option<Changer>,
) -> Result<(), String> {
    let seed = outcome.plan.seed;
    let failed = outcome.records.iter().filter(|r| r.res.failed()).map(|r| &r.op);
    let early = match &changer {
        Some(changer) => changer.check_early(seed, failed).await?,
        None => None,
    };
    match tokio::time::timeout(CHECK_TIMEOUT, judge(db, facts, outcome, &mut liveness)).await {
        Ok(judged) => judged?,
        Err(_) => {
            outcome.stuck = true;
            liveness.push(Violation {
                inv: Inv::Liveness,
                what: format!("seed {seed}: the check (and repair) did not end within {CHECK_TIMEOUT:?}"),
            })
        }
    }
    outcome.violations.extend(liveness);
    if let Some(changer) = changer.filter(|_| !outcome.stuck) {
        changer.conclude(seed, early, &mut outcome.violations, &mut outcome.notes).await?;
    }
    Ok(())
}

/// Checks the quiesced database against the contract: (a) as it is, (b)
/// after one repair pass (see the module's head); copies with no version
/// record are noted unless the plan holds them to the contract.
async fn judge(
    db: &Database,
    facts: &Facts,
    outcome: &mut Outcome,
    liveness: &mut Vec<Violation>,
) -> Result<(), String> {
    let failed = outcome.records.iter().any(|r| !r.op.is_fault() && r.res.failed());
    let snapshot = Snapshot::read(db).await?;
    let unrecorded = check::check(&snapshot, facts, &[Inv::Unrecorded]);
    if let Some(first) = unrecorded.first().filter(|_| failed || !outcome.plan.strict_records) {
        outcome.notes.push(format!(
            "{} copies with no version record (--strict-records makes them violations), first: {first}",
            unrecorded.len()
        ));
    }
    if !failed {
        outcome.violations = check::check(&snapshot, facts, &checked(&outcome.plan));
        let pending = check::check(&snapshot, facts, &[Inv::Pending]);
        if let Some(first) = pending.first() {
            // Pending references left at the end: the two-way repair must
            // clear them (it pulls an id whose document does not exist).
            outcome.notes.push(format!("{} pending references at the end, first: {first}", pending.len()));
            let r = docrel::check::inverse::<Person>().repair(db).run().await;
            let r = r.map_err(|e| format!("the two-way repair of pending references failed: {e}"))?;
            outcome.repair.push(format!("two-way repair: dangling {} fixed {}", r.dangling, r.fixed));
            let repaired = Snapshot::read(db).await?;
            let mut which = checked(&outcome.plan);
            which.push(Inv::Pending);
            outcome.violations = check::check(&repaired, facts, &which);
            accept_reported_dangling(db, &mut outcome.violations, &mut outcome.notes).await?;
        }
        return Ok(());
    }
    outcome.contract = Contract::B;
    outcome.before_repair = check::check(&snapshot, facts, CHECKED);
    // I3 holds before the repair when no operation that failed wrote the
    // reviews: the subsets are held to the (a) contract there (a pull or a
    // rename reaching summaries must not need the repair).
    let reviews_failed = outcome.records.iter().any(|r| {
        !r.op.is_fault() && r.res.failed() && entry(&r.op).iter().any(|(g, _)| *g == super::gate::Group::Reviews)
    });
    let early = outcome.before_repair.iter().filter(|v| v.inv == Inv::I3 && !reviews_failed).cloned();
    let early: Vec<Violation> = early.collect();
    match repair_everything(db).await {
        Ok(report) => outcome.repair = report,
        Err(e) => liveness.push(Violation { inv: Inv::Liveness, what: format!("the repair pass failed: {e}") }),
    }
    let repaired = Snapshot::read(db).await?;
    let mut which = CHECKED_AFTER_REPAIR.to_vec();
    which.push(Inv::Pending);
    outcome.violations = check::check(&repaired, facts, &which);
    outcome.violations.extend(early);
    accept_reported_dangling(db, &mut outcome.violations, &mut outcome.notes).await?;
    Ok(())
}

/// Where each worker of `plan` runs: `Some(k)` on client `k` of this
/// process (0: the history's, 1: a second one), `None` in the second process.
pub fn placement(plan: &Plan, w: usize) -> Option<usize> {
    match (w % 2, plan.second_process()) {
        (1, true) => None,
        (k, _) => Some(k),
    }
}

/// Runs the workers of `plan` concurrently, each its operations in order,
/// through the history's gate (see `gate.rs`): the odd ones on a second
/// client, or in a second process when the plan has two; the records of
/// every operation, and notes about the second process. `progress` counts
/// the operations of this process as they end.
async fn run_workers(
    db: &Database,
    janitor: &Client,
    plan: &Plan,
    gate: Arc<Gate>,
    t0: Instant,
    progress: Arc<AtomicUsize>,
) -> Result<(Vec<Record>, Vec<String>), String> {
    // Both on clients that report each operation's commands (`monitor.rs`).
    let ctx = |db| Ctx { db, mode: plan.mode, janitor: janitor.clone() };
    let ctxs = [ctx(connect_like(db.name()).await?), ctx(connect_like(db.name()).await?)];
    let stop = Arc::new(AtomicBool::new(false));
    let records = Arc::new(Mutex::new(Vec::new()));
    let mut workers = Vec::new();
    let mut elsewhere = Vec::new();
    for (w, ops) in plan.workers.iter().enumerate() {
        let Some(k) = placement(plan, w) else {
            elsewhere.push((w, ops.clone()));
            continue;
        };
        let (ctx, ops, records, stop) = (ctxs[k].clone(), ops.clone(), records.clone(), stop.clone());
        let (admission, progress) = (Admission::Local(gate.clone()), progress.clone());
        workers.push(tokio::spawn(async move {
            let sink = |r: Record| {
                progress.fetch_add(1, Ordering::SeqCst);
                if let Ok(mut all) = records.lock() {
                    all.push(r);
                }
            };
            run_worker(&ctx, &admission, w, ops, t0, &stop, sink).await;
        }));
    }
    let mut notes = Vec::new();
    if !elsewhere.is_empty() {
        let child = process::run_child(db, plan, elsewhere, gate.clone(), t0, stop.clone()).await;
        let child = child.inspect_err(|_| stop.store(true, Ordering::SeqCst));
        for w in workers.drain(..) {
            let _ = w.await;
        }
        let child = child?;
        notes.push(child.note);
        records.lock().map_err(|e| e.to_string())?.extend(child.records);
    }
    for w in workers {
        w.await.map_err(|e| format!("a worker panicked: {e}"))?;
    }
    let records = records.lock().map(|r| r.clone()).unwrap_or_default();
    Ok((records, notes))
}

/// Runs the operations of worker `w` in order, each let in by
/// `admission` and bounded by [`OP_TIMEOUT`], handing each record to
/// `sink`; stops early once `stop` is set (an operation hung: the server
/// may be stuck for good, see `gate.rs`).
pub async fn run_worker(
    ctx: &Ctx,
    admission: &Admission,
    w: usize,
    ops: Vec<Op>,
    t0: Instant,
    stop: &AtomicBool,
    sink: impl Fn(Record),
) {
    for (seq, op) in ops.into_iter().enumerate() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let start = t0.elapsed();
        if trace() {
            eprintln!("{:>7.3}.. start   w{w}#{seq:<4} {op}", start.as_secs_f64());
        }
        let guarded = async {
            let _admitted = admission.enter(&op).await;
            let (result, seen) = monitor::watch(exec(ctx, &op)).await;
            // Before the gate lets the groups go (see `monitor.rs`).
            if let Err(e) = monitor::end_open(&ctx.janitor, &seen).await {
                eprintln!("w{w}#{seq}: could not end the transactions {op} may have left open: {e}");
            }
            (result, seen.undeclared(&entry(&op)))
        };
        let (res, undeclared) = match tokio::time::timeout(OP_TIMEOUT, guarded).await {
            Ok((Ok(s), u)) => (Res::Ok(s), u),
            Ok((Err(e), u)) if op.is_fault() => (Res::Refused(e.to_string()), u),
            Ok((Err(e), u)) => (classify(&e), u),
            Err(_) => {
                stop.store(true, Ordering::SeqCst);
                (Res::TimedOut, None)
            }
        };
        let record = Record { worker: w, seq, op, start, end: t0.elapsed(), res, undeclared };
        if trace() {
            eprintln!("{record}");
        }
        sink(record);
    }
}
