//! Verify and repair of two-way references (invariant I2 of the
//! consistency contract): both sides of every `inverse = ..` pair agree,
//! so `person.tasks` holds a task exactly when `task.owner` is that person.
//!
//! A scan (on the engine of [`crate::store::scan`]) reads one side in
//! batches of `_id` order and, for each batch, the documents of the other
//! side it names (one `$in` read), then does the same from the other side.
//! It is resumable from a checkpoint and idempotent:
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
use crate::schema::document::{Relation, RelationKind, Schema};
use crate::schema::graph::Graph;
use crate::store::page::Page;
use crate::store::scan::{count, At, Parts, Report, ScanPart};
use crate::store::session::{collect, plain};
use futures::future::BoxFuture;
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::Database;
use std::sync::Arc;

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
/// let pairs = docrel::check::pairs();
/// let pair = pairs.iter().find(|p| p.involves("people")).unwrap();
/// assert_eq!(pair.label(), "people.tasks <-> tasks.owner");
/// assert_eq!(pair.shape, docrel::check::PairShape::OneToMany);
/// ```
pub fn pairs() -> Vec<Pair> {
    pairs_in(crate::schema::graph::graph())
}

/// [`pairs`] of the graph `g` (a database's, with its stored types).
pub(crate) fn pairs_in(g: &'static Graph) -> Vec<Pair> {
    let mut out: Vec<Pair> = Vec::new();
    for schema in g.types() {
        for rel in schema.relations.iter().filter(|r| r.inverse.is_some()) {
            let Some((other_schema, other_rel)) = g.inverse_of(rel) else { continue };
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

/// The parts of a scan of one pair: side `a`, then side `b`.
pub(crate) fn parts(pair: Pair) -> Parts {
    vec![Arc::new(SideScan { pair, side: 0 }), Arc::new(SideScan { pair, side: 1 })]
}

pub(crate) fn pairs_of(g: &'static Graph, collection: &str) -> Result<Vec<Pair>> {
    let all = pairs_in(g);
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

/// One side of a pair, scanned: each id its documents hold is looked up on
/// the other side.
struct SideScan {
    pair: Pair,
    /// 0 for side `a`, 1 for side `b`.
    side: u8,
}

impl ScanPart for SideScan {
    fn label(&self) -> String {
        format!("{} from {}", self.pair.label(), self.pair.sides(self.side).0.label())
    }

    fn collections(&self) -> Vec<&'static str> {
        vec![self.pair.a.collection(), self.pair.b.collection()]
    }

    fn total<'a>(&'a self, db: &'a Database) -> BoxFuture<'a, Result<u64>> {
        let (near, _) = self.pair.sides(self.side);
        Box::pin(count(db, near.collection(), doc! { near.rel.id_path(): {"$exists": true} }))
    }

    fn batch<'a>(&'a self, at: At<'a>, report: &'a mut Report) -> BoxFuture<'a, Result<Option<Bson>>> {
        Box::pin(self.one_batch(at, report))
    }
}

impl SideScan {
    /// One batch of the near side; the last `_id` read, or `None` at the end.
    async fn one_batch(&self, at: At<'_>, report: &mut Report) -> Result<Option<Bson>> {
        let (near, far) = self.pair.sides(self.side);
        let filter = doc! { near.rel.id_path(): {"$exists": true} };
        let page = Page { filter: &filter, after: at.after, size: at.size };
        let docs = page
            .docs(&at.db.collection::<BsonDoc>(near.collection()), doc! {"_id": 1, near.rel.field: 1}, None)
            .await?;
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
            read(at.db, far, doc! {"_id": {"$in": wanted}}, doc! {"_id": 1, far.rel.field: 1}).await?
        };
        for d in &docs {
            report.scanned += 1;
            let Some(x) = d.get("_id") else { continue };
            for y in near.ids(d) {
                match others.iter().find(|o| o.get("_id") == Some(&y)) {
                    None => {
                        report.dangling += 1;
                        self.dangling(at, x, &y, report).await?;
                    }
                    Some(o) if far.ids(o).contains(x) => {}
                    Some(o) => {
                        report.mismatched += 1;
                        self.mismatch(at, x, &y, o, report).await?;
                    }
                }
            }
        }
        Ok(Some(last))
    }

    /// `x` (on the near side) refers to `y`, which does not exist.
    async fn dangling(&self, at: At<'_>, x: &Bson, y: &Bson, report: &mut Report) -> Result<()> {
        let (near, _) = self.pair.sides(self.side);
        let what = || format!("{} of {} refers to {}, which does not exist", near.label(), show_id(x), show_id(y));
        if !near.many() {
            report.unfixable += 1;
            report.note(|| format!("{}: reassign or delete {}", what(), show_id(x)));
            return Ok(());
        }
        report.note(|| format!("{}: {}", what(), if at.fix { "pulled" } else { "repair pulls it" }));
        if at.fix {
            report.fixed += write(at.db, near, doc! {"_id": x.clone()}, near.pull(y)).await?;
        }
        Ok(())
    }

    /// `x` (on the near side) refers to `y`, whose far side (`other`) does
    /// not refer back.
    async fn mismatch(&self, at: At<'_>, x: &Bson, y: &Bson, other: &BsonDoc, report: &mut Report) -> Result<()> {
        let (near, far) = self.pair.sides(self.side);
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
        match self.pair.shape {
            Shape::OneToOne => {
                report.unfixable += 1;
                report.note(|| format!("{what}: a 1:1 disagreement has no side that is the truth; relink with `link`"));
                Ok(())
            }
            // The array holds a link the single reference denies: pull it.
            Shape::OneToMany if near.many() => {
                report.note(|| format!("{what}: {}", if at.fix { "pulled" } else { "repair pulls it" }));
                if at.fix {
                    report.fixed += pull_denied(at.db, near, far, x, y).await?;
                }
                Ok(())
            }
            // The single reference (or, N:M, either array) records a link the
            // other side lacks: add it there.
            Shape::OneToMany | Shape::ManyToMany => add_missing(at, far, x, y, what, report).await,
        }
    }
}

