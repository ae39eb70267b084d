//! One entry per kind of derived data for verify and repair: a [`Check`]
//! names what to scan (the copies of a source, the two-way references of a
//! type, its bucket arrays, a parent's subsets, the sync workers' dead
//! letters), and [`Check::verify`] and [`Check::repair`] run it on the one
//! scan engine ([`Scan`]), batch by batch, resumable and idempotent.
//! [`crate::admin::checks`] runs every check of a program at once.

use crate::denormalize::repair::{known_source, parts as copies_parts};
use crate::denormalize::sync::dead_letter_check::parts as dead_letter_parts;
use crate::denormalize::DEAD_LETTER_COLLECTION;
use crate::error::{Error, Misuse, Result};
use crate::patterns::bucket_check::{self, arrays_of, known as bucket_arrays_in};
use crate::patterns::subset_check;
use crate::relations::inverse_check::{self, pairs_in, pairs_of};
use crate::schema::document::Document;
use crate::schema::graph::{self, Graph};
use crate::store::scan::{Parts, Scan};
use mongodb::Database;
use std::sync::Arc;

/// What a verify or repair scans: one kind of derived data of one
/// collection (or the dead letters). Build it from a type
/// ([`copies`], [`inverse`], [`buckets`], [`subsets`]) or from a name known
/// only at run time ([`named`]), then [`verify`](Check::verify) or
/// [`repair`](Check::repair).
///
/// ```
/// # docrel::testing::doc_test(|db| async move {
/// # use docrel::{Document, bson::{doc, oid::ObjectId}};
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
/// let report = docrel::check::copies::<Host>().verify(&db).run().await?;
/// assert_eq!((report.scanned, report.stale), (0, 0));
/// // The same check, named at run time (a command line's argument):
/// let check = docrel::check::named(docrel::check::CheckKind::Copies, "hosts")?;
/// assert!(check.repair(&db).run().await?.clean());
/// # Ok(()) });
/// ```
#[derive(Clone)]
pub struct Check {
    kind: CheckKind,
    /// The scan's name in traces for a verify and for a repair: what each
    /// kind was traced as before there was one entry.
    op: [&'static str; 2],
    subject: &'static str,
    /// The parts of the scan in the schema graph of the database it runs
    /// on: a database's stored types are known only there.
    parts: Recipe,
}

type Recipe = Arc<dyn Fn(&'static Graph) -> Parts + Send + Sync>;

impl std::fmt::Debug for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Check").field("kind", &self.kind).field("subject", &self.subject).finish()
    }
}

impl Check {
    /// The kind of derived data it checks.
    pub fn kind(&self) -> CheckKind {
        self.kind
    }

    /// Reports what is wrong, without writing anything.
    pub fn verify<'a>(&self, db: &'a Database) -> Scan<'a> {
        Scan::new(db, self.op[0], self.subject, (self.parts)(graph::of(db)), false)
    }

    /// Reports what is wrong and fixes what has one right answer (each
    /// kind's module docs say which: a stale copy is rewritten from its
    /// source, the single side of a two-way reference wins, a count is
    /// recounted, a subset rebuilt, a dead letter re-applied).
    pub fn repair<'a>(&self, db: &'a Database) -> Scan<'a> {
        Scan::new(db, self.op[1], self.subject, (self.parts)(graph::of(db)), true)
    }

    fn copies_of(source: &'static str) -> Check {
        let parts = Arc::new(move |g| copies_parts(g, source));
        Check { kind: CheckKind::Copies, op: ["repair"; 2], subject: source, parts }
    }

    /// The pairs involving `collection`.
    fn inverse_of(collection: &str) -> Check {
        let collection = collection.to_owned();
        let parts = Arc::new(move |g| {
            let pairs = pairs_in(g).into_iter().filter(|p| p.involves(&collection));
            pairs.flat_map(inverse_check::parts).collect()
        });
        Check { kind: CheckKind::Inverse, op: ["verify_inverses"; 2], subject: "", parts }
    }

    /// The bucket arrays of `collection`.
    fn buckets_of(collection: &str) -> Check {
        let collection = collection.to_owned();
        let parts = Arc::new(move |g| arrays_of(g, &collection).into_iter().flat_map(bucket_check::parts).collect());
        Check { kind: CheckKind::Bucket, op: ["verify_buckets"; 2], subject: "", parts }
    }

    /// The subsets kept in `parent`.
    fn subsets_of(parent: &str) -> Check {
        let parent = parent.to_owned();
        let parts = Arc::new(move |g| subset_parts(g, &parent));
        Check { kind: CheckKind::Subset, op: ["verify_subsets"; 2], subject: "", parts }
    }
}

/// The denormalized copies of the documents of `T` (I1): every copy of a
/// field of `T` held elsewhere, and what is derived from those copies in
/// turn (copies of copies, subset summaries carrying them). A repair
/// rewrites the stale ones from their sources; a dangling copy (its source
/// is gone) is reported and left.
pub fn copies<T: Document>() -> Check {
    Check::copies_of(T::COLLECTION)
}

