//! Publishing a program's bounds in the stored schema: the step of an
//! online change ([`crate::admin::change`]) that changes a bound
//! ([`super::bounds`]).

use super::bounds::BoundChange;
use super::form::StoredKind;
use super::publish::{load_documents, stored_document, SCHEMA_COLLECTION};
use crate::error::{Error, Misuse, Result};
use mongodb::bson::{doc, Document as BsonDoc};
use mongodb::Database;

/// Publishes each change's declared bound in the stored schema (the step
/// of `docrel schema apply` that changes a bound). Idempotent.
pub async fn rebound(db: &Database, changes: &[BoundChange]) -> Result<()> {
    let mut collections: Vec<&str> = changes.iter().map(|c| c.collection.as_str()).collect();
    collections.dedup();
    for collection in collections {
        rebound_one(db, collection, changes).await?;
    }
    Ok(())
}

async fn rebound_one(db: &Database, collection: &str, changes: &[BoundChange]) -> Result<()> {
    for _ in 0..super::publish::ATTEMPTS {
        let stored = load_documents(db).await?;
        let Some((mut t, print)) = stored.into_iter().find(|(t, _)| t.collection == collection) else { return Ok(()) };
        for c in changes.iter().filter(|c| c.collection == collection) {
            let kind = t.relations.iter_mut().find(|r| r.field == c.field).map(|r| &mut r.kind);
            if let Some(StoredKind::Embed { many: true, max } | StoredKind::RefMany { max, .. }) = kind {
                *max = c.declared;
            }
        }
        let filter = doc! {"_id": collection, "fingerprint": print};
        let replaced = db
            .collection::<BsonDoc>(SCHEMA_COLLECTION)
            .replace_one(filter, stored_document(&t)?)
            .await
            .map_err(|e| Error::driver("replace", SCHEMA_COLLECTION, e))?;
        if replaced.matched_count == 1 {
            return Ok(());
        }
    }
    Err(Error::Invalid {
        what: Misuse::Schema,
        message: format!("the schema of `{collection}` kept changing while its bounds were published; run it again"),
    })
}
