//! Verify and repair of all derived data at once, the way the admin
//! `verify` and `repair` commands run it: denormalized copies (I1),
//! two-way references (I2), subsets (I3) and buckets (I4), then the
//! events the sync worker could not apply (its dead letters), one job after
//! another, one batch at a time on the scan engine ([`crate::check::Scan`]),
//! with progress against a known total and, for a repair, the engine's
//! checkpoint saved after every batch in [`CHECKPOINT_COLLECTION`] so that
//! a stopped repair resumes where it was.
//!
//! Every fix is conditional (a copy is rewritten only while older, an id
//! pulled or added only while it is missing or present, a count set from
//! the array the server holds, a subset rebuilt under its change counter),
//! so a batch done twice, after a stop in its middle, fixes nothing twice.

use crate::admin::check::CheckKind;
use crate::bson_compat;
use crate::denormalize::repair as copies;
use crate::denormalize::sync::dead_letter_check;
use crate::error::{Error, Result};
use crate::patterns::{bucket_check, subset_check};
use crate::relations::inverse_check;
use crate::schema::graph::{graph, Graph};
use crate::store::primary;
use crate::store::scan::{Checkpoint, Parts, Report, Scan};
use mongodb::bson::{self, doc, Bson, Document as BsonDoc};
use mongodb::Database;

/// Where a repair keeps its checkpoint: one document per scope
/// (`repair:all`, `repair:parts`).
pub const CHECKPOINT_COLLECTION: &str = "_docrel_admin";

/// One unit of a verify or repair: the copies of one source, one two-way
/// reference, one subset or one bucket array.
#[derive(Clone)]
pub struct Job {
    /// `copies from parts`, `inverse people.tasks <-> tasks.owner`, ...
    pub name: String,
    /// What kind of derived data it checks.
    pub kind: CheckKind,
    parts: Parts,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job").field("name", &self.name).field("kind", &self.kind).finish()
    }
}

impl Job {
    fn new(name: String, kind: CheckKind, parts: Parts) -> Job {
        Job { name, kind, parts }
    }

    fn collections(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.parts.iter().flat_map(|p| p.collections())
    }

    /// How many documents the job reads in all (one `count` per collection
    /// it reads): the total of a progress bar.
    pub async fn total(&self, db: &Database) -> Result<u64> {
        let mut n = 0;
        for part in &self.parts {
            n += part.total(db).await?;
        }
        Ok(n)
    }

    /// The scan of this job's parts.
    fn scan<'a>(&self, db: &'a Database, fix: bool) -> Scan<'a> {
        Scan::new(db, if fix { "repair" } else { "verify" }, "", self.parts.clone(), fix)
    }
}

/// The collections a verify or repair can be limited to (sorted).
pub fn known_collections() -> Vec<&'static str> {
    known_collections_of(&all_jobs(graph(), None))
}

/// Every job; the dead letters limited to those of `scope` when given.
fn all_jobs(g: &'static Graph, scope: Option<&str>) -> Vec<Job> {
    let mut out = Vec::new();
    for source in g.sources() {
        out.push(Job::new(format!("copies from {source}"), CheckKind::Copies, copies::parts(g, source)));
    }
    for pair in inverse_check::pairs_in(g) {
        out.push(Job::new(format!("inverse {}", pair.label()), CheckKind::Inverse, inverse_check::parts(pair)));
    }
    for child in g.subset_children() {
        for target in g.subsets_of(child) {
            let name = format!("subset {}.{} of {child}", target.parent, target.rel.field);
            out.push(Job::new(name, CheckKind::Subset, subset_check::parts(target)));
        }
    }
    for array in bucket_check::arrays_in(g) {
        out.push(Job::new(format!("buckets {}", array.label()), CheckKind::Bucket, bucket_check::parts(array)));
    }
    // Last: a repair re-applies the letters after everything else is true.
    out.push(Job::new("dead letters of the sync workers".into(), CheckKind::Sync, dead_letter_check::parts(g, scope)));
    out
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
    jobs_in(graph(), collection)
}

