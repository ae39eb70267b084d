//! The randomized history checker of issue 12, shared by the CI test
//! (`tests/history.rs`) and the runner (`examples/history.rs`).
//!
//! Like Jepsen drives a database, it drives docrel: several concurrent
//! workers (tokio tasks), each with its own seeded sequence of operations
//! over four small schemas (`schema.rs`): every public write of the
//! repository and the relation handles, every update operator, user
//! sessions with transactions committed or aborted (the kinds in
//! `kinds.rs`, made by `generate.rs`, run by `exec/`; `coverage.rs` reads
//! docrel's sources so that a test fails when a public write is never
//! made), fault injection through `configureFailPoint` and, in some
//! histories, deferred fan-out with a sync worker (`run.rs`,
//! `background.rs`). Transactions run concurrently with the rest (`gate.rs`
//! holds apart only what deadlocks the test server, told by each kind what
//! docrel sends for it and checked against the commands each operation
//! really sends, `monitor.rs`); the odd workers run
//! on a client of their own in a second OS process whose clock is set
//! back (`process.rs`); an operation that hangs stops the history and is
//! reported with its seed. With `--rule-change` (on in CI), a copy rule no
//! binary of the checker declares is added to the stored schema online
//! while both processes write, and sometimes partly removed
//! (`rule_change.rs`). Then it quiesces and checks I1–I5 with the raw driver
//! (`check.rs`) against the contract: no repair when every call returned
//! `Ok`, one repair pass (`repair.rs`) otherwise. A failure prints the
//! seed, the history and the shortest failing history found by shrinking
//! (`shrink.rs`). Kinds that expose a defect issue 27 lists are left out
//! by default (`kinds::KNOWN_GAPS`).
//!
//! Knobs (environment for the test, flags for the runner):
//!
//! | variable | flag | default | meaning |
//! |---|---|---|---|
//! | `DOCREL_HISTORY_SEEDS` | `--seeds` | `4` | a count (`5`: seeds 1..=5), a list (`7,42` or `42,`) or a range (`10..20`) |
//! | `DOCREL_HISTORY_OPS` | `--ops` | `250` | operations per history, over all workers |
//! | `DOCREL_HISTORY_WORKERS` | `--workers` | `3` | concurrent workers (1 to 15) |
//! | `DOCREL_HISTORY_FAULTS` | `--faults` / `--no-faults` | by seed | `1`: fail points on, `0`: off |
//! | `DOCREL_HISTORY_SYNC` | `--sync` / `--no-sync` | by seed | `1`: deferred fan-out with a sync worker |
//! | `DOCREL_HISTORY_SKIP` | `--skip` | none | operation kinds left out (`MovePart,Reassign`) |
//! | `DOCREL_HISTORY_INCLUDE_GAPS` | `--include-gaps` | `0` | `1`: also the kinds of `kinds::KNOWN_GAPS` (defects of issue 27 not fixed yet) |
//! | `DOCREL_HISTORY_STRICT_RECORDS` | `--strict-records` | `0` | `1`: a copy equal to its source with no version record breaks the contract (otherwise counted in the notes) |
//! | `DOCREL_HISTORY_SERIAL_TXN` | `--serial-txn` (= 1), `--concurrent-txn` (= 0) | `1` | `1`: an operation that runs a transaction runs alone; `0`: transactions run concurrently with everything but a plain multi-document write of the same group of collections (a SecantusDB deadlock, see `gate.rs`) |
//! | `DOCREL_HISTORY_PROCESSES` | `--processes` | `2` | `2`: the odd workers run in a second OS process (this binary again); `1`: on a second client of this one |
//! | `DOCREL_HISTORY_SKEW_MS` | `--skew-ms` | `-2000` | the second process's clock, behind (-) or ahead (+), set with libfaketime (`apt-get install libfaketime`; without it, noted and not skewed) |
//! | `DOCREL_HISTORY_SHRINK` | `--shrink` | `40` | shrink attempts per failing seed (`0`: none) |
//! | `DOCREL_HISTORY_SHRINK_SECS` | `--shrink-secs` | `30` | time budget of shrinking, over all seeds |
//! | `DOCREL_HISTORY_TRACE` | `--trace` | `0` | `1`: print every operation as it ends (stderr) |
//! | `DOCREL_HISTORY_RULE_CHANGE` | `--rule-change` / `--no-rule-change` | `1` | `1`: a copy rule no binary compiles is added online (and in some histories removed) while the workers write, in two processes (`rule_change.rs`) |
#![allow(dead_code)]

