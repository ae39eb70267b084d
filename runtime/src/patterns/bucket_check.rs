//! Verify and repair of bucket documents (invariant I4 of the consistency
//! contract): in every bucket the `count` equals the array's length, no
//! page holds more than its `size`, and each parent's pages run 1, 2, 3, ..
//! with no gap and no page twice (time buckets: no window twice, each
//! `start` on a window boundary).
//!
//! A scan reads the buckets parent by parent (in the order of the unique
//! `{parent, page}` index), the lengths computed by the server so the
//! elements never travel. A repair fixes what has one right answer: a
//! `count` that differs from the length is recounted by the server in one
//! pipeline update (`count = $size(array)`), atomic with concurrent
//! appends. The rest is reported, not touched, because fixing it means
//! moving elements between pages, which changes what readers of a page
//! see: a page over its size, a gap, a page stored twice (the unique index
//! of `ensure_indexes` prevents that one), a misaligned window.
//!
//! Resumable from a checkpoint (the last parent done) and idempotent.

use crate::error::{show_id, Error, Result};
use crate::schema::document::{BucketSpec, Document, Relation, RelationKind, Schema};
use crate::schema::registry::sorted;
use crate::store::primary;
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::Database;

/// How many problems a report describes in words (all are counted).
pub const PROBLEMS_LISTED: usize = 20;

/// One bucket array of one document type.
#[derive(Debug, Clone, Copy)]
pub struct BucketArray {
    /// The bucket document type.
    pub schema: &'static Schema,
    /// The array.
    pub rel: &'static Relation,
    /// How buckets are keyed and filled.
    pub spec: &'static BucketSpec,
}

impl BucketArray {
    /// `comments.comments`
    pub fn label(&self) -> String {
        format!("{}.{}", self.schema.collection, self.rel.field)
    }
    /// The field ordering a parent's buckets: the page, or the window start.
    fn order(&self) -> &'static str {
        if self.spec.window_ms.is_some() {
            self.spec.start
        } else {
            self.spec.page
        }
    }
}

/// Every bucket array of the program, by collection.
///
/// ```
/// # use docrel::{Document, bson::oid::ObjectId};
/// # use serde::{Deserialize, Serialize};
/// # #[derive(Document, Serialize, Deserialize)]
/// # #[document(collection = "posts")]
/// # struct Post { #[serde(rename = "_id")] id: i32 }
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "comment_pages")]
/// struct CommentPage {
///     #[serde(rename = "_id")] id: ObjectId,
///     #[parent_ref(to = Post)] post: i32,
///     page: i32,
///     count: i32,
///     #[bucket(size = 50)] comments: Vec<String>,
/// }
/// let arrays = docrel::bucket_check::bucket_arrays();
/// assert!(arrays.iter().any(|a| a.label() == "comment_pages.comments"));
/// ```
pub fn bucket_arrays() -> Vec<BucketArray> {
    let mut out = Vec::new();
    for schema in sorted() {
        for rel in schema.relations {
            if let (RelationKind::Bucket, Some(spec)) = (rel.kind, rel.bucket.as_ref()) {
                out.push(BucketArray { schema, rel, spec });
            }
        }
    }
    out
}

/// Where a scan stopped.
#[derive(Debug, Clone, PartialEq)]
pub struct BucketCheckpoint {
    /// Index of the array, in the scan's list.
    pub array: usize,
    /// The last parent done.
    pub after: Bson,
}

/// Counts of a scan.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BucketReport {
    /// Bucket documents read.
    pub scanned: u64,
    /// Parents whose buckets were checked.
    pub parents: u64,
    /// Buckets whose `count` is not the length of their array.
    pub miscounted: u64,
    /// Buckets holding more than `size` elements.
    pub over_size: u64,
    /// Missing pages (a parent with pages 1, 2, 4 has one).
    pub gaps: u64,
    /// Pages (or windows) stored more than once.
    pub duplicates: u64,
    /// Time buckets whose `start` is not on a window boundary.
    pub misaligned: u64,
    /// Buckets recounted.
    pub fixed: u64,
    /// Problems a repair leaves as they are (everything but a count).
    pub unfixable: u64,
    /// The first [`PROBLEMS_LISTED`] problems, in words.
    pub problems: Vec<String>,
    /// Where to resume, when the scan stopped early.
    pub checkpoint: Option<BucketCheckpoint>,
}

