//! On MongoDB 8.0 and later, the common update of a source (one document by
//! `_id`, `$set` of every field copied from it, stamped with a version)
//! travels with every fan-out it owes in one client-level `bulkWrite`: one
//! round trip for a rename copied into any number of collections, where
//! the other way sends the source's `update` and then one per target path.
//!
//! The statements run in order. The source's comes first, guarded by its
//! version (`_docrel.v < stamp`); each fan-out is guarded by the holders'
//! records (older than the stamp), so the batch is idempotent. When the
//! source's statement matched nothing (the document is gone, or another
//! writer's clock is ahead of this one's) the fan-outs may have written
//! copies at the stamp: the caller then takes the general way, which
//! writes the source at a version past both and fans out again, so every
//! copy ends at a version the source has (a copy of a source that is gone
//! dangles, as after any delete). A statement the server refused is the
//! error it would be on the other way: the source's own (nothing written),
//! or a fan-out's ([`Error::FanOut`], the source and the targets before it
//! written, naming the repair). Any other failure (the connection cut, an
//! answer lost) leaves what was written unknown: the caller takes the
//! other way, whose writes are the same `$set`s at a newer version.

use crate::denormalize::chain::{self, Reach};
use crate::denormalize::copies::{fan_out_model, Values};
use crate::error::{show_id, Error, Result};
use crate::schema::graph::Target;
use crate::store::bulk;
use crate::store::session::Cx;
use mongodb::bson::{Bson, Document as BsonDoc};
use mongodb::options::WriteModel;

/// What a stamped write sent as one `bulkWrite` did.
pub(crate) struct Bulked {
    /// Whether the source's statement matched its document.
    pub(crate) matched: bool,
    /// Whether it changed it.
    pub(crate) modified: u64,
}

/// Sends the stamped update `filter`/`update` of the source `id` in
/// `source` with the fan-outs of `values` to every target, in one
/// `bulkWrite` (the route decided the deployment has one: MongoDB 8.0+ on
/// a client docrel connected); `None` when it had no answer, and the caller
/// goes the other way.
pub(crate) async fn stamped(
    cx: &mut Cx<'_>,
    source: &'static str,
    (filter, update): (BsonDoc, BsonDoc),
    id: &Bson,
    stamp: i64,
    values: &(impl Values + ?Sized),
) -> Result<Option<Bulked>> {
    let targets = cx.graph.targets_of(source);
    let mut models: Vec<WriteModel> = Vec::with_capacity(targets.len() + 1);
    models.push(bulk::update_one(cx, source, filter, update));
    models.extend(targets.iter().map(|target| fan_out_model(cx, target, id, values, stamp)));
    let result = match bulk::send(cx, models).await {
        Ok(result) => result,
        Err(e) => return refused(source, id, targets, e).map(|()| None),
    };
    let counts = |i: usize| result.update_results.get(&i).map_or((0, 0), |r| (r.matched_count, r.modified_count));
    let (matched, modified) = counts(0);
    if matched == 0 {
        return Ok(Some(Bulked { matched: false, modified: 0 }));
    }
    for (i, target) in targets.iter().enumerate() {
        let (_, rewritten) = counts(i + 1);
        crate::client::trace::fanned_out(target.collection, || &target.paths().id, rewritten);
        if rewritten > 0 {
            // Boxed: a chain is rare, and its future would make this one as large.
            Box::pin(chain::follow_source(cx, target, &chain::written(target, id, stamp, values), Reach::All))
                .await
                .map_err(|e| fan_out_error(source, id, target, e))?;
        }
    }
    Ok(Some(Bulked { matched: true, modified }))
}

/// The error of a `bulkWrite` the server answered with refused
/// statements: the source's (nothing of the batch ran after it), or the
/// first refused fan-out's. `Ok` for any other failure: the caller goes
/// the other way, which writes it all again.
fn refused(source: &'static str, id: &Bson, targets: &[Target], e: mongodb::error::Error) -> Result<()> {
    let Some(first) = bulk::first_refused(&e) else { return Ok(()) };
    let Some(target) = first.checked_sub(1).and_then(|k| targets.get(k)) else {
        return Err(Error::driver("update", source, e));
    };
    let done: Vec<&str> = targets[..first - 1].iter().map(|t| t.collection).collect();
    let error = Error::FanOut {
        source_collection: source,
        id: show_id(id),
        target: target.collection,
        path: target.id_path(),
        done: done.join(", "),
        cause: Box::new(Error::driver("bulkWrite", target.collection, e)),
    };
    crate::client::trace::fan_out_failed(&error);
    Err(error)
}

fn fan_out_error(source: &'static str, id: &Bson, target: &Target, cause: Error) -> Error {
    Error::FanOut {
        source_collection: source,
        id: show_id(id),
        target: target.collection,
        path: target.id_path(),
        done: "every target of the bulkWrite".to_owned(),
        cause: Box::new(cause),
    }
}
