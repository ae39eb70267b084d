//! Shrinking a failing history: re-run it with fewer operations and keep
//! any smaller one that still breaks one of the same invariants. First the
//! operations of all workers in the order they started, on one worker (a
//! concurrent failure that also happens sequentially is deterministic from
//! then on), then without each worker, then delta debugging over the
//! operations (remove chunks of halves, quarters, ...). Concurrency makes a
//! run nondeterministic, so attempts and time are bounded and the result
//! is the shortest failing history found, not a proven minimum.

use super::check::Inv;
use super::plan::{Op, Plan};
use super::run::{run, Outcome};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// How much shrinking may cost.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    pub attempts: usize,
    pub time: Duration,
}

struct Shrinker {
    target: BTreeSet<Inv>,
    budget: Budget,
    started: Instant,
    attempts: usize,
}

impl Shrinker {
    fn exhausted(&self) -> bool {
        self.attempts >= self.budget.attempts || self.started.elapsed() >= self.budget.time
    }

    /// Runs `plan`; the outcome when it breaks one of the target invariants.
    async fn attempt(&mut self, plan: Plan) -> Option<Outcome> {
        if self.exhausted() {
            return None;
        }
        self.attempts += 1;
        match run(&plan).await {
            Ok(o) if o.stuck => {
                println!("  shrink attempt {}: the server got stuck; shrinking stops", self.attempts);
                self.attempts = self.budget.attempts;
                None
            }
            Ok(o) if o.invariants().iter().any(|i| self.target.contains(i)) => {
                println!(
                    "  shrink attempt {}: {} ops on {} worker(s) still fails {:?}",
                    self.attempts,
                    plan.len(),
                    plan.workers.len(),
                    o.invariants()
                );
                Some(o)
            }
            Ok(_) => None,
            Err(e) => {
                println!("  shrink attempt {}: harness error {e}", self.attempts);
                None
            }
        }
    }
}

/// The operations of `plan` as (worker, op) pairs, worker by worker.
fn flatten(plan: &Plan) -> Vec<(usize, Op)> {
    plan.workers.iter().enumerate().flat_map(|(w, ops)| ops.iter().cloned().map(move |op| (w, op))).collect()
}

fn unflatten(like: &Plan, ops: &[(usize, Op)]) -> Plan {
    let mut workers: Vec<Vec<Op>> = vec![Vec::new(); like.workers.len()];
    for (w, op) in ops {
        workers[*w].push(op.clone());
    }
    workers.retain(|w| !w.is_empty());
    if workers.is_empty() {
        workers.push(Vec::new());
    }
    Plan { workers, ..like.clone() }
}

/// The shortest history found from `first` that still breaks `inv`
/// (`first` itself when nothing smaller does within the budget).
pub async fn shrink(first: &Outcome, inv: Inv, budget: Budget) -> Outcome {
    let mut s = Shrinker { target: [inv].into_iter().collect(), budget, started: Instant::now(), attempts: 0 };
    let mut best = first.clone();
    if best.plan.is_empty() {
        return best;
    }

    // 1. Sequential: every operation in the order it started, one worker.
    if best.plan.workers.len() > 1 {
        let ops: Vec<Op> = best.by_start().into_iter().map(|r| r.op.clone()).collect();
        let plan = Plan { workers: vec![ops], ..best.plan.clone() };
        if let Some(o) = s.attempt(plan).await {
            best = o;
        }
    }
    // 2. Without a whole worker.
    let mut w = 0;
    while best.plan.workers.len() > 1 && w < best.plan.workers.len() && !s.exhausted() {
        let mut plan = best.plan.clone();
        plan.workers.remove(w);
        match s.attempt(plan).await {
            Some(o) => best = o,
            None => w += 1,
        }
    }
    // 3. Delta debugging over the operations.
    let mut n = 2usize;
    loop {
        let ops = flatten(&best.plan);
        if ops.len() < 2 || s.exhausted() {
            break;
        }
        let n_now = n.min(ops.len());
        let chunk = ops.len().div_ceil(n_now);
        let mut reduced = false;
        for start in (0..ops.len()).step_by(chunk) {
            let mut rest = ops.clone();
            rest.drain(start..(start + chunk).min(ops.len()));
            if let Some(o) = s.attempt(unflatten(&best.plan, &rest)).await {
                best = o;
                n = (n_now - 1).max(2);
                reduced = true;
                break;
            }
            if s.exhausted() {
                break;
            }
        }
        if !reduced {
            if n_now >= ops.len() {
                break;
            }
            n = (n_now * 2).min(ops.len());
        }
    }
    // A single failing operation may still fail with none at all (setup).
    if best.plan.len() == 1 && !s.exhausted() {
        if let Some(o) = s.attempt(unflatten(&best.plan, &[])).await {
            best = o;
        }
    }
    println!("  shrink: {} attempts in {:.1}s", s.attempts, s.started.elapsed().as_secs_f64());
    best
}
