//! One `update` command of many statements, as the copy writes (refresh,
//! repair, clearing leftovers) and the batched subset rebuilds send it: one
//! round trip for a batch of documents, with refused statements turned into
//! the driver's write error; and the command itself, for the batched bucket
//! appends and counter events, which read the refusals themselves.

use crate::error::{Error, Result};
use crate::store::session::{in_session, Cx};
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::error::{ErrorKind, WriteConcernError, WriteError, WriteFailure};

/// One `update` command (unordered: the statements touch copies of
/// different sources and do not depend on each other); its `nModified`.
pub(crate) async fn send_updates(cx: &mut Cx<'_>, collection: &str, statements: Vec<BsonDoc>) -> Result<u64> {
    let reply = update_command(cx, collection, statements, false).await?;
    // An unordered write reports refused statements in its reply, not as
    // a failed command: turned into the driver's own write error here.
    let failure = match reply.get_array("writeErrors").ok().and_then(|e| e.first()).and_then(Bson::as_document) {
        Some(e) => Some(crate::bson_compat::from_document::<WriteError>(e.clone()).map(WriteFailure::WriteError)),
        None => reply.get_document("writeConcernError").ok().map(|e| {
            crate::bson_compat::from_document::<WriteConcernError>(e.clone()).map(WriteFailure::WriteConcernError)
        }),
    };
    let cause = match failure {
        None => {
            let n = reply.get("nModified").and_then(|n| n.as_i64().or_else(|| n.as_i32().map(i64::from)));
            return Ok(n.unwrap_or(0).max(0) as u64);
        }
        Some(Ok(failure)) => ErrorKind::Write(failure).into(),
        Some(Err(_)) => mongodb::error::Error::custom(format!("the server refused an update: {reply}")),
    };
    Err(Error::driver("update", collection, cause))
}

/// Sends one `update` command of `statements` (`ordered` or not), with
/// the write concern of the database, in the call's session; the server's
/// reply, which reports refused statements rather than failing.
pub(crate) async fn update_command(
    cx: &mut Cx<'_>,
    collection: &str,
    statements: Vec<BsonDoc>,
    ordered: bool,
) -> Result<BsonDoc> {
    let mut command = doc! {"update": collection, "updates": statements, "ordered": ordered};
    // A command run as such gets none of the database's defaults; not in a
    // transaction, where a write concern is refused.
    if let Some(wc) = cx.write_concern().await {
        if let Ok(wc) = crate::bson_compat::to_bson(&wc) {
            command.insert("writeConcern", wc);
        }
    }
    let db = cx.db;
    in_session!(db.run_command(command), cx.session()).map_err(|e| Error::driver("update", collection, e))
}
