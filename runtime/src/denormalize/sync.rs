//! The asynchronous fan-out mode: a sync worker follows the change stream of
//! the source collections and applies the fan-outs, saving its resume token
//! after each one, so a fan-out is never lost when the application stops
//! after a source write: the next worker resumes where the last one stopped.

use crate::denormalize::fanout::fan_out;
use crate::error::{Error, Result};
use crate::schema::graph::graph;
use bson::{doc, Bson, Document as BsonDoc};
use futures::StreamExt;
use mongodb::change_stream::event::{ChangeStreamEvent, OperationType, ResumeToken};
use mongodb::options::FullDocumentType;
use mongodb::Database;

/// The collection the workers keep their resume tokens in.
pub const SYNC_COLLECTION: &str = "_docrel_sync";

/// A fan-out the worker applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The source collection.
    pub source: &'static str,
    /// The source document's `_id`.
    pub id: Bson,
    /// The source's version the copies now carry.
    pub version: i64,
}

/// Follows the change stream of every registered source collection of a
/// database and rewrites the copies of what changed. Pair it with
/// repositories in deferred mode ([`crate::repository::Repository::deferred_fan_out`]).
///
/// ```no_run
/// # async fn f(db: docrel::mongodb::Database) -> docrel::Result<()> {
/// // Runs until the task is dropped; restarted, it resumes from its token.
/// docrel::fanout::SyncWorker::new(&db, "catalog-sync").run(|applied| println!("{applied:?}")).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SyncWorker {
    db: Database,
    name: String,
}

impl SyncWorker {
    /// A worker whose resume token is stored under `name` in `_docrel_sync`.
    pub fn new(db: &Database, name: &str) -> Self {
        SyncWorker { db: db.clone(), name: name.to_owned() }
    }

    /// The resume token stored by the last run, if any.
    pub async fn stored_token(&self) -> Result<Option<ResumeToken>> {
        let stored = self
            .db
            .collection::<BsonDoc>(SYNC_COLLECTION)
            .find_one(doc! {"_id": &self.name})
            .await
            .map_err(|e| Error::driver("find", SYNC_COLLECTION, e))?;
        Ok(stored.and_then(|d| d.get("token").cloned()).and_then(|t| bson::from_bson(t).ok()))
    }

    async fn save(&self, token: &ResumeToken) -> Result<()> {
        let token = bson::to_bson(token)
            .map_err(|e| Error::Encode { what: "a resume token".into(), message: e.to_string() })?;
        self.db
            .collection::<BsonDoc>(SYNC_COLLECTION)
            .update_one(doc! {"_id": &self.name}, doc! {"$set": {"token": token}})
            .upsert(true)
            .await
            .map_err(|e| Error::driver("update", SYNC_COLLECTION, e))?;
        Ok(())
    }

    /// Opens the change stream (from the stored token, or from now, saving
    /// that position at once) and applies fan-outs until the stream ends or
    /// fails, calling `on_applied` after each one.
    pub async fn run(&self, mut on_applied: impl FnMut(&Applied)) -> Result<()> {
        let sources: Vec<&'static str> = graph().sources();
        let pipeline = vec![doc! {"$match": {
            "operationType": {"$in": ["insert", "update", "replace"]},
            "ns.coll": {"$in": sources.clone()},
        }}];
        let stored = self.stored_token().await?;
        let fresh = stored.is_none();
        let mut stream = self
            .db
            .watch()
            .pipeline(pipeline)
            .full_document(FullDocumentType::UpdateLookup)
            .resume_after(stored)
            .await
            .map_err(|e| Error::driver("watch", self.db.name(), e))?;
        if fresh {
            if let Some(token) = stream.resume_token() {
                self.save(&token).await?;
            }
        }
        while let Some(event) = stream.next().await {
            let event: ChangeStreamEvent<BsonDoc> = event.map_err(|e| Error::driver("watch", self.db.name(), e))?;
            if let Some(applied) = self.apply(&sources, &event).await? {
                on_applied(&applied);
            }
            self.save(&event.id).await?;
        }
        Ok(())
    }

    async fn apply(&self, sources: &[&'static str], event: &ChangeStreamEvent<BsonDoc>) -> Result<Option<Applied>> {
        let Some(coll) = event.ns.as_ref().and_then(|ns| ns.coll.as_deref()) else { return Ok(None) };
        let Some(source) = sources.iter().copied().find(|s| *s == coll) else { return Ok(None) };
        let touched: Option<Vec<String>> = match (&event.operation_type, &event.update_description) {
            (OperationType::Update, Some(d)) => {
                Some(d.updated_fields.keys().cloned().chain(d.removed_fields.iter().cloned()).collect::<Vec<_>>())
            }
            _ => None,
        };
        if let Some(t) = &touched {
            if !crate::denormalize::fanout::touches_derived(source, t) {
                return Ok(None);
            }
        }
        // The document as it is now (it may be newer than this event: the
        // versions make applying it early harmless).
        let Some(doc) = &event.full_document else { return Ok(None) };
        fan_out(&self.db, source, doc, touched.as_deref(), None).await?;
        Ok(Some(Applied {
            source,
            id: doc.get("_id").cloned().unwrap_or(Bson::Null),
            version: crate::denormalize::fanout::version_of(doc),
        }))
    }
}
