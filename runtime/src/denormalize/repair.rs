//! Verify and repair of denormalized copies: scan every target of a source,
//! report stale and dangling copies, and rewrite the stale ones from their
//! sources, batch by batch, with progress, resumable, idempotent.

use crate::denormalize::fanout::{targets_of, version_of, Guard, VERSION_PATH};
use crate::error::{Error, Result};
use crate::schema::document::Document;
use crate::schema::graph::graph;
use crate::schema::graph::{Shape, Target};
use crate::store::path::lookup;
use crate::store::session::in_session;
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::error::{ErrorKind, WriteConcernError, WriteError, WriteFailure};
use mongodb::{ClientSession, Database};
use std::collections::HashMap;

/// Where a scan stopped: the target path's index and the last `_id` done.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    /// Index into [`crate::denormalize::fanout::targets_of`] of the source.
    pub target: usize,
    /// The last target document scanned.
    pub after: Bson,
}

/// Counts of a scan (so far, in a progress report; in all, at the end).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RepairReport {
    /// Target documents scanned.
    pub scanned: u64,
    /// Target documents holding at least one copy that differs from its source.
    pub stale: u64,
    /// Copies whose source document does not exist.
    pub dangling: u64,
    /// Target documents rewritten.
    pub fixed: u64,
    /// Where to resume when the scan stopped early ([`Repair::max_batches`]);
    /// `None` when it went through.
    pub checkpoint: Option<Checkpoint>,
}

/// A progress report, after each batch.
#[derive(Debug, Clone)]
pub struct Progress<'a> {
    /// The target collection being scanned.
    pub target: &'static str,
    /// Its path holding the copies.
    pub path: &'a str,
    /// The counts so far.
    pub report: &'a RepairReport,
}

type OnProgress<'a> = Box<dyn FnMut(&Progress<'_>) + Send + Sync + 'a>;

/// A verify or repair of the copies of one source collection; from
/// [`verify`] or [`repair`].
#[must_use = "a Repair does nothing until run"]
pub struct Repair<'a> {
    db: &'a Database,
    source: &'static str,
    fix: bool,
    batch: usize,
    resume: Option<Checkpoint>,
    max_batches: Option<usize>,
    on_progress: Option<OnProgress<'a>>,
}

/// Reports the stale and dangling copies of `T`'s documents without
/// writing anything.
///
/// ```
/// # docrel::testing::doc_test(|db| async move {
/// # use docrel::{Document, bson::oid::ObjectId};
/// # use serde::{Deserialize, Serialize};
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "hosts")]
/// struct Host { #[serde(rename = "_id")] id: i32, ipaddr: String }
///
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "logmsg")]
/// struct LogMsg {
///     #[serde(rename = "_id")] id: ObjectId,
///     #[parent_ref(to = Host)] host: i32,
///     #[denormalize(from = Host::ipaddr, via = host)] ipaddr: String,
/// }
///
/// let report = docrel::fanout::verify::<Host>(&db).run().await?;
/// assert_eq!((report.scanned, report.stale), (0, 0));
/// # Ok(()) });
/// ```
pub fn verify<T: Document>(db: &Database) -> Repair<'_> {
    Repair::new(db, T::COLLECTION, false)
}

/// Reports the stale and dangling copies of `T`'s documents and rewrites
/// the stale ones from their sources (idempotent: a second run finds
/// nothing stale).
pub fn repair<T: Document>(db: &Database) -> Repair<'_> {
    Repair::new(db, T::COLLECTION, true)
}

/// [`verify`] of a source named by its collection (for command lines);
/// [`Error::UnknownSource`] when no registered type copies from it.
pub fn verify_collection<'a>(db: &'a Database, source: &str) -> Result<Repair<'a>> {
    Ok(Repair::new(db, known_source(source)?, false))
}

/// [`repair`] of a source named by its collection (for command lines);
/// [`Error::UnknownSource`] when no registered type copies from it.
pub fn repair_collection<'a>(db: &'a Database, source: &str) -> Result<Repair<'a>> {
    Ok(Repair::new(db, known_source(source)?, true))
}

fn known_source(source: &str) -> Result<&'static str> {
    let sources = graph().sources();
    sources
        .iter()
        .copied()
        .find(|s| *s == source)
        .ok_or_else(|| Error::UnknownSource { collection: source.to_owned(), known: sources.join(", ") })
}

impl<'a> Repair<'a> {
    fn new(db: &'a Database, source: &'static str, fix: bool) -> Self {
        Repair { db, source, fix, batch: 500, resume: None, max_batches: None, on_progress: None }
    }