/// The two-way references of `T` (declared on it or pointing at it) whose
/// sides disagree (I2). In a repair the single reference is the truth of
/// a 1:N pair (docs/consistency.md, I2, says which side wins for each shape).
///
/// ```
/// # docrel::testing::doc_test(|db| async move {
/// # use docrel::{Document, bson::doc};
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
/// let found = docrel::check::inverse::<Person>().verify(&db).run().await?;
/// assert_eq!((found.mismatched, found.fixed), (1, 0));
/// let fixed = docrel::check::inverse::<Person>().repair(&db).run().await?;
/// assert_eq!(fixed.fixed, 1); // task.owner is the truth: 7 was added to person 1
/// assert!(docrel::check::inverse::<Task>().verify(&db).run().await?.clean());
/// # Ok(()) });
/// ```
pub fn inverse<T: Document>() -> Check {
    Check::inverse_of(T::COLLECTION)
}

/// The bucket documents of `B` (I4): counts, sizes, pages and windows. A
/// repair recounts a `count` that differs from its array and reports the
/// rest: moving elements between pages would change what readers of a page see.
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
/// let found = docrel::check::buckets::<CommentPage>().verify(&db).run().await?;
/// assert_eq!((found.miscounted, found.gaps), (1, 1));
/// let repaired = docrel::check::buckets::<CommentPage>().repair(&db).run().await?;
/// assert_eq!((repaired.fixed, repaired.unfixable), (1, 1)); // the gap stays, reported
/// # Ok(()) });
/// ```
pub fn buckets<B: Document>() -> Check {
    Check::buckets_of(B::COLLECTION)
}

/// The subsets kept in the documents of `P` (I3): each parent's summaries
/// are the newest (or highest) of its children, in order. A repair
/// rebuilds a wrong subset from the children.
pub fn subsets<P: Document>() -> Check {
    Check::subsets_of(P::COLLECTION)
}

/// The events the sync workers could not apply (their dead letters). A
/// repair re-applies each letter's effect (its document's copies
/// rewritten, the subsets it belongs to rebuilt) and removes the letter; a
/// letter whose cause still stands stays, counted `unfixable`.
pub fn dead_letters() -> Check {
    Check {
        kind: CheckKind::Sync,
        op: ["verify", "repair"],
        subject: DEAD_LETTER_COLLECTION,
        parts: Arc::new(|g| dead_letter_parts(g, None)),
    }
}

/// The check of `kind` for a collection named at run time (a command
/// line's argument): the copies of a source collection, the two-way
/// references, bucket arrays or subsets of a collection. An error names
/// the collections that have such data when this one has none; `Sync`
/// takes the dead letters of the workers watching `collection`.
pub fn named(kind: CheckKind, collection: &str) -> Result<Check> {
    // Named against the linked types; the parts are made, at the run, from
    // the graph of the database it runs on.
    let g = graph::graph();
    Ok(match kind {
        CheckKind::Copies => Check::copies_of(known_source(g, collection)?),
        CheckKind::Inverse => {
            pairs_of(g, collection)?;
            Check::inverse_of(collection)
        }
        CheckKind::Bucket => {
            bucket_arrays_in(g, collection)?;
            Check::buckets_of(collection)
        }
        CheckKind::Subset => {
            if subset_parts(g, collection).is_empty() {
                return Err(no_subsets(g, collection));
            }
            Check::subsets_of(collection)
        }
        CheckKind::Sync => {
            let scope = collection.to_owned();
            let parts = Arc::new(move |g| dead_letter_parts(g, Some(&scope)));
            Check { kind, op: ["verify", "repair"], subject: DEAD_LETTER_COLLECTION, parts }
        }
    })
}

/// The parts of the subsets kept in `parent`, in the graph's order.
fn subset_parts(g: &'static Graph, parent: &str) -> Parts {
    let children = g.subset_children();
    let targets = children.iter().flat_map(|child| g.subsets_of(child)).filter(|t| t.parent == parent);
    targets.flat_map(subset_check::parts).collect()
}

fn no_subsets(g: &'static Graph, collection: &str) -> Error {
    let mut known: Vec<&str> =
        g.subset_children().iter().flat_map(|child| g.subsets_of(child)).map(|t| t.parent).collect();
    known.sort_unstable();
    known.dedup();
    Error::Invalid {
        what: Misuse::Collection,
        message: format!(
            "collection `{collection}` keeps no subset (`#[embed(subset_of = ..)]`); the collections keeping \
             subsets in this program are: [{}]. Check the name, and that the types are linked into this binary",
            known.join(", ")
        ),
    }
}

/// The kinds of derived data a verify or repair checks, each a job per
/// source, pair or array (in JSON, one lowercase word).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum CheckKind {
    /// The denormalized copies of one source (I1).
    #[default]
    Copies,
    /// The two sides of one two-way reference (I2).
    Inverse,
    /// One subset's summaries (I3).
    Subset,
    /// One bucket array's counts, sizes and pages (I4).
    Bucket,
    /// The sync workers' dead letters.
    Sync,
}

impl CheckKind {
    /// The kind's one word: `copies`, `inverse`, `subset`, `bucket`, `sync`.
    pub fn word(self) -> &'static str {
        match self {
            CheckKind::Copies => "copies",
            CheckKind::Inverse => "inverse",
            CheckKind::Subset => "subset",
            CheckKind::Bucket => "bucket",
            CheckKind::Sync => "sync",
        }
    }
}

impl std::fmt::Display for CheckKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.word())
    }
}