/// [`jobs`] of the schema graph `g` (a database's, with the types other
/// programs published there).
fn jobs_in(g: &'static Graph, collection: Option<&str>) -> Result<Vec<Job>> {
    let all = all_jobs(g, collection);
    let Some(c) = collection else { return Ok(all) };
    let out: Vec<Job> = all.iter().filter(|j| j.collections().any(|x| x == c)).cloned().collect();
    if out.is_empty() {
        return Err(Error::Invalid {
            what: crate::error::Misuse::Collection,
            message: format!(
                "nothing derived involves collection `{c}` (no copies, two-way references, subsets or buckets); the \
                 collections that have some are: [{}]. Check the name, or leave it out to check everything",
                known_collections_of(&all).join(", ")
            ),
        });
    }
    Ok(out)
}

/// Whether anything derived involves `collection`: a check or repair of it
/// has a job.
pub(crate) fn involves(g: &'static Graph, collection: &str) -> bool {
    all_jobs(g, Some(collection)).iter().any(|j| j.collections().any(|x| x == collection))
}

fn known_collections_of(jobs: &[Job]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = jobs.iter().flat_map(Job::collections).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The outcome of one job: the counts of its scan, over every batch.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct JobReport {
    /// The job's name.
    pub name: String,
    /// Its kind.
    pub kind: CheckKind,
    /// Problems found ([`Report::found`], written out for readers of the JSON).
    pub found: u64,
    /// The counts.
    #[serde(flatten)]
    pub report: Report,
}

impl JobReport {
    fn add(&mut self, batch: &Report) {
        self.report.add(batch);
        // Where the job goes on is the run's to keep, not the job's.
        self.report.checkpoint = None;
        self.found = self.report.found();
    }
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
        self.jobs.iter().map(|j| j.report.found()).sum()
    }
    /// Fixes written in all.
    pub fn fixed(&self) -> u64 {
        self.jobs.iter().map(|j| j.report.fixed).sum()
    }
    /// Problems left as they are.
    pub fn unfixable(&self) -> u64 {
        self.jobs.iter().map(|j| j.report.unfixable).sum()
    }

    /// The entry of `job`, added when it has none yet.
    fn entry(&mut self, job: &Job) -> &mut JobReport {
        let index = match self.jobs.iter().position(|j| j.name == job.name) {
            Some(i) => i,
            None => {
                self.jobs.push(JobReport { name: job.name.clone(), kind: job.kind, ..JobReport::default() });
                self.jobs.len() - 1
            }
        };
        &mut self.jobs[index]
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
/// let report = docrel::admin::checks::verify(&db, Some("hosts"))?.run(|| false, |_, _| {}).await?;
/// assert_eq!((report.found(), report.interrupted), (0, false));
/// # Ok(()) });
/// ```
pub fn verify<'a>(db: &'a Database, collection: Option<&str>) -> Result<Run<'a>> {
    Ok(Run::new(db, collection, jobs_in(crate::schema::graph::of(db), collection)?, false))
}

/// A repair of the jobs of [`jobs`]`(collection)`, resuming the checkpoint
/// of an earlier repair of the same scope unless [`Run::restart`].
pub fn repair<'a>(db: &'a Database, collection: Option<&str>) -> Result<Run<'a>> {
    Ok(Run::new(db, collection, jobs_in(crate::schema::graph::of(db), collection)?, true))
}

/// Where a saved checkpoint stood.
struct Saved {
    /// The job it stopped in, by name.
    job: String,
    /// Where that job goes on (`None`: from its start, or it was done).
    position: Option<Checkpoint>,
    /// Whether that job was done.
    finished: bool,
}

/// What a run asks between batches and tells after each.
struct Hooks<S, P> {
    stop: S,
    progress: P,
    batches: usize,
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

