//! Verify and repair of two-way references (invariant I2 of the
//! consistency contract): both sides of every `inverse = ..` pair agree,
//! so `person.tasks` holds a task exactly when `task.owner` is that person.
//!
//! A scan reads one side in batches of `_id` order and, for each batch, the
//! documents of the other side it names (one `$in` read), then does the same
//! from the other side. It is resumable from a checkpoint and idempotent:
//! every fix is a `$pull` or a bounded `$addToSet`, so running it again (or
//! resuming after a stop in the middle of a batch) fixes nothing twice.
//!
//! # Which side wins
//!
//! A disagreement has to be settled by one side. The rule, per shape:
//!
//! - **1:N** (an array on one side, a single reference on the other, like
//!   `person.tasks` and `task.owner`): the **single reference is the
//!   truth**. It is what a document says about itself, it cannot hold two
//!   values, and `reassign` writes it first. A task listed by a person it
//!   does not name as owner is pulled from that person's array; a task
//!   naming an owner whose array lacks it is added there (under the array's
//!   bound). A task whose owner does not exist cannot be fixed here: it is
//!   reported (reassign or delete the task).
//! - **N:M** (arrays on both sides, like `book.authors` and `author.books`):
//!   the **union**: a link either side records is kept and written on the
//!   other side, since losing a link is worse than keeping one that a
//!   single `unlink` removes.
//! - **1:1** (single references on both sides): neither side is more
//!   trustworthy, so a disagreement is reported and not repaired (fix it
//!   with `link`, which writes both sides).
//!
//! On either shape an id whose document does not exist is dangling: it is
//! pulled from an array (no link can lead to a missing document), and
//! reported where it is a single reference. Arrays of `{id, ..}` elements
//! are only pulled from, never added to: the other fields of a new element
//! are not known here (add it with the update builder).
//!
//! Scans read the primary. A link written while a scan runs may be
//! reported (verify) or, rarely, undone (repair) if it lands between the
//! read and the fix: repair on a quiet database, or run verify again after.

use crate::error::{show_id, Error, Result};
use crate::schema::document::{Document, Relation, RelationKind, Schema};
use crate::schema::graph::graph;
use crate::schema::registry::sorted;
use crate::store::primary;
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::Database;

/// How many problems a report describes in words (all are counted).
pub const PROBLEMS_LISTED: usize = 20;

/// One side of a two-way reference.
#[derive(Debug, Clone, Copy)]
pub struct Side {
    /// The type declaring it.
    pub schema: &'static Schema,
    /// The reference.
    pub rel: &'static Relation,
}

impl Side {
    /// The collection the side lives in.
    pub fn collection(&self) -> &'static str {
        self.schema.collection
    }
    /// Whether it is an array of references.
    pub fn many(&self) -> bool {
        matches!(self.rel.kind, RelationKind::RefMany { .. })
    }
    fn key(&self) -> Option<&'static str> {
        match self.rel.kind {
            RelationKind::RefMany { key, .. } => key,
            _ => None,
        }
    }
    fn max(&self) -> Option<u32> {
        match self.rel.kind {
            RelationKind::RefMany { max, .. } => max,
            _ => None,
        }
    }
    /// `people.tasks`
    pub fn label(&self) -> String {
        format!("{}.{}", self.schema.collection, self.rel.field)
    }
    /// The ids this side of `d` refers to.
    fn ids(&self, d: &BsonDoc) -> Vec<Bson> {
        let Some(value) = d.get(self.rel.field) else { return Vec::new() };
        match (value, self.key()) {
            (Bson::Array(items), None) => items.iter().filter(|i| **i != Bson::Null).cloned().collect(),
            (Bson::Array(items), Some(key)) => {
                items.iter().filter_map(Bson::as_document).filter_map(|e| e.get(key).cloned()).collect()
            }
            (Bson::Null, _) => Vec::new(),
            (single, _) if !self.many() => vec![single.clone()],
            _ => Vec::new(),
        }
    }
    /// The filter matching documents of this side holding `id`.
    fn holding(&self, id: &Bson) -> BsonDoc {
        doc! { self.rel.id_path(): id.clone() }
    }
    /// The update taking `id` out of this side.
    fn pull(&self, id: &Bson) -> BsonDoc {
        match self.key() {
            Some(key) => doc! {"$pull": { self.rel.field: { key: id.clone() } }},
            None => doc! {"$pull": { self.rel.field: id.clone() }},
        }
    }
}

