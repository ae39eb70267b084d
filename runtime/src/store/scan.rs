//! Verify and repair of derived data, one engine for every kind of it:
//! denormalized copies, two-way references, subsets, buckets and dead
//! letters, each a [`crate::check::Check`].
//!
//! A [`Scan`] goes through its parts in order (a target of copies, one
//! side of a two-way reference, a subset, a bucket array) and reads each a
//! batch at a time, in key order. After each batch it knows where it is (a
//! [`Checkpoint`]: the part and the last key done), so a scan can stop
//! after a number of batches and be resumed later. The parts decide what
//! to read, what is wrong and how to fix it; every fix is conditional, so
//! a batch done twice (after a stop in its middle) fixes nothing twice.

use crate::error::{Error, Result};
use futures::future::BoxFuture;
use mongodb::bson::{Bson, Document as BsonDoc};
use mongodb::Database;
use std::sync::Arc;

/// How many problems a report describes in words (all are counted).
pub const PROBLEMS_LISTED: usize = 20;

/// Where a scan stopped: the part and the last key done in it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Checkpoint {
    /// Index of the part, in the scan's order.
    pub part: usize,
    /// The last key done (an `_id`, or a bucket's parent); `MinKey` when
    /// the part was not started.
    pub after: Bson,
}

/// Counts of a scan. Each kind of derived data fills the counts of the
/// problems it can have and leaves the others at zero.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Report {
    /// Documents read.
    pub scanned: u64,
    /// Documents holding derived data that differs from what it is
    /// derived from: copies unlike their source, subsets unlike their children.
    pub stale: u64,
    /// References to documents that do not exist (a copy's source, an id
    /// of a two-way reference).
    pub dangling: u64,
    /// Links of a two-way reference recorded on one side only.
    pub mismatched: u64,
    /// Bucket parents whose buckets were checked.
    pub parents: u64,
    /// Buckets whose `count` is not the length of their array.
    pub miscounted: u64,
    /// Buckets holding more than `size` elements.
    pub over_size: u64,
    /// Missing bucket pages (a parent with pages 1, 2, 4 has one).
    pub gaps: u64,
    /// Bucket pages (or windows) stored more than once.
    pub duplicates: u64,
    /// Time buckets whose `start` is not on a window boundary.
    pub misaligned: u64,
    /// Change events the sync worker could not apply (its dead letters):
    /// what they would have rewritten may be stale.
    pub dead_letters: u64,
    /// Writes that fixed something.
    pub fixed: u64,
    /// Problems a repair leaves as they are (it says why in [`Report::problems`]).
    pub unfixable: u64,
    /// The first [`PROBLEMS_LISTED`] problems, in words.
    pub problems: Vec<String>,
    /// Where to resume when the scan stopped early ([`Scan::max_batches`]);
    /// `None` when it went through.
    #[serde(skip)]
    pub checkpoint: Option<Checkpoint>,
}

impl Report {
    /// Problems found, of every kind.
    pub fn found(&self) -> u64 {
        self.stale
            + self.dangling
            + self.mismatched
            + self.miscounted
            + self.over_size
            + self.gaps
            + self.duplicates
            + self.misaligned
            + self.dead_letters
    }

    /// Whether the scan found nothing wrong.
    pub fn clean(&self) -> bool {
        self.found() == 0
    }

    /// Adds the counts of `other` (a later part of the same scan) and takes its checkpoint.
    pub fn add(&mut self, other: &Report) {
        self.scanned += other.scanned;
        self.stale += other.stale;
        self.dangling += other.dangling;
        self.mismatched += other.mismatched;
        self.parents += other.parents;
        self.miscounted += other.miscounted;
        self.over_size += other.over_size;
        self.gaps += other.gaps;
        self.duplicates += other.duplicates;
        self.misaligned += other.misaligned;
        self.dead_letters += other.dead_letters;
        self.fixed += other.fixed;
        self.unfixable += other.unfixable;
        for p in &other.problems {
            self.note(|| p.clone());
        }
        self.checkpoint = other.checkpoint.clone();
    }

