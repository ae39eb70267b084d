//! The invariants of issue 12, checked on the documents as stored, read
//! with the raw driver. Nothing here calls docrel or reads its schema
//! descriptors: the stored names of the schemas in `schema.rs` are written
//! out below, so the checker stays an independent witness.
//!
//! - I1 every denormalized copy equals the current value of its source, or
//!   its source is gone (dangling), and its version record agrees
//!   (`copies.rs`);
//! - I2 two-way references agree on both sides;
//! - I3 a subset equals the top N of its children in the declared order,
//!   nothing else (`items.reviews` and `items.newest`);
//! - I4 buckets: `count` = array length, no page over `size`, no gap or
//!   duplicate page (and, from the history: no appended comment lost or
//!   stored twice);
//! - I5 no bounded array over its bound;
//! - [`Inv::Pulled`] (from the history): no note refers to a person whose
//!   delete returned `Ok` after the note's task was last written
//!   (`pulled.rs`).

use super::schema::{NEWEST_MAX, NOTES_MAX, PAGE_SIZE, PARTS_MAX, SUBSET_MAX, TASKS_MAX};
use docrel::bson::{doc, Bson, Document};
use docrel::mongodb::Database;
use futures::TryStreamExt;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// Which invariant a violation breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Inv {
    I1,
    I2,
    I3,
    I4,
    I5,
    /// A copy equal to its source with no version record beside it: the
    /// fan-out guard tolerates it (a missing record is rewritten), so it is
    /// checked only on request (`--strict-records`) and noted otherwise.
    Unrecorded,
    /// Not an invariant of the data: the sync worker did not catch up, an
    /// operation hung, or setup itself left derived data wrong.
    Liveness,
    /// Not an invariant of the data: an operation sent a transaction or a
    /// plain multi-document write its entry to the gate did not declare,
    /// which can deadlock the test server (`gate.rs`, `monitor.rs`).
    Gate,
    /// A pending reference at the end of the history: a person lists a task
    /// that does not exist, which a person insert named, or a task is owned
    /// by a person who does not exist, whom a task insert named (a
    /// reference to a document not inserted yet is allowed and linked when
    /// it arrives). Not a violation by itself: the two-way repair must
    /// then clear it (checked again after it).
    Pending,
    /// `on_delete = pull` of the notes: a note by a person whose delete
    /// returned `Ok` after every write of the note's task ended is gone
    /// (`pulled.rs`). No repair brings it about: it holds in both contracts.
    Pulled,
    /// A call did what it must not, told by the call's own result (from
    /// the history): a copied field written by the caller returned `Ok`
    /// (it must be refused, with nothing written: the write would be
    /// dropped, or break I1); a pull of one element of an array whose
    /// elements share a key removed the others too (issue 38, review 1).
    Call,
}

impl Inv {
    pub const ALL: [Inv; 11] = [
        Inv::I1,
        Inv::I2,
        Inv::I3,
        Inv::I4,
        Inv::I5,
        Inv::Unrecorded,
        Inv::Liveness,
        Inv::Gate,
        Inv::Pending,
        Inv::Pulled,
        Inv::Call,
    ];

    pub fn about(self) -> &'static str {
        match self {
            Inv::I1 => "I1 copies equal their sources",
            Inv::I2 => "I2 two-way references agree",
            Inv::I3 => "I3 subsets are the top N of their children",
            Inv::I4 => "I4 buckets are well-formed",
            Inv::I5 => "I5 bounded arrays within their bounds",
            Inv::Unrecorded => "I1 records: every copy of an existing source has a version record",
            Inv::Liveness => "liveness",
            Inv::Gate => "the gate knows what each operation sends",
            Inv::Pending => "I2 pending references left at the end (the two-way repair clears them)",
            Inv::Pulled => "on_delete = pull: no note by a person a delete removed (Ok) after its task was written",
            Inv::Call => "a call did what it said: a copied field write refused, a pull of one element removed one",
        }
    }
}

/// One broken invariant, with what was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub inv: Inv,
    pub what: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.inv, self.what)
    }
}

pub(super) fn v(inv: Inv, what: String) -> Violation {
    Violation { inv, what }
}

/// The collections the invariants read, as stored.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub parts: Vec<Document>,
    pub products: Vec<Document>,
    pub people: Vec<Document>,
    pub tasks: Vec<Document>,
    pub items: Vec<Document>,
    pub reviews: Vec<Document>,
    pub pages: Vec<Document>,
}

