//! Retiring the old shape of a switched move (`docrel schema retire`):
//! refused while a live process links the old array; then `retired` (the
//! mirrors stop), the old array's rule removed from the stored schema,
//! with `--drop-old` the array itself removed from every parent once every
//! holder has seen `retired`, and the move completed: its entry, marks and
//! lease rows go, and a database without moves is format 1 again.

use super::run::{enter, reached, record, wait_for};
use super::states::{may_retire, Wait};
use crate::error::{Error, Misuse, Result};
use crate::schema::stored::{self, ActiveMove, MoveState, StoredMove};
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::Database;
use serde::Serialize;
use std::time::Duration;

/// What retiring did to one move.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RetireReport {
    /// The move's id.
    pub id: String,
    /// `posts.comments → comments`.
    pub label: String,
    /// Whether the move is complete: its old shape no longer kept (and,
    /// with `--drop-old`, removed).
    pub complete: bool,
    /// Whether it was complete before this run.
    pub already: bool,
    /// Parents whose old array this run removed (`--drop-old`).
    pub dropped: u64,
}

/// Parents per page of the removal of the old array.
const PAGE: i64 = 500;

/// Retires the old shape of each of `moves` (each must be `switched`);
/// with `drop_old`, removes the old arrays too. Refused, with nothing
/// written, while a live lease holder links an old array. `stop` is asked
/// between steps and pages; a stopped run resumes when run again.
pub async fn retire(
    db: &Database,
    moves: &[StoredMove],
    drop_old: bool,
    lease: Duration,
    mut stop: impl FnMut() -> bool,
    mut step: impl FnMut(&str),
) -> Result<Vec<RetireReport>> {
    let mut out = Vec::new();
    for mv in moves {
        let mut report = RetireReport { id: mv.id.clone(), label: mv.label(), ..RetireReport::default() };
        if reached(db, mv, "complete").await? {
            step(&format!("{}: retired already", mv.label()));
            report.complete = true;
            report.already = true;
            out.push(report);
            continue;
        }
        let active = retiring(db, mv).await?;
        let back = active.spec.kind.is_back();
        // The stored schema stops listing the array (for a move back, the
        // old documents' parent reference): no process follows it.
        match back {
            true => stored::retract(db, &active.spec.to.collection, &active.spec.parent_field).await?,
            false => stored::retract(db, &active.spec.from.collection, &active.field).await?,
        };
        if drop_old {
            // Every holder stopped writing the array before it goes.
            if !wait_for(db, &active, lease, &mut stop, &mut step).await? {
                step("stopped: run `docrel schema retire` again to resume");
                out.push(report);
                continue;
            }
            let (dropped, finished) = match back {
                true => super::back::drop_documents(db, &active.spec).await?,
                false => drop_field(db, &active.spec.from.collection, &active.field, &mut stop).await?,
            };
            report.dropped = dropped;
            step(&format!("{}: the old array removed from {dropped} parent(s)", mv.label()));
            if !finished {
                step("stopped: run `docrel schema retire --drop-old` again to resume");
                out.push(report);
                continue;
            }
        }
        complete(db, &active).await?;
        step(&format!("{}: complete", mv.label()));
        report.complete = true;
        out.push(report);
    }
    Ok(out)
}

/// The move in `retired`: entered now when it is `switched` and no live
/// process links the old array; refused otherwise.
async fn retiring(db: &Database, mv: &StoredMove) -> Result<ActiveMove> {
    let refused = |why: String| Error::Invalid {
        what: Misuse::Schema,
        message: format!("the old shape of {} cannot be retired, nothing was written: {why}", mv.label()),
    };
    let Some(active) = stored::load_moves(db).await?.into_iter().find(|m| m.spec.id == mv.id) else {
        return Err(refused(
            "the move is not under way; `docrel schema apply --file <export>` takes it to switched first".into(),
        ));
    };
    match active.state {
        MoveState::Retired => Ok(active),
        MoveState::Switched => {
            let from = match mv.kind.is_back() {
                true => mv.to.collection.clone(),
                false => format!("{}.{}", mv.from.collection, mv.from.rust_field.as_deref().unwrap_or_default()),
            };
            let (holders, _) = super::holders::holders_now(db).await?;
            if let Wait::Holders(linking) = may_retire(&from, &holders) {
                return Err(refused(format!(
                    "{} still run(s) the old version; retire once they are gone (`docrel schema status` lists them)",
                    linking.join("; ")
                )));
            }
            enter(db, active, MoveState::Retired).await
        }
        state => Err(refused(format!(
            "the move is {state}; `docrel schema apply --file <export>` takes it to switched first"
        ))),
    }
}

/// Removes `field` (and its copies' version records) from every document
/// of `collection`, a page at a time; answers the documents changed and
/// whether it finished (`false`: stopped).
pub(super) async fn drop_field(
    db: &Database,
    collection: &str,
    field: &str,
    stop: &mut impl FnMut() -> bool,
) -> Result<(u64, bool)> {
    let parents = db.collection::<BsonDoc>(collection);
    let failed = |op: &'static str| move |e| Error::driver(op, collection.to_owned(), e);
    let mut dropped = 0;
    loop {
        if stop() {
            return Ok((dropped, false));
        }
        let page: Vec<Bson> = {
            use futures::TryStreamExt;
            let found = parents
                .find(doc! {field: {"$exists": true}})
                .projection(doc! {"_id": 1})
                .sort(doc! {"_id": 1})
                .limit(PAGE)
                .await
                .map_err(failed("find"))?;
            let docs: Vec<BsonDoc> = found.try_collect().await.map_err(failed("find"))?;
            docs.into_iter().filter_map(|d| d.get("_id").cloned()).collect()
        };
        if page.is_empty() {
            return Ok((dropped, true));
        }
        let unset = doc! {"$unset": {field: "", format!("_docrel.copies.{field}"): ""}};
        let done = parents.update_many(doc! {"_id": {"$in": page}}, unset).await.map_err(failed("update"))?;
        dropped += done.modified_count;
    }
}

/// Deletes the lease rows once nothing is moving or retiring: no process
/// writes one then.
pub(super) async fn forget_leases_if_idle(db: &Database) -> Result<()> {
    let (moves, retiring, _) = stored::load_transitions(db).await?;
    if moves.is_empty() && retiring.is_empty() {
        let leases = stored::LEASES_COLLECTION;
        db.collection::<BsonDoc>(leases).delete_many(doc! {}).await.map_err(|e| Error::driver("delete", leases, e))?;
    }
    Ok(())
}

/// Ends the move: its entry leaves the published moves, its marks go, and
/// with nothing left moving or retiring the lease rows go too.
async fn complete(db: &Database, active: &ActiveMove) -> Result<()> {
    let rest: Vec<ActiveMove> =
        stored::load_moves(db).await?.into_iter().filter(|m| m.spec.id != active.spec.id).collect();
    stored::publish_moves(db, &rest).await?;
    super::run::forget_marks(db, &active.spec).await?;
    forget_leases_if_idle(db).await?;
    record(db, &active.spec, "complete").await?;
    stored::obey(db).await?;
    Ok(())
}