    /// Describes a problem, while fewer than [`PROBLEMS_LISTED`] are (the
    /// words are made only then).
    pub(crate) fn note(&mut self, problem: impl FnOnce() -> String) {
        if self.problems.len() < PROBLEMS_LISTED {
            self.problems.push(problem());
        }
    }
}

/// A progress report, after each batch.
#[derive(Debug, Clone)]
pub struct Progress<'a> {
    /// The part being scanned: `products.parts.id` (copies held there),
    /// `people.tasks <-> tasks.owner from people.tasks`, `comments.comments`.
    pub part: &'a str,
    /// Documents read in this batch.
    pub batch: u64,
    /// The counts so far.
    pub report: &'a Report,
}

/// One batch a part is asked to do.
#[derive(Debug, Clone, Copy)]
pub(crate) struct At<'a> {
    pub(crate) db: &'a Database,
    /// The last key done in this part; `None` at its start.
    pub(crate) after: Option<&'a Bson>,
    /// Documents to read, at most (a bucket part reads a parent whole).
    pub(crate) size: usize,
    /// Whether to fix what it finds.
    pub(crate) fix: bool,
}

/// One part of a scan: what a kind of derived data does in a batch.
pub(crate) trait ScanPart: Send + Sync {
    /// The part in words, for progress reports.
    fn label(&self) -> String;
    /// The collections it reads (to find the parts involving one).
    fn collections(&self) -> Vec<&'static str>;
    /// How many documents it reads in all (a progress bar's total).
    fn total<'a>(&'a self, db: &'a Database) -> BoxFuture<'a, Result<u64>>;
    /// Reads, checks and (when `at.fix`) fixes one batch, counting in
    /// `report`; the last key done, or `None` when nothing was left.
    fn batch<'a>(&'a self, at: At<'a>, report: &'a mut Report) -> BoxFuture<'a, Result<Option<Bson>>>;
}

/// The parts of a scan, shared with the scans that resume it.
pub(crate) type Parts = Vec<Arc<dyn ScanPart>>;

type OnProgress<'a> = Box<dyn FnMut(&Progress<'_>) + Send + Sync + 'a>;

/// A verify or repair of derived data, batch by batch, with progress,
/// resumable; from [`Check::verify`](crate::check::Check::verify) and
/// [`Check::repair`](crate::check::Check::repair).
#[must_use = "a Scan does nothing until run"]
pub struct Scan<'a> {
    db: &'a Database,
    op: &'static str,
    subject: &'static str,
    parts: Parts,
    fix: bool,
    batch: usize,
    resume: Option<Checkpoint>,
    max_batches: Option<usize>,
    on_progress: Option<OnProgress<'a>>,
}

impl std::fmt::Debug for Scan<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scan")
            .field("parts", &self.parts.iter().map(|p| p.label()).collect::<Vec<_>>())
            .field("fix", &self.fix)
            .field("batch", &self.batch)
            .finish()
    }
}

impl<'a> Scan<'a> {
    /// A scan of `parts`, traced as `op` on `subject`; `fix` repairs.
    pub(crate) fn new(db: &'a Database, op: &'static str, subject: &'static str, parts: Parts, fix: bool) -> Self {
        Scan { db, op, subject, parts, fix, batch: 500, resume: None, max_batches: None, on_progress: None }
    }

    /// Documents read per batch, 500 by default (one round trip, plus one
    /// for what they refer to; a bucket parent is never split).
    pub fn batch(mut self, n: usize) -> Self {
        self.batch = n.max(1);
        self
    }
    /// Continues a scan that stopped at `checkpoint` (of a scan of the same parts).
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
    pub async fn run(mut self) -> Result<Report> {
        crate::client::trace::Op::new(self.op, self.subject)
            .run(async move {
                let mut report = Report::default();
                let (mut part, mut after) = match self.resume.take() {
                    // `MinKey`: the part was not started.
                    Some(cp) => (cp.part, Some(cp.after).filter(|a| *a != Bson::MinKey)),
                    None => (0, None),
                };
                let mut batches = 0usize;
                while let Some(current) = self.parts.get(part).cloned() {
                    if self.max_batches.is_some_and(|m| batches >= m) {
                        report.checkpoint = Some(Checkpoint { part, after: after.unwrap_or(Bson::MinKey) });
                        return Ok(report);
                    }
                    if self.fix {
                        // A repair writes: under the same lease as any write.
                        crate::schema::stored::hold(self.db).await?;
                    }
                    let before = report.scanned;
                    let at = At { db: self.db, after: after.as_ref(), size: self.batch, fix: self.fix };
                    let Some(last) = current.batch(at, &mut report).await? else {
                        (part, after) = (part + 1, None);
                        continue;
                    };
                    after = Some(last);
                    batches += 1;
                    if let Some(f) = self.on_progress.as_mut() {
                        f(&Progress { part: &current.label(), batch: report.scanned - before, report: &report });
                    }
                }
                Ok(report)
            })
            .await
    }
}

