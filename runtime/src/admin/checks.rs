//! Verify and repair of all derived data at once, the way the admin
//! `verify` and `repair` commands run it: denormalized copies (I1),
//! two-way references (I2), subsets (I3) and buckets (I4), one job after
//! another, one batch at a time, with progress against a known total and,
//! for a repair, a checkpoint saved after every batch in
//! [`CHECKPOINT_COLLECTION`] so that a stopped repair resumes where it was.
//!
//! Every fix is conditional (a copy is rewritten only while older, an id
//! pulled or added only while it is missing or present, a count set from
//! the array the server holds, a subset rebuilt under its change counter),
//! so a batch done twice, after a stop in its middle, fixes nothing twice.

use crate::bson_compat;
use crate::denormalize::fanout::targets_of;
use crate::denormalize::repair::{repair_collection, verify_collection, Checkpoint};
use crate::error::{show_id, Error, Result};
use crate::patterns::bucket_check::{self, BucketArray, BucketCheckpoint};
use crate::patterns::subset::SubsetTarget;
use crate::relations::inverse_check::{self, InverseCheckpoint, Pair};
use crate::schema::graph::graph;
use crate::store::primary;
use mongodb::bson::{self, doc, Bson, Document as BsonDoc};
use mongodb::Database;

/// Where a repair keeps its checkpoint: one document per scope
/// (`repair:all`, `repair:parts`).
pub const CHECKPOINT_COLLECTION: &str = "_docrel_admin";

/// What a job checks.
#[derive(Debug, Clone, Copy)]
pub enum What {
    /// The copies of one source collection, in every target.
    Copies(&'static str),
    /// The two sides of one two-way reference.
    Inverse(Pair),
    /// One subset array.
    Subset(&'static SubsetTarget),
    /// One bucket array.
    Bucket(BucketArray),
}

/// One unit of a verify or repair.
#[derive(Debug, Clone)]
pub struct Job {
    /// `copies from parts`, `inverse people.tasks <-> tasks.owner`, ...
    pub name: String,
    /// What it checks.
    pub what: What,
}

impl Job {
    /// The kind, one word: `copies`, `inverse`, `subset`, `bucket`.
    pub fn kind(&self) -> &'static str {
        match self.what {
            What::Copies(_) => "copies",
            What::Inverse(_) => "inverse",
            What::Subset(_) => "subset",
            What::Bucket(_) => "bucket",
        }
    }
}

/// The collections a verify or repair can be limited to (sorted).
pub fn known_collections() -> Vec<&'static str> {
    known_collections_of(&jobs(None).unwrap_or_default())
}

/// The jobs of a verify or repair, limited to those involving `collection`
/// when given (as source or holder of copies, either side of a two-way
/// reference, parent or child of a subset, bucket collection).
///
/// ```
/// # use docrel::{Document, bson::oid::ObjectId};
/// # use serde::{Deserialize, Serialize};
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "hosts")]
/// struct Host { #[serde(rename = "_id")] id: i32, ipaddr: String }
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "logmsg")]
/// struct LogMsg {
///     #[serde(rename = "_id")] id: ObjectId,
///     #[parent_ref(to = Host)] host: i32,
///     #[denormalize(from = Host::ipaddr, via = host)] ipaddr: String,
/// }
/// let jobs = docrel::admin::checks::jobs(Some("logmsg")).unwrap();
/// assert!(jobs.iter().any(|j| j.name == "copies from hosts"));
/// let err = docrel::admin::checks::jobs(Some("nope")).unwrap_err();
/// assert!(err.to_string().contains("hosts"));
/// ```
pub fn jobs(collection: Option<&str>) -> Result<Vec<Job>> {
    let g = graph();
    let mut out = Vec::new();
    for source in g.sources() {
        let holders = targets_of(source).iter().map(|t| t.collection);
        if collection.is_none_or(|c| c == source || holders.clone().any(|h| h == c)) {
            out.push(Job { name: format!("copies from {source}"), what: What::Copies(source) });
        }
    }
    for pair in inverse_check::pairs() {
        if collection.is_none_or(|c| pair.involves(c)) {
            out.push(Job { name: format!("inverse {}", pair.label()), what: What::Inverse(pair) });
        }
    }
    for child in g.subset_children() {
        for target in g.subsets_of(child) {
            if collection.is_none_or(|c| c == target.parent || c == child) {
                out.push(Job {
                    name: format!("subset {}.{} of {child}", target.parent, target.rel.field),
                    what: What::Subset(target),
                });
            }
        }
    }
    for array in bucket_check::bucket_arrays() {
        if collection.is_none_or(|c| c == array.schema.collection) {
            out.push(Job { name: format!("buckets {}", array.label()), what: What::Bucket(array) });
        }
    }
    if let (Some(c), true) = (collection, out.is_empty()) {
        return Err(Error::Invalid {
            what: crate::error::Misuse::Collection,
            message: format!(
                "nothing derived involves collection `{c}` (no copies, two-way references, subsets or buckets); the \
                 collections that have some are: [{}]. Check the name, or leave it out to check everything",
                known_collections_of(&jobs(None)?).join(", ")
            ),
        });
    }
    Ok(out)
}