/// The shape of a two-way pair, which decides who wins a repair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// An array (side `a`) against a single reference (side `b`): `b` is the truth.
    OneToMany,
    /// Arrays on both sides: the union of both is kept.
    ManyToMany,
    /// Single references on both sides: reported, not repaired.
    OneToOne,
}

/// Both sides of one two-way reference.
#[derive(Debug, Clone, Copy)]
pub struct Pair {
    /// The array side for 1:N; the first by `collection.field` otherwise.
    pub a: Side,
    /// The other side.
    pub b: Side,
    /// The shape.
    pub shape: Shape,
}

impl Pair {
    /// `people.tasks <-> tasks.owner`
    pub fn label(&self) -> String {
        format!("{} <-> {}", self.a.label(), self.b.label())
    }
    /// Whether `collection` holds either side.
    pub fn involves(&self, collection: &str) -> bool {
        self.a.collection() == collection || self.b.collection() == collection
    }
    /// The side to scan in pass `side` (0: `a`, 1: `b`), and its other side.
    fn sides(&self, side: u8) -> (Side, Side) {
        if side == 0 {
            (self.a, self.b)
        } else {
            (self.b, self.a)
        }
    }
}

/// Every two-way reference of the program, each pair once, ordered by the
/// `collection.field` of its sides.
///
/// ```
/// # use docrel::{Document, bson::oid::ObjectId};
/// # use serde::{Deserialize, Serialize};
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "people")]
/// struct Person {
///     #[serde(rename = "_id")] id: ObjectId,
///     #[reference(many, to = Task, inverse = owner, max = 500)] tasks: Vec<ObjectId>,
/// }
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "tasks")]
/// struct Task {
///     #[serde(rename = "_id")] id: ObjectId,
///     #[reference(to = Person, inverse = tasks)] owner: ObjectId,
/// }
/// let pairs = docrel::inverse_check::pairs();
/// let pair = pairs.iter().find(|p| p.involves("people")).unwrap();
/// assert_eq!(pair.label(), "people.tasks <-> tasks.owner");
/// assert_eq!(pair.shape, docrel::inverse_check::Shape::OneToMany);
/// ```
pub fn pairs() -> Vec<Pair> {
    let mut out: Vec<Pair> = Vec::new();
    for schema in sorted() {
        for rel in schema.relations.iter().filter(|r| r.inverse.is_some()) {
            let Some((other_schema, other_rel)) = graph().inverse_of(rel) else { continue };
            let here = Side { schema, rel };
            let there = Side { schema: other_schema, rel: other_rel };
            let seen = out.iter().any(|p| {
                let same = |x: &Side, y: &Side| std::ptr::eq(x.rel, y.rel) && std::ptr::eq(x.schema, y.schema);
                (same(&p.a, &here) && same(&p.b, &there)) || (same(&p.a, &there) && same(&p.b, &here))
            });
            if seen || !(here.rel.is_reference() && there.rel.is_reference()) {
                continue;
            }
            let (a, b, shape) = match (here.many(), there.many()) {
                (true, false) => (here, there, Shape::OneToMany),
                (false, true) => (there, here, Shape::OneToMany),
                (true, true) => (here, there, Shape::ManyToMany),
                (false, false) => (here, there, Shape::OneToOne),
            };
            out.push(Pair { a, b, shape });
        }
    }
    out
}

/// Where a scan stopped.
#[derive(Debug, Clone, PartialEq)]
pub struct InverseCheckpoint {
    /// Index of the pair, in the scan's list of pairs.
    pub pair: usize,
    /// 0 while scanning side `a`, 1 for side `b`.
    pub side: u8,
    /// The last `_id` done on that side.
    pub after: Bson,
}

