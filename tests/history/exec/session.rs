//! A user's session: a few docrel calls, each given the session with
//! `.session(&mut s)`, in a transaction that is committed or aborted, or
//! in none. Derived data must be true after either end: an aborted
//! transaction leaves nothing, a committed one everything.

use super::{call, Ctx};
use crate::history::op::{End, Op};
use docrel::Error;

/// What a session's error says when its transaction was aborted after a
/// step failed (see [`super::classify`]).
pub const ABORTED: &str = "history: transaction aborted";

/// Runs `steps` in one session ending as `end`. A step that fails in a
/// transaction aborts it (as docrel asks: some of the write may be in it)
/// and its error is the session's; without a transaction the steps before
/// it stand.
pub async fn run(c: &Ctx, steps: &[Op], end: End) -> docrel::Result<String> {
    let driver = |what: &'static str| move |e| Error::driver(what, "", e);
    let mut s = c.db.client().start_session().await.map_err(driver("startSession"))?;
    let txn = end != End::NoTxn;
    if txn {
        s.start_transaction().await.map_err(driver("startTransaction"))?;
    }
    let mut done = Vec::new();
    for (k, step) in steps.iter().enumerate() {
        match call(c, step, Some(&mut s)).await {
            Ok(r) => done.push(format!("{k}: {r}")),
            Err(e) if txn => {
                s.abort_transaction().await.map_err(driver("abortTransaction"))?;
                // Aborted: nothing of the transaction stands, so derived
                // data must be true with no repair (the history stays (a)).
                return Err(Error::Invalid {
                    what: docrel::Misuse::Application(ABORTED),
                    message: format!("step {k} ({step}) failed, the transaction was aborted: {e}"),
                });
            }
            Err(e) => return Err(e),
        }
    }
    match end {
        End::Commit => s.commit_transaction().await.map_err(driver("commitTransaction"))?,
        End::Abort => s.abort_transaction().await.map_err(driver("abortTransaction"))?,
        End::NoTxn => {}
    }
    Ok(format!("{end:?} [{}]", done.join("; ")))
}