fn known_collections_of(jobs: &[Job]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for job in jobs {
        match job.what {
            What::Copies(source) => {
                out.push(source);
                out.extend(targets_of(source).iter().map(|t| t.collection));
            }
            What::Inverse(p) => out.extend([p.a.collection(), p.b.collection()]),
            What::Subset(s) => out.extend([s.parent, s.spec.child]),
            What::Bucket(b) => out.push(b.schema.collection),
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// What one batch of a job did.
#[derive(Debug, Clone, Default)]
pub struct Step {
    /// Documents read.
    pub scanned: u64,
    /// Problems found (stale or dangling copies, one-sided links, wrong
    /// subsets, bad buckets).
    pub found: u64,
    /// Fixes written.
    pub fixed: u64,
    /// Problems a repair cannot fix.
    pub unfixable: u64,
    /// Problems in words (a few).
    pub problems: Vec<String>,
    /// Where the job goes on from; `None` when it is done.
    pub position: Option<Bson>,
}

async fn count(db: &Database, collection: &str, filter: BsonDoc) -> Result<u64> {
    db.collection::<BsonDoc>(collection)
        .count_documents(filter)
        .await
        .map_err(|e| Error::driver("count", collection, e))
}

impl Job {
    /// How many documents the job reads in all (one `count` per collection
    /// it reads): the total of a progress bar.
    pub async fn total(&self, db: &Database) -> Result<u64> {
        Ok(match self.what {
            What::Copies(source) => {
                let mut n = 0;
                for t in targets_of(source) {
                    n += count(db, t.collection, doc! { t.id_path(): {"$exists": true} }).await?;
                }
                n
            }
            What::Inverse(p) => {
                count(db, p.a.collection(), doc! { p.a.rel.id_path(): {"$exists": true} }).await?
                    + count(db, p.b.collection(), doc! { p.b.rel.id_path(): {"$exists": true} }).await?
            }
            What::Subset(s) => count(db, s.parent, doc! {}).await?,
            What::Bucket(b) => count(db, b.schema.collection, doc! {}).await?,
        })
    }

    /// Runs one batch of `batch` documents from `position` (`None`: the
    /// start), fixing what it finds when `fix`.
    pub async fn step(&self, db: &Database, fix: bool, batch: usize, position: Option<&Bson>) -> Result<Step> {
        match self.what {
            What::Copies(source) => {
                let scan = if fix { repair_collection(db, source)? } else { verify_collection(db, source)? };
                let resume = position.and_then(Bson::as_document).map(|d| Checkpoint {
                    target: d.get_i64("target").unwrap_or(0) as usize,
                    after: d.get("after").cloned().unwrap_or(Bson::MinKey),
                });
                let r = scan.batch(batch).max_batches(1).resume(resume).run().await?;
                let found = r.stale + r.dangling;
                let mut problems = Vec::new();
                if r.stale > 0 {
                    problems.push(format!("copies from {source}: {} documents hold stale copies", r.stale));
                }
                if r.dangling > 0 {
                    problems.push(format!("copies from {source}: {} copies of documents that are gone", r.dangling));
                }
                Ok(Step {
                    scanned: r.scanned,
                    found,
                    fixed: r.fixed,
                    // A dangling copy has no source to be rewritten from.
                    unfixable: r.dangling,
                    problems,
                    position: r.checkpoint.map(|c| Bson::Document(doc! {"target": c.target as i64, "after": c.after})),
                })
            }
            What::Inverse(pair) => {
                let resume = position.and_then(Bson::as_document).map(|d| InverseCheckpoint {
                    pair: 0,
                    side: d.get_i32("side").unwrap_or(0).clamp(0, 1) as u8,
                    after: d.get("after").cloned().unwrap_or(Bson::MinKey),
                });
                let r =
                    inverse_check::scan(db, vec![pair], fix).batch(batch).max_batches(1).resume(resume).run().await?;
                Ok(Step {
                    scanned: r.scanned,
                    found: r.mismatched + r.dangling,
                    fixed: r.fixed,
                    unfixable: r.unfixable,
                    problems: r.problems,
                    position: r.checkpoint.map(|c| Bson::Document(doc! {"side": i32::from(c.side), "after": c.after})),
                })
            }
            What::Bucket(array) => {
                let resume = position.map(|p| BucketCheckpoint { array: 0, after: p.clone() });
                let r =
                    bucket_check::scan(db, vec![array], fix).batch(batch).max_batches(1).resume(resume).run().await?;
                Ok(Step {
                    scanned: r.scanned,
                    found: r.miscounted + r.over_size + r.gaps + r.duplicates + r.misaligned,
                    fixed: r.fixed,
                    unfixable: r.unfixable,
                    problems: r.problems,
                    position: r.checkpoint.map(|c| c.after),
                })
            }
            What::Subset(target) => subset_step(db, target, fix, batch, position).await,
        }
    }
}

/// One batch of parents of a subset: each one's stored array against the
/// top N of its children (one read per parent), rebuilt when they differ.
async fn subset_step(
    db: &Database,
    target: &'static SubsetTarget,
    fix: bool,
    batch: usize,
    position: Option<&Bson>,
) -> Result<Step> {
    let field = target.rel.field;
    let mut filter = doc! {};
    if let Some(after) = position {
        filter.insert("_id", doc! {"$gt": after.clone()});
    }
    let mut cursor = db
        .collection::<BsonDoc>(target.parent)
        .find(filter)
        .projection(doc! {"_id": 1, field: 1})
        .sort(doc! {"_id": 1})
        .limit(batch as i64)
        .batch_size(batch as u32)
        .selection_criteria(primary())
        .await
        .map_err(|e| Error::driver("find", target.parent, e))?;
    let mut parents: Vec<BsonDoc> = Vec::new();
    while cursor.advance().await.map_err(|e| Error::driver("find", target.parent, e))? {
        parents.push(cursor.deserialize_current().map_err(|e| Error::driver("find", target.parent, e))?);
    }
    let mut step = Step::default();
    let Some(last) = parents.last().and_then(|d| d.get("_id")).cloned() else { return Ok(step) };
    for parent in &parents {
        step.scanned += 1;
        let Some(id) = parent.get("_id") else { continue };
        let stored: Vec<BsonDoc> = parent
            .get_array(field)
            .map(|a| a.iter().filter_map(Bson::as_document).cloned().collect())
            .unwrap_or_default();
        let expected = target.expected(db, id).await?;
        if stored == expected {
            continue;
        }
        step.found += 1;
        if step.problems.len() < 20 {
            step.problems.push(format!(
                "subset {}.{field} of {}: holds {} summaries where its children give {}{}",
                target.parent,
                show_id(id),
                stored.len(),
                expected.len(),
                if stored.len() == expected.len() { " different ones" } else { "" }
            ));
        }
        if fix {
            target.rebuild(db, id).await?;
            step.fixed += 1;
        }
    }
    step.position = Some(last);
    Ok(step)
}

/// A progress report after each batch of a [`Run`].
#[derive(Debug, Clone)]
pub struct Progress<'a> {
    /// The job running.
    pub job: &'a Job,
    /// Documents read so far, over every job (resumed runs count what the
    /// interrupted ones did).
    pub done: u64,
    /// Documents to read in all.
    pub total: u64,
    /// Fixes written so far.
    pub fixed: u64,
    /// Problems found so far.
    pub found: u64,
}

/// The outcome of one job.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct JobReport {
    /// The job's name.
    pub name: String,
    /// Its kind.
    pub kind: String,
    /// Documents read.
    pub scanned: u64,
    /// Problems found.
    pub found: u64,
    /// Fixes written.
    pub fixed: u64,
    /// Problems left as they are.
    pub unfixable: u64,
    /// Problems in words (a few).
    pub problems: Vec<String>,
}

/// The outcome of a verify or repair.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct RunReport {
    /// One entry per job, in order (jobs finished before a resume included).
    pub jobs: Vec<JobReport>,
    /// Documents to read in all, and read so far.
    pub total: u64,
    /// Documents read (this run and the ones it resumed).
    pub done: u64,
    /// Whether a repair stopped before the end (its checkpoint is saved).
    pub interrupted: bool,
    /// When it resumed a checkpoint: where that one stood.
    pub resumed: Option<String>,
    /// Whether this was a dry run (nothing written).
    pub dry_run: bool,
}

