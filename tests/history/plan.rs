//! A history: its mode, its faults and the operations of each worker,
//! generated from its seed (one random sequence per worker, all derived
//! from the history's seed; `generate.rs` makes each operation).

pub use super::kinds::OpKind;
pub use super::op::*;

use super::generate;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Ids a history can name: setup creates the first few of each, operations
/// pick among all of them (so inserts both collide and re-create deleted ids).
pub const PARTS: usize = 14;
pub const PRODUCTS: usize = 6;
pub const PEOPLE: usize = 5;
pub const TASKS: usize = 10;
pub const ITEMS: usize = 3;
pub const REVIEWS: usize = 40;
pub const POSTS: usize = 2;

/// Workers are numbered below this (the number is part of unique dates).
pub const MAX_WORKERS: usize = 15;

/// A date no other operation of the history uses: a random coarse part and
/// a fine part unique to (worker, op, k-th date of the op), so orders
/// interleave but never tie (for up to 15,000 operations per worker).
pub fn unique_date(rng: &mut ChaCha8Rng, worker: usize, seq: usize, k: usize) -> i64 {
    let coarse: i64 = rng.random_range(0..1000);
    BASE_DATE_MS + coarse * 1_000_000 + ((seq * 4 + k) * 16 + worker) as i64
}

/// How derived data is kept in a history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Mode {
    /// Inline fan-out; each rename picks inline or transactional at random.
    Inline,
    /// Every repository in `deferred_fan_out()` mode, a `SyncWorker`
    /// following the change stream (restarted when it stops).
    Deferred,
}

/// A history to run: the operations of each worker, in order.
#[derive(Clone, Debug)]
pub struct Plan {
    pub seed: u64,
    pub mode: Mode,
    pub faults: bool,
    /// Operations that run a transaction run alone (see `PlanConfig`).
    pub serial_transactions: bool,
    /// 2: the odd workers run in a second OS process (see `PlanConfig`).
    pub processes: usize,
    /// The second process's clock, ahead (+) or behind (-), in ms.
    pub skew_ms: i64,
    /// A copy without a version record breaks the contract (see `PlanConfig`).
    pub strict_records: bool,
    /// A rule of derived data added online during the history (see `rule_change.rs`).
    pub rule_change: Option<RuleChange>,
    pub workers: Vec<Vec<Op>>,
}

/// When a history's rule change runs, in thousandths of the operations
/// this process runs (the first process: the one running the change).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleChange {
    /// The change adding the rule starts once this many have ended.
    pub start: usize,
    /// In some histories, a second change removes the rule again, once this
    /// many have ended (and the first change completed).
    pub remove: Option<usize>,
    /// In some histories the rule is published (as a program publishing at
    /// start-up would) before the change runs: the change must still
    /// backfill what writers did without it (issue 38, review 2).
    pub published_first: bool,
}

impl Plan {
    /// How many operations it holds.
    pub fn len(&self) -> usize {
        self.workers.iter().map(Vec::len).sum()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the odd workers run in a second OS process: with two
    /// processes asked, when transactions run concurrently, or in a history
    /// changing a rule (whose point is a process that learns it only from
    /// the store; the parent's gate, serial guard included, admits the
    /// child's operations too).
    pub fn second_process(&self) -> bool {
        self.processes >= 2 && (!self.serial_transactions || self.rule_change.is_some())
    }
}

/// The knobs of a history's generation.
#[derive(Clone, Debug)]
pub struct PlanConfig {
    pub seed: u64,
    /// Operations in all (spread over the workers).
    pub ops: usize,
    pub workers: usize,
    /// `None`: decided by the seed (half the histories).
    pub faults: Option<bool>,
    /// `None`: decided by the seed (a third of the histories are deferred).
    pub deferred: Option<bool>,
    pub skip: Vec<OpKind>,
    /// Run each operation that uses a transaction alone, no other operation
    /// of the history overlapping it (the old default). Otherwise
    /// transactions run concurrently with everything but a plain write of
    /// the same group of collections, which deadlocks SecantusDB for good
    /// (see `gate.rs`); against a real `mongod` nothing needs to be held.
    pub serial_transactions: bool,
    /// 1: every worker in this process (the odd ones on a second client);
    /// 2: the odd workers in a second OS process (not with serial
    /// transactions, whose gate is this process's).
    pub processes: usize,
    /// The second process's clock skew in ms (libfaketime; 0: none).
    pub skew_ms: i64,
    /// Generate the `kinds::KNOWN_GAPS` too (left out by default).
    pub include_gaps: bool,
    /// Check [`super::check::Inv::Unrecorded`] in histories with no failed
    /// call (otherwise such copies are only counted in the notes).
    pub strict_records: bool,
    /// Change a rule of derived data online during the history
    /// (`rule_change.rs`), at a point drawn from the seed.
    pub rule_change: bool,
}

/// The history of a seed: its mode and faults, then each worker's
/// sequence from a generator of its own (seeded by the seed and the worker).
pub fn generate(cfg: &PlanConfig) -> Plan {
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let faults = cfg.faults.unwrap_or_else(|| rng.random_bool(0.5));
    let deferred = cfg.deferred.unwrap_or_else(|| rng.random_bool(1.0 / 3.0));
    let mode = if deferred { Mode::Deferred } else { Mode::Inline };
    let workers = cfg.workers.clamp(1, MAX_WORKERS);
    let kinds: Vec<OpKind> = OpKind::ALL
        .iter()
        .copied()
        .filter(|k| !cfg.skip.contains(k) && (cfg.include_gaps || !k.is_gap()))
        .filter(|k| faults || !matches!(k, OpKind::FaultOn | OpKind::FaultOff))
        .collect();
    let per_worker = |w: usize| cfg.ops / workers + usize::from(w < cfg.ops % workers);
    let sequences = (0..workers)
        .map(|w| {
            let mut rng =
                ChaCha8Rng::seed_from_u64(cfg.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(w as u64 + 1));
            (0..per_worker(w)).map(|i| generate::one(&mut rng, &kinds, mode, w, i)).collect()
        })
        .collect();
    Plan {
        seed: cfg.seed,
        mode,
        faults,
        serial_transactions: cfg.serial_transactions,
        processes: cfg.processes,
        skew_ms: cfg.skew_ms,
        strict_records: cfg.strict_records,
        rule_change: cfg.rule_change.then(|| rule_change(cfg.seed)),
        workers: sequences,
    }
}

/// The seed's rule change, from a generator of its own (so that turning
/// it on changes nothing else of the history): a start between 5% and 30%
/// of the operations, and in a third of the histories a removal after 30%
/// more.
fn rule_change(seed: u64) -> RuleChange {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x7275_6c65);
    let start = rng.random_range(50..=300);
    let remove = rng.random_bool(1.0 / 3.0).then(|| rng.random_range(start + 300..=900));
    let published_first = rng.random_bool(0.5);
    RuleChange { start, remove, published_first }
}