/// Every document of collection `name`, by `_id` (raw driver).
pub(super) async fn all(db: &Database, name: &str) -> Result<Vec<Document>, String> {
    let coll = db.collection::<Document>(name);
    let cursor = coll.find(doc! {}).sort(doc! {"_id": 1}).await.map_err(|e| format!("find {name}: {e}"))?;
    cursor.try_collect().await.map_err(|e| format!("find {name}: {e}"))
}

impl Snapshot {
    /// Reads every collection the invariants need (primary, raw driver).
    pub async fn read(db: &Database) -> Result<Snapshot, String> {
        Ok(Snapshot {
            parts: all(db, "parts").await?,
            products: all(db, "products").await?,
            people: all(db, "people").await?,
            tasks: all(db, "tasks").await?,
            items: all(db, "items").await?,
            reviews: all(db, "reviews").await?,
            pages: all(db, "comment_pages").await?,
        })
    }
}

/// What the history adds to I4: the comments appended with `Ok`, by post,
/// and the posts a delete was tried on (their comments may be gone).
#[derive(Clone, Debug, Default)]
pub struct Facts {
    pub appended: Vec<(i32, String)>,
    pub posts_deleted: Vec<i32>,
    /// Task ids a person insert that returned `Ok` listed (see [`Inv::Pending`]).
    pub named_by_insert: Vec<Bson>,
    /// Owners a task insert that returned `Ok` named (see [`Inv::Pending`]).
    pub owners_named_by_insert: Vec<Bson>,
    /// The deletes of people and the writes of notes (see [`Inv::Pulled`]).
    pub pulls: super::pulled::Timeline,
    /// Calls that did what they must not (see [`Inv::Call`]).
    pub accepted: Vec<String>,
}

/// `Bson` as shown in a message.
pub(super) fn show(b: Option<&Bson>) -> String {
    match b {
        None => "(missing)".into(),
        Some(b) => b.to_string(),
    }
}

pub(super) fn key(b: &Bson) -> String {
    b.to_string()
}

pub(super) fn by_id(docs: &[Document]) -> HashMap<String, &Document> {
    docs.iter().filter_map(|d| Some((key(d.get("_id")?), d))).collect()
}

pub(super) fn array<'a>(d: &'a Document, field: &str) -> Vec<&'a Bson> {
    match d.get(field) {
        Some(Bson::Array(a)) => a.iter().collect(),
        _ => Vec::new(),
    }
}

pub(super) fn int(b: Option<&Bson>) -> Option<i64> {
    match b? {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        Bson::Double(f) if f.fract() == 0.0 => Some(*f as i64),
        _ => None,
    }
}

pub(super) fn is_set(b: Option<&Bson>) -> Option<&Bson> {
    b.filter(|b| !matches!(b, Bson::Null))
}

pub use super::copies::copies;

/// I2: a task id is in `people.tasks` of exactly the person its `owner`
/// names, and only there, once; both documents exist.
pub fn two_way(s: &Snapshot, facts: &Facts) -> Vec<Violation> {
    let mut out = Vec::new();
    let tasks = by_id(&s.tasks);
    let people = by_id(&s.people);
    for person in &s.people {
        let pid = person.get("_id");
        let mut seen: Vec<String> = Vec::new();
        for t in array(person, "tasks") {
            if seen.contains(&key(t)) {
                out.push(v(Inv::I2, format!("person {} lists task {t} twice", show(pid))));
                continue;
            }
            seen.push(key(t));
            match tasks.get(&key(t)) {
                None => {
                    let inv = if facts.named_by_insert.contains(t) { Inv::Pending } else { Inv::I2 };
                    out.push(v(inv, format!("person {} lists task {t}, which does not exist", show(pid))))
                }
                Some(task) if is_set(task.get("owner")) != pid => out.push(v(
                    Inv::I2,
                    format!("person {} lists task {t}, whose owner is {}", show(pid), show(task.get("owner"))),
                )),
                Some(_) => {}
            }
        }
    }
    for task in &s.tasks {
        let Some(owner) = is_set(task.get("owner")) else { continue };
        match people.get(&key(owner)) {
            None => {
                let inv = if facts.owners_named_by_insert.contains(owner) { Inv::Pending } else { Inv::I2 };
                let what = format!("task {} is owned by person {owner}, who does not exist", show(task.get("_id")));
                out.push(v(inv, what))
            }
            Some(person) => {
                let listed = task.get("_id").is_some_and(|id| array(person, "tasks").contains(&id));
                if !listed {
                    out.push(v(
                        Inv::I2,
                        format!(
                            "task {} is owned by person {owner}, whose tasks {} do not list it",
                            show(task.get("_id")),
                            show(person.get("tasks"))
                        ),
                    ));
                }
            }
        }
    }
    out
}