impl BucketReport {
    /// Whether the scan found nothing wrong.
    pub fn clean(&self) -> bool {
        self.miscounted + self.over_size + self.gaps + self.duplicates + self.misaligned == 0
    }
    fn note(&mut self, problem: String) {
        if self.problems.len() < PROBLEMS_LISTED {
            self.problems.push(problem);
        }
    }
    /// Adds the counts of `other` (a later part of the same scan).
    pub fn add(&mut self, other: &BucketReport) {
        self.scanned += other.scanned;
        self.parents += other.parents;
        self.miscounted += other.miscounted;
        self.over_size += other.over_size;
        self.gaps += other.gaps;
        self.duplicates += other.duplicates;
        self.misaligned += other.misaligned;
        self.fixed += other.fixed;
        self.unfixable += other.unfixable;
        for p in &other.problems {
            self.note(p.clone());
        }
        self.checkpoint = other.checkpoint.clone();
    }
}

/// A progress report, after each batch.
#[derive(Debug, Clone)]
pub struct BucketProgress<'a> {
    /// The array being scanned.
    pub array: &'a BucketArray,
    /// Buckets read in this batch.
    pub batch: u64,
    /// The counts so far.
    pub report: &'a BucketReport,
}

type OnProgress<'a> = Box<dyn FnMut(&BucketProgress<'_>) + Send + Sync + 'a>;

/// A verify or repair of bucket arrays; from [`verify`], [`repair`],
/// [`verify_collection`], [`repair_collection`], [`verify_all`], [`repair_all`].
#[must_use = "a BucketScan does nothing until run"]
pub struct BucketScan<'a> {
    db: &'a Database,
    arrays: Vec<BucketArray>,
    fix: bool,
    batch: usize,
    resume: Option<BucketCheckpoint>,
    max_batches: Option<usize>,
    on_progress: Option<OnProgress<'a>>,
}

impl std::fmt::Debug for BucketScan<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BucketScan")
            .field("arrays", &self.arrays.iter().map(BucketArray::label).collect::<Vec<_>>())
            .field("fix", &self.fix)
            .field("batch", &self.batch)
            .finish()
    }
}

/// Reports the bucket documents of `B` that break I4, without writing.
///
/// ```
/// # docrel::testing::doc_test(|db| async move {
/// # use docrel::{Document, bson::{doc, oid::ObjectId}};
/// # use serde::{Deserialize, Serialize};
/// # #[derive(Document, Serialize, Deserialize)]
/// # #[document(collection = "posts")]
/// # struct Post { #[serde(rename = "_id")] id: i32 }
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "comment_pages")]
/// struct CommentPage {
///     #[serde(rename = "_id")] id: ObjectId,
///     #[parent_ref(to = Post)] post: i32,
///     page: i32,
///     count: i32,
///     #[bucket(size = 2)] comments: Vec<String>,
/// }
/// // Written behind docrel's back: a count of 5 for 1 comment, and no page 2.
/// db.collection("comment_pages").insert_many([
///     doc! {"post": 1, "page": 1, "count": 5, "comments": ["hi"]},
///     doc! {"post": 1, "page": 3, "count": 1, "comments": ["late"]},
/// ]).await.unwrap();
///
/// let found = docrel::bucket_check::verify::<CommentPage>(&db).run().await?;
/// assert_eq!((found.miscounted, found.gaps), (1, 1));
/// let repaired = docrel::bucket_check::repair::<CommentPage>(&db).run().await?;
/// assert_eq!((repaired.fixed, repaired.unfixable), (1, 1)); // the gap stays, reported
/// # Ok(()) });
/// ```
pub fn verify<B: Document>(db: &Database) -> BucketScan<'_> {
    BucketScan::new(db, arrays_of(B::COLLECTION), false)
}