    /// Target documents read per batch (one round trip, plus one for their sources).
    pub fn batch(mut self, n: usize) -> Self {
        self.batch = n.max(1);
        self
    }
    /// Continues a scan that stopped at `checkpoint`.
    pub fn resume(mut self, checkpoint: Option<Checkpoint>) -> Self {
        self.resume = checkpoint;
        self
    }
    /// Stops after `n` batches, returning a checkpoint (to spread the work).
    pub fn max_batches(mut self, n: usize) -> Self {
        self.max_batches = Some(n);
        self
    }
    /// Calls `f` after each batch.
    pub fn on_progress(mut self, f: impl FnMut(&Progress<'_>) + Send + Sync + 'a) -> Self {
        self.on_progress = Some(Box::new(f));
        self
    }

    /// Runs the scan.
    pub async fn run(mut self) -> Result<RepairReport> {
        crate::client::trace::Op::new("repair", self.source)
            .run(async move {
                let mut report = RepairReport::default();
                let mut batches = 0usize;
                let start = self.resume.take();
                for (index, target) in targets_of(self.source).iter().enumerate() {
                    let mut after = match &start {
                        Some(cp) if index < cp.target => continue,
                        Some(cp) if index == cp.target => Some(cp.after.clone()),
                        _ => None,
                    };
                    loop {
                        if self.max_batches.is_some_and(|m| batches >= m) {
                            report.checkpoint =
                                Some(Checkpoint { target: index, after: after.unwrap_or(Bson::MinKey) });
                            return Ok(report);
                        }
                        let Some(last) = self.one_batch(target, after.as_ref(), &mut report).await? else { break };
                        after = Some(last);
                        batches += 1;
                        if let Some(f) = self.on_progress.as_mut() {
                            f(&Progress { target: target.collection, path: &target.id_path(), report: &report });
                        }
                    }
                }
                Ok(report)
            })
            .await
    }

    /// One batch of target documents; the last `_id` read, or `None` at the end.
    async fn one_batch(
        &self,
        target: &Target,
        after: Option<&Bson>,
        report: &mut RepairReport,
    ) -> Result<Option<Bson>> {
        let mut filter = doc! { target.id_path(): {"$exists": true} };
        if let Some(after) = after {
            filter.insert("_id", doc! {"$gt": after.clone()});
        }
        let mut projection = doc! {"_id": 1};
        match target.shape {
            Shape::Top { via } => {
                projection.insert(via, 1);
                for (copy, _) in &target.fields {
                    projection.insert(*copy, 1);
                }
            }
            Shape::Array { array, .. } => {
                projection.insert(array, 1);
            }
        }
        let coll = self.db.collection::<BsonDoc>(target.collection);
        let docs: Vec<BsonDoc> = {
            let mut cursor = coll
                .find(filter)
                .sort(doc! {"_id": 1})
                .limit(self.batch as i64)
                .batch_size(self.batch as u32)
                .projection(projection)
                .await
                .map_err(|e| Error::driver("find", target.collection, e))?;
            let mut out = Vec::new();
            while cursor.advance().await.map_err(|e| Error::driver("find", target.collection, e))? {
                out.push(cursor.deserialize_current().map_err(|e| Error::driver("find", target.collection, e))?);
            }
            out
        };
        let Some(last) = docs.last().and_then(|d| d.get("_id")).cloned() else { return Ok(None) };

        // The sources this batch refers to, read once.
        // (A set and a map by id, not searches of a list: a batch of holders
        // of many sources stays linear.)
        let mut ids: Vec<Bson> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for d in &docs {
            for id in held_ids(target, d) {
                if seen.insert(crate::store::path::id_key(&id)) {
                    ids.push(id);
                }
            }
        }
        let mut projection: BsonDoc = target.source_fields().map(|f| (f.to_owned(), Bson::Int32(1))).collect();
        projection.insert(VERSION_PATH, 1);
        let mut sources: Vec<BsonDoc> = Vec::new();
        {
            let coll = self.db.collection::<BsonDoc>(self.source);
            let mut cursor = coll
                .find(doc! {"_id": {"$in": ids}})
                .projection(projection)
                .batch_size(i32::MAX as u32)
                .await
                .map_err(|e| Error::driver("find", self.source, e))?;
            while cursor.advance().await.map_err(|e| Error::driver("find", self.source, e))? {
                sources.push(cursor.deserialize_current().map_err(|e| Error::driver("find", self.source, e))?);
            }
        }
        let by_id: HashMap<String, &BsonDoc> =
            sources.iter().filter_map(|s| Some((crate::store::path::id_key(s.get("_id")?), s))).collect();
        let find_source = |id: &Bson| by_id.get(&crate::store::path::id_key(id)).copied();

        // The sources with a stale copy in this batch, then the holders of
        // each among the batch: the guarded write decides which are rewritten.
        let mut to_fix: HashMap<String, Refresh<'_>> = HashMap::new();
        for d in &docs {
            report.scanned += 1;
            let mut stale = false;
            for (id, copy) in held_copies(target, d) {
                let Some(source) = find_source(&id) else {
                    report.dangling += 1;
                    continue;
                };
                let differs =
                    target.fields.iter().any(|(field, source_field)| copy.get(*field) != lookup(source, source_field));
                if differs {
                    stale = true;
                    to_fix.entry(crate::store::path::id_key(&id)).or_insert_with(|| Refresh {
                        id,
                        source,
                        holders: Vec::new(),
                    });
                }
            }
            if stale {
                report.stale += 1;
            }
        }
        if self.fix && !to_fix.is_empty() {
            for d in &docs {
                let Some(holder) = d.get("_id") else { continue };
                for id in held_ids(target, d) {
                    if let Some(group) = to_fix.get_mut(&crate::store::path::id_key(&id)) {
                        // An array holding the same source twice is still one holder.
                        if group.holders.last() != Some(holder) {
                            group.holders.push(holder.clone());
                        }
                    }
                }
            }
            let groups: Vec<Refresh<'_>> = to_fix.into_values().collect();
            report.fixed += refresh_many(self.db, target, &groups, None).await?;
        }
        Ok(Some(last))
    }
}

/// One source document whose copies in `holders` a repair rewrites.
pub(crate) struct Refresh<'s> {
    pub(crate) id: Bson,
    pub(crate) source: &'s BsonDoc,
    pub(crate) holders: Vec<Bson>,
}