/// The summary an item keeps of a review: `{rid, author, text, published_date, reviewer_name}`
/// (the last a copy of the reviewer's name, gone with the reviewer).
/// A subset of `items` over `reviews`: its array, its size, the field
/// that names a review in it, and the fields of a summary.
struct Kept {
    array: &'static str,
    max: usize,
    id: &'static str,
    fields: &'static [&'static str],
}

const REVIEWS: Kept = Kept {
    array: "reviews",
    max: SUBSET_MAX,
    id: "rid",
    fields: &["rid", "author", "text", "published_date", "reviewer_name"],
};
const NEWEST: Kept =
    Kept { array: "newest", max: NEWEST_MAX, id: "_id", fields: &["_id", "published_date", "reviewer_name"] };

impl Kept {
    fn summary(&self, review: &Document) -> BTreeMap<String, Option<Bson>> {
        self.fields.iter().map(|f| ((*f).to_owned(), review.get(*f).cloned())).collect()
    }

    fn as_summary(&self, e: &Document) -> BTreeMap<String, Option<Bson>> {
        let mut m: BTreeMap<String, Option<Bson>> = self.fields.iter().map(|f| ((*f).to_owned(), None)).collect();
        for (k, val) in e {
            m.insert(k.clone(), Some(val.clone()));
        }
        m
    }
}

fn date(b: Option<&Bson>) -> Option<i64> {
    match b? {
        Bson::DateTime(d) => Some(d.timestamp_millis()),
        _ => None,
    }
}

/// I3: `items.reviews` holds the summaries of the item's 4 newest reviews
/// (by `published_date`, descending), in that order, and nothing else;
/// `items.newest` its 3 newest. Ties in the date may come in either order.
pub fn subsets(s: &Snapshot) -> Vec<Violation> {
    let mut out = kept(s, &REVIEWS);
    out.extend(kept(s, &NEWEST));
    out
}

fn kept(s: &Snapshot, kept: &Kept) -> Vec<Violation> {
    let (field, max, key) = (kept.array, kept.max, kept.id);
    let mut out = Vec::new();
    for item in &s.items {
        let id = item.get("_id");
        let mut children: Vec<&Document> =
            s.reviews.iter().filter(|r| r.get("product_id").is_some() && r.get("product_id") == id).collect();
        children.sort_by_key(|r| std::cmp::Reverse(date(r.get("published_date"))));
        let expected: Vec<&Document> = children.iter().take(max).copied().collect();
        let stored = array(item, field);
        let rids = |docs: &[&Document]| docs.iter().map(|d| show(d.get(key))).collect::<Vec<_>>().join(" ");
        let stored_rids: Vec<String> =
            stored.iter().map(|e| e.as_document().map_or("?".into(), |d| show(d.get(key)))).collect();
        let context = format!("stored [{}], expected [{}]", stored_rids.join(" "), rids(&expected));
        if stored.len() != expected.len() {
            out.push(v(
                Inv::I3,
                format!(
                    "item {} keeps {} summaries in {field}, but has {} reviews (top {max}: {}): {context}",
                    show(id),
                    stored.len(),
                    children.len(),
                    expected.len()
                ),
            ));
            continue;
        }
        let mut seen: Vec<Option<Bson>> = Vec::new();
        for (k, (e, want)) in stored.iter().zip(&expected).enumerate() {
            let Some(e) = e.as_document() else {
                out.push(v(Inv::I3, format!("item {} {field}[{k}] is not a document: {context}", show(id))));
                break;
            };
            let rid = e.get(key).cloned();
            if seen.contains(&rid) {
                out.push(v(
                    Inv::I3,
                    format!("item {} keeps {key} {} twice in {field}: {context}", show(id), show(rid.as_ref())),
                ));
                break;
            }
            seen.push(rid.clone());
            let child = children.iter().find(|c| c.get(key).is_some() && c.get(key) == rid.as_ref());
            match child {
                None => {
                    out.push(v(
                        Inv::I3,
                        format!(
                            "item {} {field}[{k}] ({key} {}) is no review of it: {context}",
                            show(id),
                            show(rid.as_ref())
                        ),
                    ));
                    break;
                }
                Some(c) if kept.as_summary(e) != kept.summary(c) => {
                    out.push(v(
                        Inv::I3,
                        format!(
                            "item {} {field}[{k}] ({key} {}) is stale: {} but the review is {}: {context}",
                            show(id),
                            show(rid.as_ref()),
                            Bson::Document(e.clone()),
                            Bson::Document((*c).clone())
                        ),
                    ));
                    break;
                }
                Some(_) => {}
            }
            if date(e.get("published_date")) != date(want.get("published_date")) {
                out.push(v(
                    Inv::I3,
                    format!("item {} {field}[{k}] is out of the top {max} or out of order: {context}", show(id)),
                ));
                break;
            }
        }
    }
    out
}