impl RunReport {
    /// Problems found in all.
    pub fn found(&self) -> u64 {
        self.jobs.iter().map(|j| j.found).sum()
    }
    /// Fixes written in all.
    pub fn fixed(&self) -> u64 {
        self.jobs.iter().map(|j| j.fixed).sum()
    }
    /// Problems left as they are.
    pub fn unfixable(&self) -> u64 {
        self.jobs.iter().map(|j| j.unfixable).sum()
    }
}

/// A verify or repair of every job, batch by batch.
#[must_use = "a Run does nothing until run"]
pub struct Run<'a> {
    db: &'a Database,
    jobs: Vec<Job>,
    scope: String,
    fix: bool,
    dry_run: bool,
    batch: usize,
    restart: bool,
    max_batches: Option<usize>,
}

impl std::fmt::Debug for Run<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run").field("scope", &self.scope).field("fix", &self.fix).finish()
    }
}

/// A verify (nothing written) of the jobs of [`jobs`]`(collection)`.
///
/// ```
/// # docrel::testing::doc_test(|db| async move {
/// # use docrel::{Document, bson::oid::ObjectId};
/// # use serde::{Deserialize, Serialize};
/// # #[derive(Document, Serialize, Deserialize)]
/// # #[document(collection = "hosts")]
/// # struct Host { #[serde(rename = "_id")] id: i32, ipaddr: String }
/// # #[derive(Document, Serialize, Deserialize)]
/// # #[document(collection = "logmsg")]
/// # struct LogMsg {
/// #     #[serde(rename = "_id")] id: ObjectId,
/// #     #[parent_ref(to = Host)] host: i32,
/// #     #[denormalize(from = Host::ipaddr, via = host)] ipaddr: String,
/// # }
/// let report = docrel::admin::checks::verify(&db, Some("hosts"))?.run(|| false, |_| {}).await?;
/// assert_eq!((report.found(), report.interrupted), (0, false));
/// # Ok(()) });
/// ```
pub fn verify<'a>(db: &'a Database, collection: Option<&str>) -> Result<Run<'a>> {
    Ok(Run::new(db, collection, jobs(collection)?, false))
}