pub mod background;
pub mod check;
pub mod copies;
pub mod coverage;
pub mod exec;
pub mod gate;
pub mod generate;
pub mod kinds;
pub mod monitor;
pub mod op;
pub mod plan;
pub mod process;
pub mod pulled;
pub mod repair;
pub mod rule_change;
pub mod run;
pub mod schema;
pub mod setup;
pub mod shrink;
pub mod twin;
pub mod universe;

use check::Inv;
use plan::{Mode, OpKind, PlanConfig};
use run::{Contract, Outcome};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// What to run.
#[derive(Clone, Debug)]
pub struct Settings {
    pub seeds: Vec<u64>,
    pub ops: usize,
    pub workers: usize,
    pub faults: Option<bool>,
    pub deferred: Option<bool>,
    pub skip: Vec<OpKind>,
    pub serial_transactions: bool,
    /// 2: a second OS process runs the odd workers.
    pub processes: usize,
    /// The second process's clock skew, ms.
    pub skew_ms: i64,
    /// Generate the kinds of `plan::KNOWN_GAPS` too.
    pub include_gaps: bool,
    /// A copy without a version record breaks the contract (`check::Inv::Unrecorded`).
    pub strict_records: bool,
    /// Change a copy rule online during each history (`rule_change.rs`).
    pub rule_change: bool,
    pub shrink_attempts: usize,
    pub shrink_time: Duration,
}

impl Default for Settings {
    /// The CI size: 4 seeds x 250 operations on 3 workers in 2 processes,
    /// each history changing a copy rule online.
    fn default() -> Self {
        Settings {
            seeds: vec![1, 2, 3, 4],
            ops: 250,
            workers: 3,
            faults: None,
            deferred: None,
            skip: Vec::new(),
            // CI's runs keep transactions alone; `--concurrent-txn` runs
            // them with everything but a plain multi-document write of
            // their group, which deadlocks the embedded server (gate.rs).
            serial_transactions: true,
            processes: 2,
            skew_ms: -2000,
            include_gaps: false,
            strict_records: false,
            rule_change: true,
            shrink_attempts: 40,
            shrink_time: Duration::from_secs(30),
        }
    }
}

/// `5` (seeds 1..=5), `7,42` / `42,` (a list), `10..20` (a range, inclusive).
pub fn parse_seeds(s: &str) -> Result<Vec<u64>, String> {
    let s = s.trim();
    let bad = |e: std::num::ParseIntError| format!("seeds `{s}`: {e} (write `5`, `7,42`, `42,` or `10..20`)");
    if let Some((a, b)) = s.split_once("..") {
        let (a, b): (u64, u64) =
            (a.trim().parse().map_err(bad)?, b.trim().trim_start_matches('=').parse().map_err(bad)?);
        return Ok((a..=b).collect());
    }
    if s.contains(',') {
        return s.split(',').filter(|x| !x.trim().is_empty()).map(|x| x.trim().parse().map_err(bad)).collect();
    }
    let n: u64 = s.parse().map_err(bad)?;
    Ok((1..=n).collect())
}

pub fn parse_skip(s: &str) -> Result<Vec<OpKind>, String> {
    s.split(',')
        .filter(|x| !x.trim().is_empty())
        .map(|x| {
            OpKind::parse(x).ok_or_else(|| {
                let all: Vec<String> = OpKind::ALL.iter().map(|k| format!("{k:?}")).collect();
                format!("unknown operation kind `{x}`; the kinds are {}", all.join(", "))
            })
        })
        .collect()
}

fn parse_bool(name: &str, s: &str) -> Result<bool, String> {
    match s.trim() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        other => Err(format!("{name}={other}: write 0 or 1")),
    }
}