/// I4: per post, pages 1..=n each once, `count` = the array's length, no
/// page over the size; every comment appended with `Ok` (to a post never
/// deleted) stored once, and no comment stored twice.
pub fn buckets(s: &Snapshot, facts: &Facts) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut pages_of: BTreeMap<String, Vec<&Document>> = BTreeMap::new();
    for page in &s.pages {
        pages_of.entry(show(page.get("blog_entry_id"))).or_default().push(page);
    }
    let mut stored: HashMap<String, usize> = HashMap::new();
    for (post, pages) in &pages_of {
        let mut numbers: Vec<i64> = Vec::new();
        for page in pages {
            let n = int(page.get("page"));
            let comments = array(page, "comments");
            if int(page.get("count")) != Some(comments.len() as i64) {
                out.push(v(
                    Inv::I4,
                    format!(
                        "post {post} page {}: count {} but {} comments",
                        show(page.get("page")),
                        show(page.get("count")),
                        comments.len()
                    ),
                ));
            }
            if comments.len() > PAGE_SIZE {
                out.push(v(
                    Inv::I4,
                    format!(
                        "post {post} page {}: {} comments, over {PAGE_SIZE}",
                        show(page.get("page")),
                        comments.len()
                    ),
                ));
            }
            for c in comments {
                if let Some(text) = c.as_document().and_then(|d| d.get_str("text").ok()) {
                    *stored.entry(text.to_owned()).or_default() += 1;
                }
            }
            match n {
                Some(n) => numbers.push(n),
                None => out
                    .push(v(Inv::I4, format!("post {post}: a page without a page number: {}", show(page.get("page"))))),
            }
        }
        numbers.sort_unstable();
        let want: Vec<i64> = (1..=numbers.len() as i64).collect();
        if numbers != want {
            out.push(v(Inv::I4, format!("post {post}: pages {numbers:?}, expected {want:?} (a gap or a duplicate)")));
        }
    }
    for (text, n) in &stored {
        if *n > 1 {
            out.push(v(Inv::I4, format!("comment {text:?} is stored {n} times")));
        }
    }
    for (post, text) in &facts.appended {
        if facts.posts_deleted.contains(post) {
            continue;
        }
        if !stored.contains_key(text) {
            out.push(v(Inv::I4, format!("comment {text:?} was appended to post {post} (Ok) but is stored nowhere")));
        }
    }
    out
}

/// I5: `products.parts` <= 6, `people.tasks` <= 3, `tasks.notes` <= 3,
/// `items.reviews` <= 4, `items.newest` <= 3, `comment_pages.comments` <= 3.
pub fn bounds(s: &Snapshot) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut over = |what: &str, docs: &[Document], field: &str, max: usize| {
        for d in docs {
            let n = array(d, field).len();
            if n > max {
                out.push(v(Inv::I5, format!("{what} {}: {field} holds {n}, over its bound {max}", show(d.get("_id")))));
            }
        }
    };
    over("product", &s.products, "parts", PARTS_MAX);
    over("person", &s.people, "tasks", TASKS_MAX);
    over("task", &s.tasks, "notes", NOTES_MAX);
    over("item", &s.items, "reviews", SUBSET_MAX);
    over("item", &s.items, "newest", NEWEST_MAX);
    over("comment page", &s.pages, "comments", PAGE_SIZE);
    out
}

/// Every invariant in `which`, in order.
pub fn check(s: &Snapshot, facts: &Facts, which: &[Inv]) -> Vec<Violation> {
    let mut out = Vec::new();
    for inv in which {
        out.extend(match inv {
            Inv::I1 | Inv::Unrecorded => copies(s).into_iter().filter(|v| v.inv == *inv).collect(),
            Inv::I2 => two_way(s, facts).into_iter().filter(|v| v.inv == Inv::I2).collect(),
            Inv::Pending => two_way(s, facts).into_iter().filter(|v| v.inv == Inv::Pending).collect(),
            Inv::I3 => subsets(s),
            Inv::I4 => buckets(s, facts),
            Inv::I5 => bounds(s),
            Inv::Pulled => super::pulled::pulled(s, facts),
            Inv::Call => facts.accepted.iter().map(|op| v(Inv::Call, op.clone())).collect(),
            Inv::Liveness | Inv::Gate => Vec::new(),
        });
    }
    out
}