    /// Runs every job. `stop` is asked between batches (a Ctrl-C handler
    /// answers it): when it says yes, a repair saves its checkpoint and
    /// returns with `interrupted`. `progress` is called after each batch
    /// with the job running and the counts so far (over every job; resumed
    /// runs count what the interrupted ones did).
    pub async fn run(self, stop: impl FnMut() -> bool, progress: impl FnMut(&Job, &RunReport)) -> Result<RunReport> {
        let mut report = RunReport { dry_run: self.dry_run, ..RunReport::default() };
        for job in &self.jobs {
            report.total += job.total(self.db).await?;
        }
        let mut saved = self.resume(&mut report).await?;
        let mut hooks = Hooks { stop, progress, batches: 0 };
        for job in &self.jobs {
            let mut position = None;
            if let Some(s) = &saved {
                // Jobs before the saved one are done; so is it when finished.
                if s.job != job.name {
                    continue;
                }
                let finished = s.finished;
                position = saved.take().and_then(|s| s.position);
                if finished {
                    continue;
                }
            }
            if !self.run_job(job, position, &mut report, &mut hooks).await? {
                return Ok(report);
            }
        }
        if self.saves() {
            self.clear().await?;
        }
        Ok(report)
    }

    /// Runs one job to its end from `position` (`true`), or until stopped
    /// (`false`, with the checkpoint saved).
    async fn run_job(
        &self,
        job: &Job,
        mut position: Option<Checkpoint>,
        report: &mut RunReport,
        hooks: &mut Hooks<impl FnMut() -> bool, impl FnMut(&Job, &RunReport)>,
    ) -> Result<bool> {
        let fix = self.fix && !self.dry_run;
        report.entry(job);
        loop {
            if (hooks.stop)() || self.max_batches.is_some_and(|m| hooks.batches >= m) {
                report.interrupted = true;
                if self.saves() {
                    self.save(&job.name, position.as_ref(), report).await?;
                }
                return Ok(false);
            }
            let batch = job.scan(self.db, fix).batch(self.batch).max_batches(1).resume(position).run().await?;
            hooks.batches += 1;
            report.entry(job).add(&batch);
            report.done += batch.scanned;
            report.total = report.total.max(report.done);
            position = batch.checkpoint;
            if self.saves() {
                self.save(&job.name, position.as_ref(), report).await?;
            }
            (hooks.progress)(job, report);
            if position.is_none() {
                return Ok(true);
            }
        }
    }

    /// Reads the saved checkpoint of this scope (for a repair), puts what
    /// it had done in `report`, and says where it stood; `None` when the
    /// run starts from the beginning.
    async fn resume(&self, report: &mut RunReport) -> Result<Option<Saved>> {
        let Some(saved) = self.load().await? else { return Ok(None) };
        let job = saved.get_str("job").unwrap_or_default().to_owned();
        if !self.jobs.iter().any(|j| j.name == job) {
            return Ok(None);
        }
        report.resumed = Some(describe_checkpoint(&saved));
        report.done = saved.get_i64("done").unwrap_or(0).max(0) as u64;
        if let Ok(jobs) = saved.get_array("jobs") {
            report.jobs = jobs.iter().filter_map(|j| bson_compat::from_bson(j.clone()).ok()).collect();
        }
        // A position this version cannot read starts its job over: every
        // fix is conditional, so the batches done again fix nothing twice.
        let position = saved
            .get("position")
            .filter(|p| **p != Bson::Null)
            .and_then(|p| bson_compat::from_bson::<Checkpoint>(p.clone()).ok());
        let finished = saved.get_bool("finished").unwrap_or(false);
        Ok(Some(Saved { job, position, finished }))
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

    async fn save(&self, job: &str, position: Option<&Checkpoint>, report: &RunReport) -> Result<()> {
        let encode =
            |e: bson_compat::EncodeError| Error::Encode { what: "a repair checkpoint".into(), message: e.to_string() };
        // A job whose last batch is done has no position: the next one starts.
        let finished = position.is_none();
        let position = match position {
            Some(p) => bson_compat::to_bson(p).map_err(encode)?,
            None => Bson::Null,
        };
        let jobs = bson_compat::to_bson(&report.jobs).map_err(encode)?;
        self.db
            .collection::<BsonDoc>(CHECKPOINT_COLLECTION)
            .update_one(
                doc! {"_id": &self.scope},
                doc! {"$set": {
                    "job": job,
                    "position": position,
                    "finished": finished,
                    "done": report.done as i64,
                    "jobs": jobs,
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