impl Settings {
    /// The defaults, overridden by the `DOCREL_HISTORY_*` variables.
    pub fn from_env() -> Result<Settings, String> {
        let mut s = Settings::default();
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let number = |name: &str, v: String| v.trim().parse::<usize>().map_err(|e| format!("{name}={v}: {e}"));
        if let Some(v) = var("DOCREL_HISTORY_SEEDS") {
            s.seeds = parse_seeds(&v)?;
        }
        if let Some(v) = var("DOCREL_HISTORY_OPS") {
            s.ops = number("DOCREL_HISTORY_OPS", v)?;
        }
        if let Some(v) = var("DOCREL_HISTORY_WORKERS") {
            s.workers = number("DOCREL_HISTORY_WORKERS", v)?;
        }
        if let Some(v) = var("DOCREL_HISTORY_FAULTS") {
            s.faults = Some(parse_bool("DOCREL_HISTORY_FAULTS", &v)?);
        }
        if let Some(v) = var("DOCREL_HISTORY_SYNC") {
            s.deferred = Some(parse_bool("DOCREL_HISTORY_SYNC", &v)?);
        }
        if let Some(v) = var("DOCREL_HISTORY_SKIP") {
            s.skip = parse_skip(&v)?;
        }
        if let Some(v) = var("DOCREL_HISTORY_SERIAL_TXN") {
            s.serial_transactions = parse_bool("DOCREL_HISTORY_SERIAL_TXN", &v)?;
        }
        if let Some(v) = var("DOCREL_HISTORY_PROCESSES") {
            s.processes = number("DOCREL_HISTORY_PROCESSES", v)?;
        }
        if let Some(v) = var("DOCREL_HISTORY_SKEW_MS") {
            s.skew_ms = v.trim().parse().map_err(|e| format!("DOCREL_HISTORY_SKEW_MS={v}: {e}"))?;
        }
        if let Some(v) = var("DOCREL_HISTORY_INCLUDE_GAPS") {
            s.include_gaps = parse_bool("DOCREL_HISTORY_INCLUDE_GAPS", &v)?;
        }
        if let Some(v) = var("DOCREL_HISTORY_STRICT_RECORDS") {
            s.strict_records = parse_bool("DOCREL_HISTORY_STRICT_RECORDS", &v)?;
        }
        if let Some(v) = var("DOCREL_HISTORY_RULE_CHANGE") {
            s.rule_change = parse_bool("DOCREL_HISTORY_RULE_CHANGE", &v)?;
        }
        if let Some(v) = var("DOCREL_HISTORY_SHRINK") {
            s.shrink_attempts = number("DOCREL_HISTORY_SHRINK", v)?;
        }
        if let Some(v) = var("DOCREL_HISTORY_SHRINK_SECS") {
            s.shrink_time = Duration::from_secs(number("DOCREL_HISTORY_SHRINK_SECS", v)? as u64);
        }
        Ok(s)
    }

    fn plan_config(&self, seed: u64) -> PlanConfig {
        PlanConfig {
            seed,
            ops: self.ops,
            workers: self.workers,
            faults: self.faults,
            deferred: self.deferred,
            skip: self.skip.clone(),
            serial_transactions: self.serial_transactions,
            processes: self.processes,
            skew_ms: self.skew_ms,
            include_gaps: self.include_gaps,
            strict_records: self.strict_records,
            rule_change: self.rule_change,
        }
    }
}