/// A repair of the jobs of [`jobs`]`(collection)`, resuming the checkpoint
/// of an earlier repair of the same scope unless [`Run::restart`].
pub fn repair<'a>(db: &'a Database, collection: Option<&str>) -> Result<Run<'a>> {
    Ok(Run::new(db, collection, jobs(collection)?, true))
}

impl<'a> Run<'a> {
    fn new(db: &'a Database, collection: Option<&str>, jobs: Vec<Job>, fix: bool) -> Self {
        Run {
            db,
            jobs,
            scope: format!("repair:{}", collection.unwrap_or("all")),
            fix,
            dry_run: false,
            batch: 100,
            restart: false,
            max_batches: None,
        }
    }
    /// Documents per batch (100 by default).
    pub fn batch(mut self, n: usize) -> Self {
        self.batch = n.max(1);
        self
    }
    /// A repair that writes nothing: it reports what it would fix (and
    /// neither reads nor saves a checkpoint).
    pub fn dry_run(mut self, yes: bool) -> Self {
        self.dry_run = yes;
        self
    }
    /// Ignores (and replaces) a saved checkpoint.
    pub fn restart(mut self, yes: bool) -> Self {
        self.restart = yes;
        self
    }
    /// Stops after `n` batches, as if interrupted (the checkpoint is saved).
    pub fn max_batches(mut self, n: Option<usize>) -> Self {
        self.max_batches = n;
        self
    }
    /// The jobs, in order.
    pub fn jobs(&self) -> &[Job] {
        &self.jobs
    }
    fn saves(&self) -> bool {
        self.fix && !self.dry_run
    }