/// Counts of a scan.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InverseReport {
    /// Documents read (both sides).
    pub scanned: u64,
    /// Links recorded on one side only.
    pub mismatched: u64,
    /// References to documents that do not exist.
    pub dangling: u64,
    /// Writes that fixed something (a pull or an add).
    pub fixed: u64,
    /// Problems a repair cannot fix (single references to missing
    /// documents, full arrays, 1:1 disagreements, `{id, ..}` elements to add).
    pub unfixable: u64,
    /// The first [`PROBLEMS_LISTED`] problems, in words.
    pub problems: Vec<String>,
    /// Where to resume, when the scan stopped early.
    pub checkpoint: Option<InverseCheckpoint>,
}

impl InverseReport {
    /// Whether the scan found nothing wrong.
    pub fn clean(&self) -> bool {
        self.mismatched == 0 && self.dangling == 0
    }
    fn note(&mut self, problem: String) {
        if self.problems.len() < PROBLEMS_LISTED {
            self.problems.push(problem);
        }
    }
    /// Adds the counts of `other` (a later part of the same scan).
    pub fn add(&mut self, other: &InverseReport) {
        self.scanned += other.scanned;
        self.mismatched += other.mismatched;
        self.dangling += other.dangling;
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
pub struct InverseProgress<'a> {
    /// The pair being scanned.
    pub pair: &'a Pair,
    /// The side being read.
    pub side: &'a Side,
    /// Documents read in this batch.
    pub batch: u64,
    /// The counts so far.
    pub report: &'a InverseReport,
}

type OnProgress<'a> = Box<dyn FnMut(&InverseProgress<'_>) + Send + Sync + 'a>;

/// A verify or repair of two-way references; from [`verify`], [`repair`],
/// [`verify_collection`], [`repair_collection`] or [`verify_all`]/[`repair_all`].
#[must_use = "an InverseScan does nothing until run"]
pub struct InverseScan<'a> {
    db: &'a Database,
    pairs: Vec<Pair>,
    fix: bool,
    batch: usize,
    resume: Option<InverseCheckpoint>,
    max_batches: Option<usize>,
    on_progress: Option<OnProgress<'a>>,
}

impl std::fmt::Debug for InverseScan<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InverseScan")
            .field("pairs", &self.pairs.iter().map(Pair::label).collect::<Vec<_>>())
            .field("fix", &self.fix)
            .field("batch", &self.batch)
            .finish()
    }
}

/// Reports the two-way references of `T` (declared on it or pointing at
/// it) whose sides disagree, without writing anything.
///
/// ```
/// # docrel::testing::doc_test(|db| async move {
/// # use docrel::{Document, bson::{doc, oid::ObjectId}};
/// # use serde::{Deserialize, Serialize};
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "people")]
/// struct Person {
///     #[serde(rename = "_id")] id: i32,
///     #[reference(many, to = Task, inverse = owner, max = 500)] tasks: Vec<i32>,
/// }
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "tasks")]
/// struct Task {
///     #[serde(rename = "_id")] id: i32,
///     #[reference(to = Person, inverse = tasks)] owner: i32,
/// }
/// // Written behind docrel's back: task 7 names person 1, who does not list it.
/// db.collection("people").insert_one(doc! {"_id": 1, "tasks": []}).await.unwrap();
/// db.collection("tasks").insert_one(doc! {"_id": 7, "owner": 1}).await.unwrap();
///
/// let found = docrel::inverse_check::verify::<Person>(&db).run().await?;
/// assert_eq!((found.mismatched, found.fixed), (1, 0));
/// let fixed = docrel::inverse_check::repair::<Person>(&db).run().await?;
/// assert_eq!(fixed.fixed, 1); // task.owner is the truth: 7 was added to person 1
/// assert!(docrel::inverse_check::verify::<Task>(&db).run().await?.clean());
/// # Ok(()) });
/// ```
pub fn verify<T: Document>(db: &Database) -> InverseScan<'_> {
    InverseScan::new(db, pairs().into_iter().filter(|p| p.involves(T::COLLECTION)).collect(), false)
}