/// The line that runs one seed again, exactly.
pub fn rerun_line(s: &Settings, o: &Outcome) -> String {
    let mut line = format!(
        "DOCREL_HISTORY_SEEDS={}, DOCREL_HISTORY_OPS={} DOCREL_HISTORY_WORKERS={} DOCREL_HISTORY_FAULTS={} \
         DOCREL_HISTORY_SYNC={}",
        o.plan.seed,
        s.ops,
        s.workers,
        u8::from(o.plan.faults),
        u8::from(o.plan.mode == Mode::Deferred)
    );
    if s.serial_transactions {
        line.push_str(" DOCREL_HISTORY_SERIAL_TXN=1");
    }
    let _ = write!(line, " DOCREL_HISTORY_PROCESSES={} DOCREL_HISTORY_SKEW_MS={}", s.processes, s.skew_ms);
    if s.include_gaps {
        line.push_str(" DOCREL_HISTORY_INCLUDE_GAPS=1");
    }
    if s.strict_records {
        line.push_str(" DOCREL_HISTORY_STRICT_RECORDS=1");
    }
    let _ = write!(line, " DOCREL_HISTORY_RULE_CHANGE={}", u8::from(o.plan.rule_change.is_some()));
    if !s.skip.is_empty() {
        let skip: Vec<String> = s.skip.iter().map(|k| format!("{k:?}")).collect();
        let _ = write!(line, " DOCREL_HISTORY_SKIP={}", skip.join(","));
    }
    line.push_str(" cargo test -p docrel --test history -- --nocapture");
    line
}

/// One line about a history.
pub fn summary(o: &Outcome) -> String {
    let (ok, refused, failed) = o.counts();
    let verdict = if o.failed() {
        let invs: Vec<String> = o.invariants().iter().map(|i| format!("{i:?}")).collect();
        format!("FAILED {} ({} violations)", invs.join(" "), o.violations.len())
    } else {
        "ok".to_owned()
    };
    format!(
        "seed {:>4} {:?} faults {} workers {} processes {} txn {} ops {:>4} (ok {ok}, refused {refused}, failed \
         {failed}) contract ({}){} {:.1}s: {verdict}",
        o.plan.seed,
        o.plan.mode,
        if o.plan.faults { "on " } else { "off" },
        o.plan.workers.len(),
        if o.plan.second_process() { 2 } else { 1 },
        if o.plan.serial_transactions { "serial" } else { "concurrent" },
        o.plan.len(),
        if o.contract == Contract::A { "a" } else { "b" },
        rule_change::describe(o.plan.rule_change),
        o.elapsed.as_secs_f64()
    )
}

/// Everything about a history: violations, notes, the operations by start
/// time (ids shown by name: `P3` part 3, `T5` task 5, ...).
pub fn describe(o: &Outcome, max_lines: usize) -> String {
    let mut out = String::new();
    match o.contract {
        Contract::A => {
            let _ = writeln!(
                out,
                "contract (a): every call returned Ok or was refused; checked without repair: {:?}",
                run::checked(&o.plan)
            );
        }
        Contract::B => {
            let _ = writeln!(
                out,
                "contract (b): some call failed; checked after one repair pass: {:?}",
                run::CHECKED_AFTER_REPAIR
            );
            let before: BTreeSet<Inv> = o.before_repair.iter().map(|v| v.inv).collect();
            let _ = writeln!(out, "  before repair: {} violations of {before:?}", o.before_repair.len());
            for r in &o.repair {
                let _ = writeln!(out, "  {r}");
            }
        }
    }
    let _ = writeln!(out, "violations ({}):", o.violations.len());
    for v in o.violations.iter().take(25) {
        let _ = writeln!(out, "  {}", run::short_ids(&v.to_string()));
    }
    if o.violations.len() > 25 {
        let _ = writeln!(out, "  ... {} more", o.violations.len() - 25);
    }
    for n in &o.notes {
        let _ = writeln!(out, "note: {}", run::short_ids(n));
    }
    let records = o.by_start();
    let _ = writeln!(out, "history ({} ops, by start time; [start..end] seconds, worker#seq):", records.len());
    let shown = records.len().min(max_lines);
    for r in &records[..shown] {
        let known = r.op.kind().known_issue().map(|k| format!("   [known {k}]")).unwrap_or_default();
        let _ = writeln!(out, "  {r}{known}");
    }
    if records.len() > shown {
        let _ = writeln!(out, "  ... {} more (the whole history is in the file named below)", records.len() - shown);
    }
    out
}