    async fn load(&self) -> Result<Option<BsonDoc>> {
        if !self.saves() {
            return Ok(None);
        }
        let coll = self.db.collection::<BsonDoc>(CHECKPOINT_COLLECTION);
        if self.restart {
            coll.delete_one(doc! {"_id": &self.scope})
                .await
                .map_err(|e| Error::driver("delete", CHECKPOINT_COLLECTION, e))?;
            return Ok(None);
        }
        coll.find_one(doc! {"_id": &self.scope})
            .selection_criteria(primary())
            .await
            .map_err(|e| Error::driver("find", CHECKPOINT_COLLECTION, e))
    }

    async fn save(&self, job: &str, position: Option<&Bson>, done: u64, reports: &[JobReport]) -> Result<()> {
        // A job whose last batch is done has no position: the next one starts.
        let finished = position.is_none();
        let reports = bson_compat::to_bson(reports)
            .map_err(|e| Error::Encode { what: "a repair checkpoint".into(), message: e.to_string() })?;
        self.db
            .collection::<BsonDoc>(CHECKPOINT_COLLECTION)
            .update_one(
                doc! {"_id": &self.scope},
                doc! {"$set": {
                    "job": job,
                    "position": position.cloned().unwrap_or(Bson::Null),
                    "finished": finished,
                    "done": done as i64,
                    "jobs": reports,
                    "saved": bson::DateTime::now(),
                }},
            )
            .upsert(true)
            .await
            .map_err(|e| Error::driver("update", CHECKPOINT_COLLECTION, e))?;
        Ok(())
    }

    async fn clear(&self) -> Result<()> {
        self.db
            .collection::<BsonDoc>(CHECKPOINT_COLLECTION)
            .delete_one(doc! {"_id": &self.scope})
            .await
            .map_err(|e| Error::driver("delete", CHECKPOINT_COLLECTION, e))?;
        Ok(())
    }

    /// The saved checkpoint of this scope, if any, in words.
    pub async fn saved(&self) -> Result<Option<String>> {
        let coll = self.db.collection::<BsonDoc>(CHECKPOINT_COLLECTION);
        let found = coll
            .find_one(doc! {"_id": &self.scope})
            .await
            .map_err(|e| Error::driver("find", CHECKPOINT_COLLECTION, e))?;
        Ok(found.map(|d| describe_checkpoint(&d)))
    }