/// Like [`verify`], and fixes what it can (see the module docs for which
/// side wins).
pub fn repair<T: Document>(db: &Database) -> InverseScan<'_> {
    InverseScan::new(db, pairs().into_iter().filter(|p| p.involves(T::COLLECTION)).collect(), true)
}

/// [`verify`] of the pairs involving a collection named at run time (for
/// command lines); an error naming the known ones when none does.
pub fn verify_collection<'a>(db: &'a Database, collection: &str) -> Result<InverseScan<'a>> {
    Ok(InverseScan::new(db, pairs_of(collection)?, false))
}

/// [`repair`] of the pairs involving a collection named at run time.
pub fn repair_collection<'a>(db: &'a Database, collection: &str) -> Result<InverseScan<'a>> {
    Ok(InverseScan::new(db, pairs_of(collection)?, true))
}

/// [`verify`] of every two-way reference of the program.
pub fn verify_all(db: &Database) -> InverseScan<'_> {
    InverseScan::new(db, pairs(), false)
}

/// [`repair`] of every two-way reference of the program.
pub fn repair_all(db: &Database) -> InverseScan<'_> {
    InverseScan::new(db, pairs(), true)
}

/// A scan of the given pairs (from [`pairs`]): `fix` repairs.
pub fn scan(db: &Database, pairs: Vec<Pair>, fix: bool) -> InverseScan<'_> {
    InverseScan::new(db, pairs, fix)
}

fn pairs_of(collection: &str) -> Result<Vec<Pair>> {
    let all = pairs();
    let found: Vec<Pair> = all.iter().copied().filter(|p| p.involves(collection)).collect();
    if found.is_empty() {
        let mut known: Vec<&str> = all.iter().flat_map(|p| [p.a.collection(), p.b.collection()]).collect();
        known.sort_unstable();
        known.dedup();
        return Err(Error::Invalid {
            what: crate::error::Misuse::Collection,
            message: format!(
                "no two-way reference (`inverse = ..`) involves collection `{collection}`; the collections with \
                 two-way references in this program are: [{}]. Check the name, and that the types are linked into \
                 this binary",
                known.join(", ")
            ),
        });
    }
    Ok(found)
}

impl<'a> InverseScan<'a> {
    fn new(db: &'a Database, pairs: Vec<Pair>, fix: bool) -> Self {
        InverseScan { db, pairs, fix, batch: 500, resume: None, max_batches: None, on_progress: None }
    }

