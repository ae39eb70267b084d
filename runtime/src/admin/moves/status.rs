//! `docrel schema status`: the moves in progress in a database, where each
//! stands and what its next state waits for, the two-way arrays being made
//! one-way, and the processes holding the schema lease with what each has
//! seen.

use super::holders::Holder;
use super::states::{may_enter, may_retire, Wait};
use crate::error::Result;
use crate::schema::stored::{load_transitions, BuildingInverse, MoveState, RetiringInverse};
use mongodb::Database;
use serde::Serialize;
use std::time::Duration;

/// One move in progress.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MoveStatus {
    /// The move's stable name.
    pub id: String,
    /// `posts.comments → comments`.
    pub label: String,
    /// Its state.
    pub state: MoveState,
    /// Seconds it has been in that state (server time).
    pub for_seconds: f64,
    /// The change running it.
    pub change: String,
    /// What its next state waits for (`None` after the last).
    pub next: Option<(MoveState, Wait)>,
}

/// [`status`]'s answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Status {
    /// The moves in progress.
    pub moves: Vec<MoveStatus>,
    /// The two-way arrays being made one-way, with the live processes
    /// that still declare the side that goes (`docrel schema retire`
    /// waits for them).
    pub retiring: Vec<(RetiringInverse, Wait)>,
    /// The other sides of arrays an online change is making two-way, not
    /// built yet (programs declaring one read it from the arrays).
    pub building: Vec<BuildingInverse>,
    /// The processes that registered a lease while a move ran, newest first.
    pub holders: Vec<Holder>,
}

impl Status {
    /// The status in words, one line each.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        if self.moves.is_empty() && self.retiring.is_empty() && self.building.is_empty() {
            out.push_str("no move in progress\n");
        }
        for b in &self.building {
            out.push_str(&format!(
                "two-way {}.{} ↔ {}.{}: being built (read from `{}.{}` until then)\n",
                b.from_collection, b.from_field, b.collection, b.field, b.from_collection, b.from_field
            ));
        }
        for (r, wait) in &self.retiring {
            let state = if r.retracted { "left the stored schema" } else { "announced" };
            out.push_str(&format!("one-way {}: {state}\n", r.label()));
            if let Wait::Holders(h) = wait {
                out.push_str(&format!("  declared by: {}\n", h.join("; ")));
            }
        }
        for m in &self.moves {
            out.push_str(&format!(
                "move {} {}: {} for {:.1} s (change {})\n",
                short(&m.id),
                m.label,
                m.state,
                m.for_seconds,
                short(&m.change)
            ));
            match &m.next {
                Some((next, Wait::Ready)) => out.push_str(&format!("  next: {next}, ready\n")),
                Some((next, Wait::Time(d))) => {
                    out.push_str(&format!("  next: {next}, in {:.1} s (two leases)\n", d.as_secs_f64()))
                }
                Some((next, Wait::Holders(h))) => {
                    out.push_str(&format!("  next: {next}, once these have seen {}: {}\n", m.state, h.join("; ")))
                }
                None => {}
            }
        }
        for h in &self.holders {
            let seen: Vec<String> = h.seen.iter().map(|(id, s)| format!("{} {s}", short(id))).collect();
            out.push_str(&format!(
                "holder {} (pid {} on {}): lease {} ms, renewed {:.1} s ago{}; seen: {}; links {}\n",
                h.program,
                h.pid,
                h.host,
                h.lease_ms,
                h.age_ms as f64 / 1000.0,
                if h.live { "" } else { " (lapsed)" },
                if seen.is_empty() { "nothing".to_owned() } else { seen.join(", ") },
                links(h)
            ));
        }
        out
    }
}

fn short(id: &str) -> &str {
    &id[..8.min(id.len())]
}

fn links(h: &Holder) -> String {
    let old = h.old_shape.iter().map(|s| format!("old `{s}`"));
    let new = h.new_shape.iter().map(|s| format!("new `{s}`"));
    let all: Vec<String> = old.chain(new).collect();
    if all.is_empty() {
        "neither shape".to_owned()
    } else {
        all.join(", ")
    }
}

/// The moves in progress in `db` and its lease holders; `lease` is the
/// lease the fleet runs with (what the next state waits two of). Rows of
/// processes silent for a day are deleted first.
///
/// ```no_run
/// # async fn f(db: docrel::mongodb::Database) -> docrel::Result<()> {
/// let status = docrel::admin::moves::status(&db, docrel::schema::lease_for(&db)).await?;
/// print!("{}", status.to_text());
/// # Ok(()) }
/// ```
pub async fn status(db: &Database, lease: Duration) -> Result<Status> {
    super::holders::forget_silent(db).await?;
    let (moves, retiring, building) = load_transitions(db).await?;
    let (holders, now) = super::holders::holders_now(db).await?;
    let moves = moves
        .into_iter()
        .map(|m| {
            let elapsed = Duration::from_millis(u64::try_from(now - m.since.timestamp_millis()).unwrap_or(0));
            let next = m.state.next().map(|n| (n, may_enter(&m.spec.id, m.state, elapsed, &holders, lease)));
            MoveStatus {
                id: m.spec.id.clone(),
                label: m.spec.label(),
                state: m.state,
                for_seconds: elapsed.as_secs_f64(),
                change: m.change.clone(),
                next,
            }
        })
        .collect();
    let retiring = retiring.into_iter().map(|r| (r.clone(), may_retire(&r.side(), &holders))).collect();
    Ok(Status { moves, retiring, building, holders })
}
