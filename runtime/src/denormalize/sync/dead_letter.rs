//! Dead letters: the change events a sync worker could not apply, kept in
//! [`DEAD_LETTER_COLLECTION`] with their reason, so that one event that
//! fails for good (a holder the server's validator refuses, a subset
//! summary over its `max_bytes`) stops nothing else: the worker records it
//! and goes on. The admin tool's `verify` lists them as problems, and
//! `repair` re-applies each once its cause is fixed (see
//! [`super::dead_letter_check`]).
//!
//! A letter is kept per worker and document, not per event: what repair
//! re-applies is the document as it is then, so a second failing event of
//! the same document only updates the letter (its reason, time and resume
//! token), and the letters of a document that keeps failing stay one. Its
//! fields:
//!
//! | field | what |
//! |---|---|
//! | `worker` | the worker's name (its position's key in `_docrel_sync`) |
//! | `collection`, `document` | the collection and `_id` of the changed document (null when a repair failed for a whole collection or parent) |
//! | `operation` | `insert`, `update`, `replace` or `delete` (the last one failing), or `repair` (the repair after lost history) |
//! | `reason`, `error` | the error's message and kind ([`Error::kind`]) |
//! | `attempts` | how many times the worker tried the last one |
//! | `at`, `token` | when it gave it up, and the event's resume token (null for a repair) |
//! | `parents` | the subset parents the event named (`collection`, `field`, `id`), from its images |

use crate::bson_compat;
use crate::error::{Error, Result};
use mongodb::bson::{doc, Bson, DateTime, Document as BsonDoc};
use mongodb::change_stream::event::ChangeStreamEvent;
use mongodb::Database;

/// The collection of the events sync workers could not apply.
pub const DEAD_LETTER_COLLECTION: &str = "_docrel_dead_letters";

/// Longest reason kept, in bytes: an error may quote a whole document.
const REASON_BYTES: usize = 4096;

/// Records that `worker` could not apply `event` after `attempts`,
/// because of `error` (an upsert: one letter per worker and document).
pub(super) async fn record(
    db: &Database,
    worker: &str,
    event: &ChangeStreamEvent<BsonDoc>,
    error: &Error,
    attempts: u32,
) -> Result<()> {
    let collection = event.ns.as_ref().and_then(|ns| ns.coll.as_deref()).unwrap_or_default();
    let document = event.document_key.as_ref().and_then(|k| k.get("_id")).cloned().unwrap_or(Bson::Null);
    let encode = |e: bson_compat::EncodeError| Error::Encode { what: "a dead letter".into(), message: e.to_string() };
    let token = bson_compat::to_bson(&event.id).map_err(encode)?;
    let operation = bson_compat::to_bson(&event.operation_type).map_err(encode)?;
    let letter = Letter {
        worker,
        collection,
        document,
        operation,
        token,
        parents: parents_named(crate::schema::graph::of(db), collection, event),
    };
    letter.upsert(db, error, attempts).await
}

/// The operation of a letter written by a worker's repair after lost
/// history rather than for one event.
pub(super) const REPAIR_OPERATION: &str = "repair";

/// Records that `worker`'s repair after lost history failed for good for
/// `collection`: for a source's copies (no `parent`), or for the subset of
/// `parent` (`collection`, field, id) summarizing it. `document` is the
/// child the rebuild left out, or null when the repair itself failed.
/// Repairing the letter runs that repair again.
pub(super) async fn record_repair(
    db: &Database,
    worker: &str,
    collection: &str,
    document: Bson,
    parent: Option<(&str, &str, &Bson)>,
    error: &Error,
) -> Result<()> {
    let parents = parent.map(|(c, field, id)| Bson::Document(doc! {"collection": c, "field": field, "id": id.clone()}));
    let operation = Bson::String(REPAIR_OPERATION.into());
    let parents = parents.into_iter().collect();
    let letter = Letter { worker, collection, document, operation, token: Bson::Null, parents };
    letter.upsert(db, error, 1).await
}

/// One letter's key and what it says of the change it was about.
struct Letter<'a> {
    worker: &'a str,
    collection: &'a str,
    document: Bson,
    operation: Bson,
    token: Bson,
    parents: Vec<Bson>,
}

impl Letter<'_> {
    async fn upsert(self, db: &Database, error: &Error, attempts: u32) -> Result<()> {
        let update = doc! {
            "$set": {
                "operation": self.operation,
                "reason": shortened(error.to_string()),
                "error": error.kind(),
                "attempts": i32::try_from(attempts).unwrap_or(i32::MAX),
                "at": DateTime::now(),
                "token": self.token,
            },
            "$addToSet": {"parents": {"$each": self.parents}},
        };
        let key = doc! {"worker": self.worker, "collection": self.collection, "document": self.document};
        db.collection::<BsonDoc>(DEAD_LETTER_COLLECTION)
            .update_one(key, update)
            .upsert(true)
            .await
            .map_err(|e| Error::driver("update", DEAD_LETTER_COLLECTION, e))?;
        tracing::warn!(
            target: "docrel",
            worker = self.worker,
            collection = self.collection,
            %error,
            "sync worker could not apply a change; recorded it as a dead letter (repair re-applies it once its \
             cause is fixed)"
        );
        Ok(())
    }
}

/// The parents of the subsets summarizing `collection` that the event's
/// images name (the document after the change, and before it where the
/// collection keeps pre-images): the subsets a repair of the letter
/// rebuilds, besides those of the document's parent then.
fn parents_named(
    g: &'static crate::schema::graph::Graph,
    collection: &str,
    event: &ChangeStreamEvent<BsonDoc>,
) -> Vec<Bson> {
    let mut out = Vec::new();
    for target in g.subsets_of(collection) {
        let images = [event.full_document.as_ref(), event.full_document_before_change.as_ref()];
        for parent in images.into_iter().flatten().filter_map(|d| d.get(target.parent_field)) {
            let named = Bson::Document(doc! {"collection": target.parent, "field": target.rel.field, "id": parent});
            if *parent != Bson::Null && !out.contains(&named) {
                out.push(named);
            }
        }
    }
    out
}

/// `reason` cut to [`REASON_BYTES`] (on a character boundary).
fn shortened(mut reason: String) -> String {
    if reason.len() > REASON_BYTES {
        let mut end = REASON_BYTES;
        while !reason.is_char_boundary(end) {
            end -= 1;
        }
        reason.truncate(end);
        reason.push_str(" [...]");
    }
    reason
}

#[cfg(test)]
mod tests {
    use super::shortened;

    #[test]
    fn a_long_reason_is_cut_on_a_character_boundary() {
        assert_eq!(shortened("short".into()), "short");
        let long = "é".repeat(3000);
        let cut = shortened(long);
        assert!(cut.len() <= super::REASON_BYTES + 6 && cut.ends_with(" [...]"), "{}", cut.len());
    }
}