/// Statements of one `update` command at most: far under the server's
/// 100,000 writes and 16 MiB per command, whatever the copies hold.
const STATEMENTS: usize = 10_000;
const COMMAND_BYTES: usize = 8 * 1024 * 1024;

/// Rewrites the copies of each group's source in its holders, under the
/// refresh guard of [`Target::update`] (per source, so concurrent fan-outs
/// and refreshes still never make a copy older). All groups go in one
/// `update` command of many statements (more only past [`STATEMENTS`] or
/// [`COMMAND_BYTES`]), not one round trip per source or holder. Returns
/// the copies modified.
pub(crate) async fn refresh_many(
    db: &Database,
    target: &Target,
    groups: &[Refresh<'_>],
    mut session: Option<&mut ClientSession>,
) -> Result<u64> {
    let mut modified = 0u64;
    let mut statements: Vec<BsonDoc> = Vec::new();
    let mut bytes = 0usize;
    for group in groups.iter().filter(|g| !g.holders.is_empty()) {
        let (filter, update, array_filters) =
            target.update(&group.id, group.source, version_of(group.source), Guard::Refresh);
        // One statement per alternative of the guard, each a plain
        // conjunction led by `_id`: it bounds the statement to this batch's
        // holders, and a server that plans a write by its leading field and
        // scans the collection for a top-level `$or` (the embedded one does)
        // looks the holders up by id instead. The alternatives write the
        // same values and version, so a holder the first one rewrote no
        // longer matches the others: the union is the guard's own update.
        for alternative in alternatives(filter) {
            let mut q = doc! {"_id": {"$in": group.holders.clone()}};
            if alternative.contains_key("_id") {
                q.insert("$and", vec![alternative]);
            } else {
                q.extend(alternative);
            }
            let mut statement = doc! {"q": q, "u": update.clone(), "multi": true};
            if let Some(af) = &array_filters {
                statement.insert("arrayFilters", af.clone());
            }
            let size = crate::bson_compat::to_vec(&statement).map(|v| v.len()).unwrap_or(0);
            if !statements.is_empty() && (statements.len() == STATEMENTS || bytes + size > COMMAND_BYTES) {
                modified += send_updates(db, target, std::mem::take(&mut statements), session.as_deref_mut()).await?;
                bytes = 0;
            }
            bytes += size;
            statements.push(statement);
        }
    }
    if !statements.is_empty() {
        modified += send_updates(db, target, statements, session).await?;
    }
    crate::client::trace::fanned_out(target.collection, || &target.paths().id, modified);
    Ok(modified)
}

/// A filter as alternatives whose union it matches, none with a top-level
/// `$or` or `$and` (those inside a field's condition, such as
/// `$elemMatch`, stay). A filter it cannot split so (a field named twice
/// once the parts are merged, another top-level operator) is its only
/// alternative.
fn alternatives(filter: BsonDoc) -> Vec<BsonDoc> {
    split(&filter).unwrap_or_else(|| vec![filter])
}

/// Bounds the alternatives of one filter: past it, one statement with
/// the `$or` costs less than the many without.
const ALTERNATIVES: usize = 16;

fn split(filter: &BsonDoc) -> Option<Vec<BsonDoc>> {
    let mut out = vec![BsonDoc::new()];
    for (key, value) in filter {
        let parts: Vec<Vec<BsonDoc>> = match (key.as_str(), value) {
            ("$or", Bson::Array(items)) => {
                let any: Vec<BsonDoc> =
                    items.iter().map(|i| i.as_document().and_then(split)).collect::<Option<Vec<_>>>()?.concat();
                vec![any]
            }
            ("$and", Bson::Array(items)) => {
                items.iter().map(|i| i.as_document().and_then(split)).collect::<Option<Vec<_>>>()?
            }
            (k, _) if k.starts_with('$') => return None,
            (k, v) => vec![vec![doc! { k: v.clone() }]],
        };
        for part in parts {
            let mut next = Vec::with_capacity(out.len() * part.len());
            for base in &out {
                for p in &part {
                    if p.keys().any(|k| base.contains_key(k)) {
                        return None;
                    }
                    let mut merged = base.clone();
                    merged.extend(p.clone());
                    next.push(merged);
                }
            }
            if next.len() > ALTERNATIVES {
                return None;
            }
            out = next;
        }
    }
    Some(out)
}

/// One `update` command (unordered: the statements touch copies of
/// different sources and do not depend on each other); its `nModified`.
async fn send_updates(
    db: &Database,
    target: &Target,
    statements: Vec<BsonDoc>,
    session: Option<&mut ClientSession>,
) -> Result<u64> {
    let mut command = doc! {"update": target.collection, "updates": statements, "ordered": false};
    // A command run as such gets none of the database's defaults. Not in a
    // session: it may be in a transaction, where a write concern is refused
    // (the driver does not say whether it is).
    if let (Some(wc), None) = (db.write_concern(), &session) {
        if let Ok(wc) = crate::bson_compat::to_bson(wc) {
            command.insert("writeConcern", wc);
        }
    }
    let reply =
        in_session!(db.run_command(command), session).map_err(|e| Error::driver("update", target.collection, e))?;
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
    Err(Error::driver("update", target.collection, cause))
}

/// The source ids a target document holds copies of.
fn held_ids(target: &Target, d: &BsonDoc) -> Vec<Bson> {
    held_copies(target, d).into_iter().map(|(id, _)| id).collect()
}

/// `(source id, the document holding the copy fields)` of a target document.
fn held_copies(target: &Target, d: &BsonDoc) -> Vec<(Bson, BsonDoc)> {
    match target.shape {
        Shape::Top { via } => match d.get(via) {
            Some(id) if *id != Bson::Null => vec![(id.clone(), d.clone())],
            _ => vec![],
        },
        Shape::Array { array, key } => d
            .get_array(array)
            .into_iter()
            .flatten()
            .filter_map(Bson::as_document)
            .filter_map(|e| e.get(key).map(|id| (id.clone(), e.clone())))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::alternatives;
    use mongodb::bson::doc;

    #[test]
    fn a_guard_splits_into_conjunctions_led_by_their_fields() {
        let guard = doc! {
            "supplier": 7,
            "$or": [
                {"v": {"$lt": 3}},
                {"$and": [{"v": {"$exists": false}}, {"$or": [{"x": {"$ne": 1}}, {"y": {"$ne": 2}}]}]},
            ],
        };
        assert_eq!(
            alternatives(guard),
            [
                doc! {"supplier": 7, "v": {"$lt": 3}},
                doc! {"supplier": 7, "v": {"$exists": false}, "x": {"$ne": 1}},
                doc! {"supplier": 7, "v": {"$exists": false}, "y": {"$ne": 2}},
            ]
        );
        // `$elemMatch` keeps its own `$or`; a field named twice is not split.
        let inner = doc! {"a": {"$elemMatch": {"$or": [{"k": 1}, {"k": 2}]}}};
        assert_eq!(alternatives(inner.clone()), [inner]);
        let twice = doc! {"v": 1, "$or": [{"v": 2}, {"w": 3}]};
        assert_eq!(alternatives(twice.clone()), [twice]);
    }
}