/// A shrunk history on one line, with the first violation of `inv`:
/// `w0 RenamePart(..) -> Ok; w1 ... => I1: ...`.
pub fn one_line(o: &Outcome, inv: Inv) -> String {
    let ops: Vec<String> = o.by_start().iter().map(|r| format!("w{} {} -> {}", r.worker, r.op, r.res)).collect();
    let ops = if ops.is_empty() { "(no operation: setup alone)".to_owned() } else { ops.join("; ") };
    match o.violations.iter().find(|v| v.inv == inv) {
        Some(v) => format!("{ops} => {}", run::short_ids(&v.to_string())),
        None => ops,
    }
}

/// A seed's result, with the shortest failing history found per invariant.
#[derive(Debug)]
pub struct SeedReport {
    pub outcome: Outcome,
    pub shrunk: Vec<(Inv, Outcome)>,
}

/// Runs every seed of `s`, printing a line per history and, for a failure,
/// the history, how to run it again and its shrunk form.
pub async fn run_all(s: &Settings) -> Result<Vec<SeedReport>, String> {
    let started = Instant::now();
    let mut reports = Vec::new();
    let mut shrink_left = s.shrink_time;
    for &seed in &s.seeds {
        let plan = plan::generate(&s.plan_config(seed));
        let outcome = run::run(&plan).await.map_err(|e| format!("seed {seed}: {e}"))?;
        println!("{}", summary(&outcome));
        if !outcome.failed() {
            for n in &outcome.notes {
                println!("  note: {n}");
            }
        }
        let mut shrunk = Vec::new();
        if outcome.stuck {
            let rest: Vec<String> = s.seeds.iter().skip_while(|k| **k != seed).skip(1).map(u64::to_string).collect();
            println!("{}", describe(&outcome, 300));
            println!(
                "seed {seed} left the server stuck (see tests/history/gate.rs): restart it; seeds not run: {}",
                if rest.is_empty() { "none".to_owned() } else { rest.join(",") }
            );
            reports.push(SeedReport { outcome, shrunk });
            break;
        }
        if outcome.failed() {
            let full = format!("{}\n{}", summary(&outcome), describe(&outcome, usize::MAX));
            let file = std::env::temp_dir().join(format!("docrel-history-seed-{seed}.txt"));
            let saved = std::fs::write(&file, &full).is_ok();
            println!("---- seed {seed} ----\n{}", describe(&outcome, 300));
            if saved {
                println!("the whole history: {}", file.display());
            }
            println!("run it again: {}", rerun_line(s, &outcome));
            // One shrink per invariant broken, each keeping only that one.
            for inv in outcome.invariants() {
                if s.shrink_attempts == 0 || shrink_left.is_zero() {
                    break;
                }
                let t = Instant::now();
                let budget = shrink::Budget { attempts: s.shrink_attempts, time: shrink_left };
                println!("shrinking seed {seed} for {inv:?}:");
                let small = shrink::shrink(&outcome, inv, budget).await;
                shrink_left = shrink_left.saturating_sub(t.elapsed());
                println!("shortest history found for seed {seed} that breaks {inv:?} ({} ops):", small.plan.len());
                println!("{}", summary(&small));
                println!("{}", describe(&small, 300));
                println!("in one line: {}", one_line(&small, inv));
                shrunk.push((inv, small));
            }
            println!("---- end of seed {seed} ----");
        }
        reports.push(SeedReport { outcome, shrunk });
    }
    println!("{} histories in {:.1}s", reports.len(), started.elapsed().as_secs_f64());
    Ok(reports)
}

/// What failed, for an assertion message: seed, invariants, shrunk history.
pub fn failures(reports: &[SeedReport]) -> Vec<String> {
    reports
        .iter()
        .filter(|r| r.outcome.failed())
        .map(|r| {
            let invs: Vec<String> = r.outcome.invariants().iter().map(|i| format!("{i:?}")).collect();
            let mut line = format!("seed {} broke {}.", r.outcome.plan.seed, invs.join(" "));
            for (inv, small) in &r.shrunk {
                let _ = write!(line, "\n  {inv:?} shrunk to: {}", one_line(small, *inv));
            }
            line
        })
        .collect()
}