/// The documents of `collection` matching `filter`, counted (a part's total).
pub(crate) async fn count(db: &Database, collection: &str, filter: BsonDoc) -> Result<u64> {
    db.collection::<BsonDoc>(collection)
        .count_documents(filter)
        .await
        .map_err(|e| Error::driver("count", collection, e))
}

#[cfg(test)]
mod tests {
    use super::{At, Checkpoint, Report, Scan, ScanPart};
    use crate::error::Result;
    use futures::future::BoxFuture;
    use mongodb::bson::Bson;
    use std::sync::{Arc, Mutex};

    /// A part over keys held in memory: the loop is the engine's, not the server's.
    struct Keys(Vec<i32>);

    impl ScanPart for Keys {
        fn label(&self) -> String {
            format!("keys {:?}", self.0)
        }
        fn collections(&self) -> Vec<&'static str> {
            Vec::new()
        }
        fn total<'a>(&'a self, _: &'a mongodb::Database) -> BoxFuture<'a, Result<u64>> {
            Box::pin(async move { Ok(self.0.len() as u64) })
        }
        fn batch<'a>(&'a self, at: At<'a>, report: &'a mut Report) -> BoxFuture<'a, Result<Option<Bson>>> {
            Box::pin(async move {
                let after = at.after.and_then(Bson::as_i32);
                let page: Vec<i32> =
                    self.0.iter().copied().filter(|k| after.is_none_or(|a| *k > a)).take(at.size).collect();
                report.scanned += page.len() as u64;
                Ok(page.last().map(|k| Bson::Int32(*k)))
            })
        }
    }

    fn scan(db: &mongodb::Database) -> Scan<'_> {
        let parts: super::Parts =
            vec![Arc::new(Keys(vec![1, 2, 3, 4, 5])), Arc::new(Keys(vec![])), Arc::new(Keys(vec![10, 11, 12]))];
        Scan::new(db, "test", "", parts, false).batch(2)
    }

    #[tokio::test]
    async fn a_scan_stops_after_its_batches_and_resumes_where_it_stopped() -> Result<()> {
        // Never contacted: the parts read nothing.
        let client = mongodb::Client::with_uri_str("mongodb://127.0.0.1:1").await.expect("a client");
        let db = client.database("unused");
        let batches = Arc::new(Mutex::new(Vec::new()));
        let seen = batches.clone();
        let all = scan(&db).on_progress(move |p| seen.lock().unwrap().push(p.batch)).run().await?;
        assert_eq!((all.scanned, all.checkpoint), (8, None));
        assert_eq!(*batches.lock().unwrap(), [2, 2, 1, 2, 1], "an empty page is not a batch");

        let first = scan(&db).max_batches(3).run().await?;
        assert_eq!(first.scanned, 5);
        assert_eq!(first.checkpoint, Some(Checkpoint { part: 0, after: Bson::Int32(5) }));
        let rest = scan(&db).resume(first.checkpoint).run().await?;
        assert_eq!((rest.scanned, rest.checkpoint), (3, None));

        // Stopped before its first batch: `MinKey`, and a resume starts the part over.
        let none = scan(&db).max_batches(0).run().await?;
        assert_eq!(none.checkpoint, Some(Checkpoint { part: 0, after: Bson::MinKey }));
        assert_eq!(scan(&db).resume(none.checkpoint).run().await?.scanned, 8);
        Ok(())
    }
}