    /// Runs every job. `stop` is asked between batches (a Ctrl-C handler
    /// answers it): when it says yes, a repair saves its checkpoint and
    /// returns with `interrupted`. `progress` is called after each batch.
    pub async fn run(
        self,
        mut stop: impl FnMut() -> bool,
        mut progress: impl FnMut(&Progress<'_>),
    ) -> Result<RunReport> {
        let fix = self.fix && !self.dry_run;
        let mut report = RunReport { dry_run: self.dry_run, ..RunReport::default() };
        for job in &self.jobs {
            report.total += job.total(self.db).await?;
        }
        let saved = self.load().await?;
        // Where the saved checkpoint stood: its job (by name), position, and what was done.
        let mut resume_job: Option<String> = None;
        let mut resume_position: Option<Bson> = None;
        if let Some(saved) = &saved {
            let job = saved.get_str("job").unwrap_or_default().to_owned();
            if self.jobs.iter().any(|j| j.name == job) {
                report.resumed = Some(describe_checkpoint(saved));
                report.done = saved.get_i64("done").unwrap_or(0).max(0) as u64;
                resume_position = saved.get("position").filter(|p| **p != Bson::Null).cloned();
                if let Ok(jobs) = saved.get_array("jobs") {
                    report.jobs = jobs.iter().filter_map(|j| bson_compat::from_bson(j.clone()).ok()).collect();
                }
                resume_job = Some(job);
            }
        }
        let mut batches = 0usize;
        let finished = saved.as_ref().is_some_and(|s| s.get_bool("finished").unwrap_or(false));
        let mut skipping = resume_job.is_some();
        for job in &self.jobs {
            if skipping {
                if Some(&job.name) == resume_job.as_ref() {
                    skipping = false;
                    if finished {
                        continue;
                    }
                } else {
                    continue;
                }
            }
            let mut position = if Some(&job.name) == resume_job.as_ref() { resume_position.take() } else { None };
            let index = match report.jobs.iter().position(|j| j.name == job.name) {
                Some(i) => i,
                None => {
                    report.jobs.push(JobReport {
                        name: job.name.clone(),
                        kind: job.kind().into(),
                        ..Default::default()
                    });
                    report.jobs.len() - 1
                }
            };
            loop {
                if stop() || self.max_batches.is_some_and(|m| batches >= m) {
                    report.interrupted = true;
                    if self.saves() {
                        self.save(&job.name, position.as_ref(), report.done, &report.jobs).await?;
                    }
                    return Ok(report);
                }
                let step = job.step(self.db, fix, self.batch, position.as_ref()).await?;
                batches += 1;
                let entry = &mut report.jobs[index];
                entry.scanned += step.scanned;
                entry.found += step.found;
                entry.fixed += step.fixed;
                entry.unfixable += step.unfixable;
                for p in step.problems {
                    if entry.problems.len() < 20 {
                        entry.problems.push(p);
                    }
                }
                report.done += step.scanned;
                report.total = report.total.max(report.done);
                position = step.position;
                if self.saves() {
                    self.save(&job.name, position.as_ref(), report.done, &report.jobs).await?;
                }
                let (fixed, found) = (report.fixed(), report.found());
                progress(&Progress { job, done: report.done, total: report.total, fixed, found });
                if position.is_none() {
                    break;
                }
            }
        }
        if self.saves() {
            self.clear().await?;
        }
        Ok(report)
    }
}

fn describe_checkpoint(d: &BsonDoc) -> String {
    let saved = d.get_datetime("saved").map(|t| t.try_to_rfc3339_string().unwrap_or_default()).unwrap_or_default();
    format!(
        "{} documents done, stopped in `{}`{}",
        d.get_i64("done").unwrap_or(0),
        d.get_str("job").unwrap_or("?"),
        if saved.is_empty() { String::new() } else { format!(", saved {saved}") }
    )
}