/// Like [`verify`], and recounts every `count` that differs from its array.
pub fn repair<B: Document>(db: &Database) -> BucketScan<'_> {
    BucketScan::new(db, arrays_of(B::COLLECTION), true)
}

/// [`verify`] of the bucket arrays of a collection named at run time; an
/// error naming the known ones when it has none.
pub fn verify_collection<'a>(db: &'a Database, collection: &str) -> Result<BucketScan<'a>> {
    Ok(BucketScan::new(db, known(collection)?, false))
}

/// [`repair`] of the bucket arrays of a collection named at run time.
pub fn repair_collection<'a>(db: &'a Database, collection: &str) -> Result<BucketScan<'a>> {
    Ok(BucketScan::new(db, known(collection)?, true))
}

/// [`verify`] of every bucket array of the program.
pub fn verify_all(db: &Database) -> BucketScan<'_> {
    BucketScan::new(db, bucket_arrays(), false)
}

/// [`repair`] of every bucket array of the program.
pub fn repair_all(db: &Database) -> BucketScan<'_> {
    BucketScan::new(db, bucket_arrays(), true)
}

/// A scan of the given arrays (from [`bucket_arrays`]): `fix` repairs.
pub fn scan(db: &Database, arrays: Vec<BucketArray>, fix: bool) -> BucketScan<'_> {
    BucketScan::new(db, arrays, fix)
}

fn arrays_of(collection: &str) -> Vec<BucketArray> {
    bucket_arrays().into_iter().filter(|a| a.schema.collection == collection).collect()
}

fn known(collection: &str) -> Result<Vec<BucketArray>> {
    let found = arrays_of(collection);
    if found.is_empty() {
        let mut known: Vec<&str> = bucket_arrays().iter().map(|a| a.schema.collection).collect();
        known.dedup();
        return Err(Error::Invalid {
            what: crate::error::Misuse::Collection,
            message: format!(
                "collection `{collection}` holds no `#[bucket(..)]` array; the bucket collections of this program \
                 are: [{}]. Check the name, and that the types are linked into this binary",
                known.join(", ")
            ),
        });
    }
    Ok(found)
}

/// One bucket as the scan sees it.
#[derive(Debug)]
struct Seen {
    id: Bson,
    parent: Bson,
    key: Option<Bson>,
    count: Option<i64>,
    len: i64,
}

fn as_i64(v: Option<&Bson>) -> Option<i64> {
    match v? {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        Bson::Double(d) if d.fract() == 0.0 => Some(*d as i64),
        _ => None,
    }
}

impl<'a> BucketScan<'a> {
    fn new(db: &'a Database, arrays: Vec<BucketArray>, fix: bool) -> Self {
        BucketScan { db, arrays, fix, batch: 500, resume: None, max_batches: None, on_progress: None }
    }