/// Pulls `y` from the array of `x` on `near`, while the single reference
/// of `y` on `far` still says otherwise; the fixes written.
async fn pull_denied(db: &Database, near: Side, far: Side, x: &Bson, y: &Bson) -> Result<u64> {
    let still = read(db, far, doc! {"_id": y.clone(), far.rel.field: x.clone()}, doc! {"_id": 1}).await?;
    if !still.is_empty() {
        return Ok(0);
    }
    write(db, near, doc! {"_id": x.clone()}, near.pull(y)).await
}

/// Adds `x` to `far` of `y` (under the array's bound), which lacks it;
/// `what` says what is wrong.
async fn add_missing(at: At<'_>, far: Side, x: &Bson, y: &Bson, what: String, report: &mut Report) -> Result<()> {
    if far.key().is_some() {
        report.unfixable += 1;
        report.note(|| {
            format!(
                "{what}: `{}` holds `{{id, ..}}` elements, whose other fields are not known here; add the element \
                 with the update builder",
                far.label()
            )
        });
        return Ok(());
    }
    report.note(|| format!("{what}: {}", if at.fix { "added" } else { "repair adds it" }));
    if !at.fix {
        return Ok(());
    }
    let mut filter = doc! {"_id": y.clone()};
    if let Some(max) = far.max() {
        filter.insert(format!("{}.{}", far.rel.field, max.saturating_sub(1)), doc! {"$exists": false});
    }
    let n = write(at.db, far, filter, doc! {"$addToSet": { far.rel.field: x.clone() }}).await?;
    if n == 0 && !holds(at.db, far, y, x).await? {
        report.unfixable += 1;
        report.note(|| {
            format!(
                "{} of {} is full ({} ids): {} could not be added; raise the bound or unlink others",
                far.label(),
                show_id(y),
                far.max().unwrap_or_default(),
                show_id(x)
            )
        });
    }
    report.fixed += n;
    Ok(())
}

/// Whether `id` on `side` holds `value`.
async fn holds(db: &Database, side: Side, id: &Bson, value: &Bson) -> Result<bool> {
    let mut filter = side.holding(value);
    filter.insert("_id", id.clone());
    Ok(!read(db, side, filter, doc! {"_id": 1}).await?.is_empty())
}

async fn write(db: &Database, side: Side, filter: BsonDoc, update: BsonDoc) -> Result<u64> {
    let r = db
        .collection::<BsonDoc>(side.collection())
        .update_one(filter, update)
        .await
        .map_err(|e| Error::driver("update", side.collection(), e))?;
    Ok(r.modified_count)
}

/// Reads documents of `side`'s collection, from the primary.
async fn read(db: &Database, side: Side, filter: BsonDoc, projection: BsonDoc) -> Result<Vec<BsonDoc>> {
    let collection = side.collection();
    let coll = db.collection::<BsonDoc>(collection);
    let find = coll.find(filter).projection(projection).selection_criteria(crate::store::primary());
    collect(find, None, collection, |raw| plain(collection, raw)).await
}
