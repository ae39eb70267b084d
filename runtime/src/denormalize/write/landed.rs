//! How much of an ordered insert landed when it failed: the documents
//! before its first write error, or those found on the server when the
//! answer was lost.

use crate::error::{Error, Result};
use crate::store::session::{collect, Cx};
use mongodb::bson::{self, doc, RawDocumentBuf};
use mongodb::Collection;

/// How many of `plain` an ordered insert that failed with `e` wrote:
/// those before the first write error; after an error without one (a
/// connection lost), those found on the server.
pub(super) async fn landed(
    raw: &Collection<RawDocumentBuf>,
    collection: &'static str,
    e: &Error,
    plain: &[bson::Document],
    cx: &mut Cx<'_>,
) -> Result<usize> {
    if let Error::Driver { source, .. } = e {
        match &*source.kind {
            mongodb::error::ErrorKind::InsertMany(m) => {
                if let Some(first) = m.write_errors.as_ref().and_then(|w| w.iter().map(|w| w.index).min()) {
                    return Ok(first.min(plain.len()));
                }
                // Only the write concern failed: every document was written.
                if m.write_concern_error.is_some() {
                    return Ok(plain.len());
                }
            }
            // Written, not yet acknowledged by as many members as asked.
            mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteConcernError(_)) => {
                return Ok(plain.len());
            }
            // The server answered with an error for the whole command
            // (a fail point, a lost election): it wrote nothing.
            mongodb::error::ErrorKind::Write(_) | mongodb::error::ErrorKind::Command(_) => return Ok(0),
            _ => {}
        }
    }
    // No answer: what is stored says. A document with one of the ids
    // that is not the one sent (it was there before) did not land.
    let ids: Vec<bson::Bson> = plain.iter().filter_map(|d| d.get("_id").cloned()).collect();
    let find = raw
        .find(doc! {"_id": {"$in": ids}})
        .batch_size(plain.len().try_into().unwrap_or(u32::MAX))
        .selection_criteria(crate::store::primary());
    let mut stored = std::collections::HashMap::new();
    for d in collect(find, cx.session(), collection, |raw| crate::store::session::plain(collection, raw)).await? {
        if let Some(key) = d.get("_id").map(crate::store::path::id_key) {
            stored.insert(key, d);
        }
    }
    let sent = |d: &bson::Document| {
        let Some(found) = d.get("_id").and_then(|id| stored.get(&crate::store::path::id_key(id))) else {
            return false;
        };
        // docrel's bookkeeping is what the write stamped (a source's
        // first version tells it apart); the fields are the caller's.
        d.iter().all(|(k, v)| found.get(k) == Some(v))
    };
    // An ordered insert writes a prefix.
    Ok(plain.iter().take_while(|d| sent(d)).count())
}