    /// Buckets read per batch (one round trip; a parent is never split).
    pub fn batch(mut self, n: usize) -> Self {
        self.batch = n.max(1);
        self
    }
    /// Continues a scan that stopped at `checkpoint`.
    pub fn resume(mut self, checkpoint: Option<BucketCheckpoint>) -> Self {
        self.resume = checkpoint;
        self
    }
    /// Stops after `n` batches, returning a checkpoint.
    pub fn max_batches(mut self, n: usize) -> Self {
        self.max_batches = Some(n);
        self
    }
    /// Calls `f` after each batch.
    pub fn on_progress(mut self, f: impl FnMut(&BucketProgress<'_>) + Send + Sync + 'a) -> Self {
        self.on_progress = Some(Box::new(f));
        self
    }
    /// The arrays this scan covers, in order.
    pub fn arrays(&self) -> &[BucketArray] {
        &self.arrays
    }

    /// Runs the scan.
    pub async fn run(mut self) -> Result<BucketReport> {
        crate::client::trace::Op::new("verify_buckets", "")
            .run(async move {
                let mut report = BucketReport::default();
                let mut batches = 0usize;
                let start = self.resume.take();
                let arrays = self.arrays.clone();
                for (index, array) in arrays.iter().enumerate() {
                    let mut after = match &start {
                        Some(cp) if index < cp.array => continue,
                        Some(cp) if index == cp.array => Some(cp.after.clone()),
                        _ => None,
                    };
                    loop {
                        if self.max_batches.is_some_and(|m| batches >= m) {
                            report.checkpoint =
                                Some(BucketCheckpoint { array: index, after: after.unwrap_or(Bson::MinKey) });
                            return Ok(report);
                        }
                        let before = report.scanned;
                        let Some(last) = self.one_batch(array, after.as_ref(), &mut report).await? else { break };
                        after = Some(last);
                        batches += 1;
                        if let Some(f) = self.on_progress.as_mut() {
                            f(&BucketProgress { array, batch: report.scanned - before, report: &report });
                        }
                    }
                }
                Ok(report)
            })
            .await
    }

    /// The buckets of parents after `after`, `limit` of them (all of one
    /// parent when `parent` is given).
    async fn buckets(&self, array: &BucketArray, filter: BsonDoc, limit: Option<usize>) -> Result<Vec<Seen>> {
        let spec = array.spec;
        let collection = array.schema.collection;
        let mut pipeline =
            vec![doc! {"$match": filter}, doc! {"$sort": { spec.parent: 1, array.order(): 1, "_id": 1 }}];
        if let Some(limit) = limit {
            pipeline.push(doc! {"$limit": limit as i64});
        }
        let field = format!("${}", array.rel.field);
        // A time bucket is keyed by its window and spill number (none in a
        // window's first bucket: 1).
        let key: Bson = match spec.window_ms {
            Some(_) => {
                vec![Bson::String(format!("${}", spec.start)), doc! {"$ifNull": [format!("${}", spec.page), 1]}.into()]
                    .into()
            }
            None => format!("${}", spec.page).into(),
        };
        pipeline.push(doc! {"$project": {
            "_id": 1,
            "p": format!("${}", spec.parent),
            "k": key,
            "c": format!("${}", spec.count),
            "n": {"$cond": [{"$isArray": &field}, {"$size": &field}, 0]},
        }});
        let mut cursor = self
            .db
            .collection::<BsonDoc>(collection)
            .aggregate(pipeline)
            .selection_criteria(primary())
            .await
            .map_err(|e| Error::driver("aggregate", collection, e))?;
        let mut out = Vec::new();
        while cursor.advance().await.map_err(|e| Error::driver("aggregate", collection, e))? {
            let d: BsonDoc = cursor.deserialize_current().map_err(|e| Error::driver("aggregate", collection, e))?;
            out.push(Seen {
                id: d.get("_id").cloned().unwrap_or(Bson::Null),
                parent: d.get("p").cloned().unwrap_or(Bson::Null),
                key: d.get("k").cloned(),
                count: as_i64(d.get("c")),
                len: as_i64(d.get("n")).unwrap_or(0),
            });
        }
        Ok(out)
    }

    /// One batch of parents; the last parent done, or `None` at the end.
    async fn one_batch(
        &self,
        array: &BucketArray,
        after: Option<&Bson>,
        report: &mut BucketReport,
    ) -> Result<Option<Bson>> {
        let spec = array.spec;
        let filter = match after {
            Some(after) => doc! { spec.parent: {"$gt": after.clone()} },
            None => doc! {},
        };
        let mut seen = self.buckets(array, filter, Some(self.batch)).await?;
        let Some(last) = seen.last().map(|s| s.parent.clone()) else { return Ok(None) };
        if seen.len() >= self.batch {
            // The last parent may go on past the batch: read all of it.
            seen.retain(|s| s.parent != last);
            seen.extend(self.buckets(array, doc! { spec.parent: last.clone() }, None).await?);
        }
        let mut start = 0;
        while start < seen.len() {
            let end =
                seen[start..].iter().position(|s| s.parent != seen[start].parent).map_or(seen.len(), |n| start + n);
            self.check_parent(array, &seen[start..end], report).await?;
            start = end;
        }
        Ok(Some(last))
    }

    async fn check_parent(&self, array: &BucketArray, buckets: &[Seen], report: &mut BucketReport) -> Result<()> {
        let spec = array.spec;
        let label = array.label();
        report.parents += 1;
        let parent = buckets.first().map(|b| show_id(&b.parent)).unwrap_or_default();
        for b in buckets {
            report.scanned += 1;
            if b.count != Some(b.len) {
                report.miscounted += 1;
                let what = format!(
                    "{label}: bucket {} of parent {parent} has `{}` {} but holds {}",
                    show_id(&b.id),
                    spec.count,
                    b.count.map_or_else(|| "missing".to_owned(), |c| c.to_string()),
                    b.len
                );
                report.note(format!("{what}: {}", if self.fix { "recounted" } else { "repair recounts it" }));
                if self.fix {
                    report.fixed += self.recount(array, b).await?;
                }
            }
            if let Some(size) = spec.bound() {
                if b.len > i64::from(size) {
                    report.over_size += 1;
                    report.unfixable += 1;
                    report.note(format!(
                        "{label}: bucket {} of parent {parent} holds {} elements, over its size {size}: move the \
                         extra ones to a new page by hand",
                        show_id(&b.id),
                        b.len
                    ));
                }
            }
        }
        let keys: Vec<&Bson> = buckets.iter().filter_map(|b| b.key.as_ref()).collect();
        let mut distinct: Vec<(&Bson, u64)> = Vec::new();
        for k in &keys {
            match distinct.iter_mut().find(|(d, _)| d == k) {
                Some((_, n)) => *n += 1,
                None => distinct.push((k, 1)),
            }
        }
        for (k, n) in distinct.into_iter().filter(|(_, n)| *n > 1) {
            report.duplicates += n - 1;
            report.unfixable += n - 1;
            report.note(format!(
                "{label}: parent {parent} has `{}` {} stored {n} times: merge the buckets by hand, then run \
                 `ensure_indexes` (its unique index prevents this)",
                array.order(),
                show_id(k)
            ));
        }
        match spec.window_ms {
            None => {
                let mut pages: Vec<i64> = keys.iter().filter_map(|k| as_i64(Some(k))).collect();
                pages.sort_unstable();
                pages.dedup();
                let mut expected = 1;
                for page in pages {
                    if page > expected {
                        let missing = (page - expected) as u64;
                        report.gaps += missing;
                        report.unfixable += missing;
                        report.note(format!(
                            "{label}: parent {parent} has no page {}{}: readers of that page number find nothing; \
                             renumber the pages by hand",
                            expected,
                            if missing > 1 { format!("..{}", page - 1) } else { String::new() }
                        ));
                    }
                    if page >= expected {
                        expected = page + 1;
                    }
                }
            }
            Some(window) => {
                for k in &keys {
                    let Some(Bson::DateTime(start)) = k.as_array().and_then(|k| k.first()) else { continue };
                    if start.timestamp_millis().rem_euclid(window) != 0 {
                        report.misaligned += 1;
                        report.unfixable += 1;
                        report.note(format!(
                            "{label}: parent {parent} has a bucket starting at {start}, not on a {window} ms \
                             boundary: appends never reach it; move its elements by hand"
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Sets the bucket's count to its array's length, on the server. The
    /// filter carries the parent and page (or start) besides the `_id`: a
    /// bucket collection's shard key is drawn from them, so the write
    /// reaches one shard.
    async fn recount(&self, array: &BucketArray, b: &Seen) -> Result<u64> {
        let collection = array.schema.collection;
        let field = format!("${}", array.rel.field);
        let mut filter = doc! {"_id": b.id.clone(), array.spec.parent: b.parent.clone()};
        if let Some(key) = &b.key {
            filter.insert(array.order(), key.clone());
        }
        let update = vec![doc! {"$set": {
            array.spec.count: {"$cond": [{"$isArray": &field}, {"$size": &field}, 0]},
        }}];
        let r = self
            .db
            .collection::<BsonDoc>(collection)
            .update_one(filter, update)
            .await
            .map_err(|e| Error::driver("update", collection, e))?;
        Ok(r.modified_count)
    }
}
