//! Making a two-way array one-way (`docrel schema retire`, issue 39's N:M
//! two-way → one-way). Nothing moves: until the side that goes is retired,
//! every process keeps both sides (the old version by its declaration, the
//! new one by adopting the stored inverse), so a reader of either version
//! sees every link. The retirement is listed in the moves document, so
//! every process says in its lease row whether it still declares that
//! side; two leases later, and only when no live process does, the side
//! leaves the stored schema (the new version then writes the kept array
//! alone) and, with `--drop-old`, two leases after that the documents.

use super::holders::holders_now;
use super::retire::RetireReport;
use super::states::{may_retire, Wait};
use crate::error::{Error, Misuse, Result};
use crate::schema::stored::{self, RetiringInverse, StoredType};
use mongodb::bson::DateTime;
use mongodb::Database;
use std::time::Duration;

/// Retires the other side of every two-way array `program` makes one-way
/// (and resumes those listed before); with `drop_old`, removes that side
/// from its documents too. Refused, once every process had a lease to say
/// so, while a live process declares a side; the retirement then stays
/// listed and a later run resumes it. `stop` is asked between steps and
/// pages.
pub async fn make_one_way(
    db: &Database,
    program: &[StoredType],
    drop_old: bool,
    lease: Duration,
    mut stop: impl FnMut() -> bool,
    mut step: impl FnMut(&str),
) -> Result<Vec<RetireReport>> {
    let mut out = Vec::new();
    let listed = listed(db, program, &mut step).await?;
    if listed.is_empty() {
        // A run that failed after its last step left the lease rows.
        super::retire::forget_leases_if_idle(db).await?;
    }
    for mut r in listed {
        let mut report = RetireReport { id: format!("inverse:{}", r.side()), label: r.label(), ..Default::default() };
        if !r.retracted {
            if !two_leases(db, &r, lease, &mut stop, &mut step).await? {
                out.push(report);
                continue;
            }
            no_process_declares(db, &r).await?;
            stored::retract(db, &r.collection, &r.field).await?;
            r = relist(db, RetiringInverse { retracted: true, ..r }).await?;
            step(&format!("{}: `{}` left the stored schema", r.label(), r.side()));
        }
        if drop_old {
            // Every process has read the one-way schema, and none adopts
            // the side any more, before its values go.
            if !two_leases(db, &r, lease, &mut stop, &mut step).await? {
                out.push(report);
                continue;
            }
            no_process_declares(db, &r).await?;
            let (dropped, finished) = super::retire::drop_field(db, &r.collection, &r.field, &mut stop).await?;
            report.dropped = dropped;
            step(&format!("{}: `{}` removed from {dropped} document(s)", r.label(), r.side()));
            if !finished {
                out.push(report);
                continue;
            }
        }
        let rest: Vec<RetiringInverse> =
            stored::load_retiring(db).await?.into_iter().filter(|o| o.side() != r.side()).collect();
        stored::publish_retiring(db, &rest).await?;
        super::retire::forget_leases_if_idle(db).await?;
        stored::obey(db).await?;
        step(&format!("{}: complete", r.label()));
        report.complete = true;
        out.push(report);
    }
    Ok(out)
}

/// The retirements this run carries on: those listed already that
/// `program` agrees with (it links the side's type without the side), and
/// those its declarations imply, listed now.
async fn listed(db: &Database, program: &[StoredType], step: &mut impl FnMut(&str)) -> Result<Vec<RetiringInverse>> {
    let stored_types = stored::load(db).await?;
    let mut listed = stored::load_retiring(db).await?;
    let mut fresh = Vec::new();
    for c in stored::inverses::retirements(&stored_types, program) {
        if listed.iter().any(|r| r.collection == c.target && r.field == c.inverse) {
            continue;
        }
        let since = DateTime::from_millis(super::holders::server_now(db).await?);
        let r = RetiringInverse {
            collection: c.target,
            field: c.inverse,
            kept_collection: c.collection,
            kept_field: c.field,
            retracted: false,
            since,
        };
        step(&format!(
            "{}: announced; every process says within a lease whether it declares `{}`",
            r.label(),
            r.side()
        ));
        fresh.push(r);
    }
    if !fresh.is_empty() {
        listed.extend(fresh);
        stored::publish_retiring(db, &listed).await?;
        stored::obey(db).await?;
    }
    let agrees = |r: &RetiringInverse| {
        program.iter().any(|t| t.collection == r.collection && !t.relations.iter().any(|f| f.field == r.field))
    };
    Ok(listed.into_iter().filter(agrees).collect())
}

/// Publishes `r` in place of its earlier entry, at the server's time.
async fn relist(db: &Database, r: RetiringInverse) -> Result<RetiringInverse> {
    let r = RetiringInverse { since: DateTime::from_millis(super::holders::server_now(db).await?), ..r };
    let mut all = stored::load_retiring(db).await?;
    match all.iter_mut().find(|o| o.side() == r.side()) {
        Some(o) => *o = r.clone(),
        None => all.push(r.clone()),
    }
    stored::publish_retiring(db, &all).await?;
    stored::obey(db).await?;
    Ok(r)
}

/// Waits until `r`'s entry is two leases old (server time): every live
/// process has renewed its row since, or was not writing; `false` when
/// stopped first.
async fn two_leases(
    db: &Database,
    r: &RetiringInverse,
    lease: Duration,
    stop: &mut impl FnMut() -> bool,
    step: &mut impl FnMut(&str),
) -> Result<bool> {
    let needed = i64::try_from((lease * 2).as_millis()).unwrap_or(i64::MAX);
    let mut said = false;
    loop {
        let waited = super::holders::server_now(db).await? - r.since.timestamp_millis();
        if waited >= needed {
            return Ok(true);
        }
        if stop() {
            step("stopped: run `docrel schema retire` again to resume");
            return Ok(false);
        }
        if !said {
            step(&format!("{}: waiting two leases for every process to say what it declares", r.label()));
            said = true;
        }
        let left = Duration::from_millis(u64::try_from(needed - waited).unwrap_or(0));
        tokio::time::sleep(left.min(Duration::from_millis(100))).await;
    }
}

/// Refuses, naming them, while a live process declares the side `r` retires.
async fn no_process_declares(db: &Database, r: &RetiringInverse) -> Result<()> {
    let (holders, _) = holders_now(db).await?;
    match may_retire(&r.side(), &holders) {
        Wait::Holders(declaring) => Err(Error::Invalid {
            what: Misuse::Schema,
            message: format!(
                "`{}` cannot be made one-way yet ({}): {} still declare(s) `{}` and read(s) it; stop them or deploy \
                 the new version, then run `docrel schema retire` again (`docrel schema status` lists them)",
                r.side(),
                if r.retracted { "it left the stored schema, nothing was dropped" } else { "nothing was retracted" },
                declaring.join("; "),
                r.side()
            ),
        }),
        _ => Ok(()),
    }
}