    /// Documents read per batch (one round trip, plus one for the other side).
    pub fn batch(mut self, n: usize) -> Self {
        self.batch = n.max(1);
        self
    }
    /// Continues a scan that stopped at `checkpoint`.
    pub fn resume(mut self, checkpoint: Option<InverseCheckpoint>) -> Self {
        self.resume = checkpoint;
        self
    }
    /// Stops after `n` batches, returning a checkpoint.
    pub fn max_batches(mut self, n: usize) -> Self {
        self.max_batches = Some(n);
        self
    }
    /// Calls `f` after each batch.
    pub fn on_progress(mut self, f: impl FnMut(&InverseProgress<'_>) + Send + Sync + 'a) -> Self {
        self.on_progress = Some(Box::new(f));
        self
    }
    /// The pairs this scan covers, in order.
    pub fn pairs(&self) -> &[Pair] {
        &self.pairs
    }

    /// Runs the scan.
    pub async fn run(mut self) -> Result<InverseReport> {
        crate::client::trace::Op::new("verify_inverses", "")
            .run(async move {
                let mut report = InverseReport::default();
                let mut batches = 0usize;
                let start = self.resume.take();
                let pairs = self.pairs.clone();
                for (index, pair) in pairs.iter().enumerate() {
                    for side in 0..2u8 {
                        let mut after = match &start {
                            Some(cp) if (index, side) < (cp.pair, cp.side) => continue,
                            Some(cp) if (index, side) == (cp.pair, cp.side) => Some(cp.after.clone()),
                            _ => None,
                        };
                        loop {
                            if self.max_batches.is_some_and(|m| batches >= m) {
                                report.checkpoint =
                                    Some(InverseCheckpoint { pair: index, side, after: after.unwrap_or(Bson::MinKey) });
                                return Ok(report);
                            }
                            let before = report.scanned;
                            let Some(last) = self.one_batch(pair, side, after.as_ref(), &mut report).await? else {
                                break;
                            };
                            after = Some(last);
                            batches += 1;
                            let (near, _) = pair.sides(side);
                            if let Some(f) = self.on_progress.as_mut() {
                                f(&InverseProgress {
                                    pair,
                                    side: &near,
                                    batch: report.scanned - before,
                                    report: &report,
                                });
                            }
                        }
                    }
                }
                Ok(report)
            })
            .await
    }

    /// One batch of side `side` of `pair`; the last `_id` read, or `None` at the end.
    async fn one_batch(
        &self,
        pair: &Pair,
        side: u8,
        after: Option<&Bson>,
        report: &mut InverseReport,
    ) -> Result<Option<Bson>> {
        let (near, far) = pair.sides(side);
        let mut filter = doc! { near.rel.id_path(): {"$exists": true} };
        if let Some(after) = after {
            filter.insert("_id", doc! {"$gt": after.clone()});
        }
        let docs =
            read(self.db, near.collection(), filter, doc! {"_id": 1, near.rel.field: 1}, Some(self.batch)).await?;
        let Some(last) = docs.last().and_then(|d| d.get("_id")).cloned() else { return Ok(None) };
        let mut wanted: Vec<Bson> = Vec::new();
        for d in &docs {
            for id in near.ids(d) {
                if !wanted.contains(&id) {
                    wanted.push(id);
                }
            }
        }
        let others = if wanted.is_empty() {
            Vec::new()
        } else {
            read(self.db, far.collection(), doc! {"_id": {"$in": wanted}}, doc! {"_id": 1, far.rel.field: 1}, None)
                .await?
        };
        for d in &docs {
            report.scanned += 1;
            let Some(x) = d.get("_id") else { continue };
            for y in near.ids(d) {
                let other = others.iter().find(|o| o.get("_id") == Some(&y));
                match other {
                    None => {
                        report.dangling += 1;
                        self.dangling(near, x, &y, report).await?;
                    }
                    Some(o) if far.ids(o).contains(x) => {}
                    Some(o) => {
                        report.mismatched += 1;
                        self.mismatch(pair, near, far, x, &y, o, report).await?;
                    }
                }
            }
        }
        Ok(Some(last))
    }

    /// `x` (on `near`) refers to `y`, which does not exist.
    async fn dangling(&self, near: Side, x: &Bson, y: &Bson, report: &mut InverseReport) -> Result<()> {
        let what = format!("{} of {} refers to {}, which does not exist", near.label(), show_id(x), show_id(y));
        if !near.many() {
            report.unfixable += 1;
            report.note(format!("{what}: reassign or delete {}", show_id(x)));
            return Ok(());
        }
        report.note(format!("{what}: {}", if self.fix { "pulled" } else { "repair pulls it" }));
        if self.fix {
            report.fixed += self.write(near, doc! {"_id": x.clone()}, near.pull(y)).await?;
        }
        Ok(())
    }

    /// `x` (on `near`) refers to `y`, whose `far` side does not refer back.
    #[allow(clippy::too_many_arguments)]
    async fn mismatch(
        &self,
        pair: &Pair,
        near: Side,
        far: Side,
        x: &Bson,
        y: &Bson,
        other: &BsonDoc,
        report: &mut InverseReport,
    ) -> Result<()> {
        let back = far.ids(other);
        let what = format!(
            "{} of {} holds {} but {} of {} {}",
            near.label(),
            show_id(x),
            show_id(y),
            far.label(),
            show_id(y),
            match back.as_slice() {
                [] => "holds nothing".to_owned(),
                [one] if !far.many() => format!("is {}", show_id(one)),
                _ => format!("lacks {}", show_id(x)),
            }
        );
        match pair.shape {
            Shape::OneToOne => {
                report.unfixable += 1;
                report.note(format!("{what}: a 1:1 disagreement has no side that is the truth; relink with `link`"));
                Ok(())
            }
            // The array holds a link the single reference denies: pull it.
            Shape::OneToMany if near.many() => {
                report.note(format!("{what}: {}", if self.fix { "pulled" } else { "repair pulls it" }));
                if self.fix {
                    // Only while the single side still says otherwise.
                    let still = read(
                        self.db,
                        far.collection(),
                        doc! {"_id": y.clone(), far.rel.field: x.clone()},
                        doc! {"_id": 1},
                        Some(1),
                    )
                    .await?;
                    if still.is_empty() {
                        report.fixed += self.write(near, doc! {"_id": x.clone()}, near.pull(y)).await?;
                    }
                }
                Ok(())
            }
            // The single reference (or, N:M, either array) records a link the
            // other side lacks: add it there.
            Shape::OneToMany | Shape::ManyToMany => {
                if far.key().is_some() {
                    report.unfixable += 1;
                    report.note(format!(
                        "{what}: `{}` holds `{{id, ..}}` elements, whose other fields are not known here; add the \
                         element with the update builder",
                        far.label()
                    ));
                    return Ok(());
                }
                report.note(format!("{what}: {}", if self.fix { "added" } else { "repair adds it" }));
                if !self.fix {
                    return Ok(());
                }
                let mut filter = doc! {"_id": y.clone()};
                if let Some(max) = far.max() {
                    filter.insert(format!("{}.{}", far.rel.field, max.saturating_sub(1)), doc! {"$exists": false});
                }
                let n = self.write(far, filter, doc! {"$addToSet": { far.rel.field: x.clone() }}).await?;
                if n == 0 && !self.holds(far, y, x).await? {
                    report.unfixable += 1;
                    report.note(format!(
                        "{} of {} is full ({} ids): {} could not be added; raise the bound or unlink others",
                        far.label(),
                        show_id(y),
                        far.max().unwrap_or_default(),
                        show_id(x)
                    ));
                }
                report.fixed += n;
                Ok(())
            }
        }
    }

    async fn holds(&self, side: Side, id: &Bson, value: &Bson) -> Result<bool> {
        let mut filter = side.holding(value);
        filter.insert("_id", id.clone());
        Ok(!read(self.db, side.collection(), filter, doc! {"_id": 1}, Some(1)).await?.is_empty())
    }

    async fn write(&self, side: Side, filter: BsonDoc, update: BsonDoc) -> Result<u64> {
        let r = self
            .db
            .collection::<BsonDoc>(side.collection())
            .update_one(filter, update)
            .await
            .map_err(|e| Error::driver("update", side.collection(), e))?;
        Ok(r.modified_count)
    }
}

/// Reads documents (from the primary), in `_id` order when `limit` is given.
async fn read(
    db: &Database,
    collection: &str,
    filter: BsonDoc,
    projection: BsonDoc,
    limit: Option<usize>,
) -> Result<Vec<BsonDoc>> {
    let coll = db.collection::<BsonDoc>(collection);
    let mut find = coll.find(filter).projection(projection).selection_criteria(primary());
    if let Some(limit) = limit {
        find = find.sort(doc! {"_id": 1}).limit(limit as i64).batch_size(limit as u32);
    }
    let mut cursor = find.await.map_err(|e| Error::driver("find", collection, e))?;
    let mut out = Vec::new();
    while cursor.advance().await.map_err(|e| Error::driver("find", collection, e))? {
        out.push(cursor.deserialize_current().map_err(|e| Error::driver("find", collection, e))?);
    }
    Ok(out)
}
