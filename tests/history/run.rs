//! Running a history: a fresh database, the setup, the workers (tokio
//! tasks) running their operations concurrently, fault injection, the sync
//! worker of deferred histories, then quiescence and the check of the
//! contract:
//!
//! - (a) every docrel call returned `Ok` (or was refused with nothing
//!   written, see [`classify`]): I1–I5 must hold as they are;
//! - (b) some call failed: after one [`repair_everything`] pass, the
//!   invariants that have a repair must hold ([`CHECKED_AFTER_REPAIR`]).

use super::check::{self, Facts, Inv, Snapshot, Violation};
use super::plan::{self, Fault, Mode, Op, Plan, Source};
use super::repair::repair_everything;
use super::schema::*;
use docrel::bson::{doc, oid::ObjectId, Bson, DateTime};
use docrel::fanout::{Applied, SyncWorker};
use docrel::mongodb::error::{ErrorKind, WriteFailure};
use docrel::mongodb::Database;
use docrel::testing::TestDb;
use docrel::{Document, Error, Repository};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// An operation taking longer is abandoned and recorded as timed out
/// (longer than the 60 s after which the server reaps an idle transaction).
pub const OP_TIMEOUT: Duration = Duration::from_secs(90);
/// Operations slower than this are listed in the notes.
pub const SLOW: Duration = Duration::from_secs(10);
/// How long the sync worker may take to catch up at the end.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(60);

/// Invariants checked in a (b)-history, after one repair pass.
///
/// REPAIR-API (issue 12): I2 (two-way references) and I4 (buckets) have no
/// repair in docrel's public API yet, so (b)-histories cannot hold them to
/// the contract. Once the library-level `repair` exists, call it from
/// `repair_everything` (tests/history/repair.rs) and add `Inv::I2` and
/// `Inv::I4` here.
pub const CHECKED_AFTER_REPAIR: &[Inv] = &[Inv::I1, Inv::I3, Inv::I5];
/// Invariants checked in an (a)-history.
pub const CHECKED: &[Inv] = &[Inv::I1, Inv::I2, Inv::I3, Inv::I4, Inv::I5];

/// What an operation returned.
#[derive(Clone, Debug, PartialEq)]
pub enum Res {
    Ok(String),
    /// An error about the request itself, with nothing written (or, for a
    /// duplicate key in `insert_many`, what landed must be consistent):
    /// bound, `restrict`, not found, invalid, duplicate key, a read that
    /// cannot be decoded. Derived data must stay true: the history stays (a).
    Refused(String),
    /// Any other error (the driver's, a cut fan-out): derived data may be
    /// wrong until one repair pass. The history becomes (b).
    Failed(String),
    /// Abandoned after [`OP_TIMEOUT`]; counts as failed.
    TimedOut,
}

impl Res {
    /// Whether this result makes the history a (b)-history.
    pub fn failed(&self) -> bool {
        matches!(self, Res::Failed(_) | Res::TimedOut)
    }
}

impl fmt::Display for Res {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let short = |s: &str| -> String {
            let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
            if one.chars().count() > 220 {
                format!("{}...", one.chars().take(220).collect::<String>())
            } else {
                one
            }
        };
        match self {
            Res::Ok(s) => write!(f, "Ok({s})"),
            Res::Refused(s) => write!(f, "Refused({})", short(s)),
            Res::Failed(s) => write!(f, "FAILED({})", short(s)),
            Res::TimedOut => write!(f, "TIMED OUT"),
        }
    }
}

/// One operation as it ran.
#[derive(Clone, Debug)]
pub struct Record {
    pub worker: usize,
    pub seq: usize,
    pub op: Op,
    pub start: Duration,
    pub end: Duration,
    pub res: Res,
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:>7.3}..{:<7.3} w{}#{:<4} {} -> {}",
            self.start.as_secs_f64(),
            self.end.as_secs_f64(),
            self.worker,
            self.seq,
            self.op,
            self.res
        )
    }
}

/// Whether the contract's (a) or (b) applies to a history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contract {
    /// Every docrel call returned `Ok` or was refused.
    A,
    /// Some call failed or timed out.
    B,
}

/// A history as it ran, and what the check found.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub plan: Plan,
    pub records: Vec<Record>,
    /// What happened besides the operations (sync worker restarts, drain).
    pub notes: Vec<String>,
    pub contract: Contract,
    /// In a (b)-history: what was broken before the repair pass.
    pub before_repair: Vec<Violation>,
    /// What the contract does not allow.
    pub violations: Vec<Violation>,
    /// What one repair pass reported, in a (b)-history.
    pub repair: Vec<String>,
    pub elapsed: Duration,
}

impl Outcome {
    pub fn failed(&self) -> bool {
        !self.violations.is_empty()
    }

    /// The invariants broken.
    pub fn invariants(&self) -> BTreeSet<Inv> {
        self.violations.iter().map(|v| v.inv).collect()
    }

    /// The records in the order the operations started.
    pub fn by_start(&self) -> Vec<&Record> {
        let mut r: Vec<&Record> = self.records.iter().collect();
        r.sort_by_key(|r| (r.start, r.worker, r.seq));
        r
    }

    /// How many calls ended each way: (ok, refused, failed).
    pub fn counts(&self) -> (usize, usize, usize) {
        let calls = self.records.iter().filter(|r| !r.op.is_fault());
        let (mut ok, mut refused, mut failed) = (0, 0, 0);
        for r in calls {
            match r.res {
                Res::Ok(_) => ok += 1,
                Res::Refused(_) => refused += 1,
                Res::Failed(_) | Res::TimedOut => failed += 1,
            }
        }
        (ok, refused, failed)
    }
}

/// The ids a history names, the same in every run of a seed (so a shrunk
/// or repeated run means the same documents): tag byte, then the index.
#[derive(Clone, Debug)]
pub struct Universe;

fn oid(tag: u8, i: usize) -> ObjectId {
    let mut b = [0u8; 12];
    b[0] = tag;
    b[10] = (i >> 8) as u8;
    b[11] = i as u8;
    ObjectId::from_bytes(b)
}

impl Universe {
    pub fn part(i: usize) -> ObjectId {
        oid(0xa1, i)
    }
    pub fn product(i: usize) -> ObjectId {
        oid(0xa2, i)
    }
    pub fn person(i: usize) -> ObjectId {
        oid(0xb1, i)
    }
    pub fn task(i: usize) -> ObjectId {
        oid(0xb2, i)
    }
    pub fn review(i: usize) -> ObjectId {
        oid(0xc1, i)
    }
    pub fn rid(i: usize) -> i32 {
        100 + i as i32
    }
    pub fn item(i: usize) -> i32 {
        i as i32 + 1
    }
    pub fn post(i: usize) -> i32 {
        i as i32 + 1
    }
    /// A part no operation names: the deferred histories' drain marker.
    pub fn sentinel_part() -> ObjectId {
        oid(0xe1, 0)
    }
    pub fn sentinel_product() -> ObjectId {
        oid(0xe2, 0)
    }
}

/// `text` with the universe's ids shown by name: `ObjectId("a1...03")` as
/// `P3`, `ObjectId("b2...05")` as `T5`, and so on.
pub fn short_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("ObjectId(\"") {
        out.push_str(&rest[..at]);
        let hex = &rest[at + 10..];
        let name = hex.get(..24).filter(|_| hex.get(24..26) == Some("\")")).and_then(|h| {
            let prefix = match &h[..2] {
                "a1" => "P",
                "a2" => "R",
                "b1" => "H",
                "b2" => "T",
                "c1" => "V",
                "e1" => "sentinel-P",
                "e2" => "sentinel-R",
                _ => return None,
            };
            let n = usize::from_str_radix(&h[20..], 16).ok()?;
            h[2..20].bytes().all(|b| b == b'0').then(|| format!("{prefix}{n}"))
        });
        match name {
            Some(n) => {
                out.push_str(&n);
                rest = &hex[26..];
            }
            None => {
                out.push_str("ObjectId(\"");
                rest = hex;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A copy's value as a caller would write it without knowing the source:
/// docrel has to fill it.
pub const STALE: &str = "(stale)";

/// How setup populates the universe.
pub const SETUP_PARTS: usize = 8;
pub const SETUP_PRODUCTS: usize = 4;
pub const SETUP_PEOPLE: usize = 3;
pub const SETUP_TASKS: usize = 6;
pub const SETUP_REVIEWS: usize = 8;
pub const SETUP_COMMENTS: [usize; 2] = [4, 2];

/// What operations run against.
#[derive(Clone)]
pub struct Ctx {
    pub db: Database,
    pub mode: Mode,
    /// Held shared by every operation, exclusively by one that runs a
    /// transaction when the plan serializes them.
    pub gate: Arc<tokio::sync::RwLock<()>>,
}

impl Ctx {
    fn repo<T: Document>(&self, txn: bool) -> Repository<T> {
        let r = Repository::<T>::new(&self.db);
        match self.mode {
            Mode::Deferred => r.deferred_fan_out(),
            Mode::Inline if txn => r.transactional_fan_out(),
            Mode::Inline => r,
        }
    }
}

fn is_duplicate_key(e: &docrel::mongodb::error::Error) -> bool {
    match &*e.kind {
        ErrorKind::Write(WriteFailure::WriteError(w)) => w.code == 11000,
        ErrorKind::InsertMany(im) => {
            im.write_concern_error.is_none()
                && im.write_errors.as_ref().is_some_and(|ws| ws.iter().all(|w| w.code == 11000))
        }
        ErrorKind::Command(c) => c.code == 11000,
        _ => false,
    }
}

/// Which side of the contract an error of a docrel call is on (see [`Res`]).
pub fn classify(e: &Error) -> Res {
    let text = e.to_string();
    match e {
        Error::EmbedFull { .. }
        | Error::StillReferenced { .. }
        | Error::NotFound { .. }
        | Error::Invalid { .. }
        | Error::TwoWayField { .. }
        | Error::Decode { .. } => Res::Refused(text),
        Error::Driver { source, .. } if is_duplicate_key(source) => Res::Refused(text),
        _ => Res::Failed(text),
    }
}

fn outcome(o: docrel::UpdateOutcome) -> String {
    format!("matched {} modified {}", o.matched, o.modified)
}

fn link(o: docrel::LinkOutcome) -> String {
    format!("changed {} transactional {}", o.changed, o.transactional)
}

fn part_refs(parts: &[usize]) -> Vec<PartRef> {
    parts.iter().map(|p| PartRef { id: Universe::part(*p), name: STALE.into() }).collect()
}

fn review_doc(v: usize, i: usize, text: &str, date: i64) -> Review {
    Review {
        id: Universe::review(v),
        review_id: Universe::rid(v),
        product_id: Universe::item(i),
        author: format!("a{v}"),
        text: text.to_owned(),
        published_date: DateTime::from_millis(date),
    }
}

async fn fail_point(db: &Database, fault: Option<&Fault>) -> docrel::Result<()> {
    let command = match fault {
        None => doc! {"configureFailPoint": "failCommand", "mode": "off"},
        Some(f) => {
            let mut data = doc! {"failCommands": f.commands.clone(), "appName": db.name()};
            match f.error_code {
                None => data.insert("closeConnection", true),
                Some(code) => data.insert("errorCode", code),
            };
            doc! {"configureFailPoint": "failCommand", "mode": {"times": f.times as i32}, "data": data}
        }
    };
    db.client()
        .database("admin")
        .run_command(command)
        .await
        .map_err(|e| Error::driver("configureFailPoint", "admin", e))?;
    Ok(())
}

/// A verify or repair of one source's copies, run to the end.
///
/// `Repair::run`'s future is not `Send` (it holds `&Repair`, whose progress
/// callback is `Send` but not `Sync`, across awaits), so it cannot be
/// awaited inside a spawned task: it runs here on the worker's thread,
/// which tokio hands over to blocking meanwhile (multi-thread runtime).
fn scan(db: &Database, source: Source, fix: bool) -> docrel::Result<docrel::scan::Report> {
    tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current().block_on(async {
            match (source, fix) {
                (Source::Part, true) => docrel::fanout::repair::<Part>(db).run().await,
                (Source::Part, false) => docrel::fanout::verify::<Part>(db).run().await,
                (Source::Product, true) => docrel::fanout::repair::<Product>(db).run().await,
                (Source::Product, false) => docrel::fanout::verify::<Product>(db).run().await,
                (Source::Person, true) => docrel::fanout::repair::<Person>(db).run().await,
                (Source::Person, false) => docrel::fanout::verify::<Person>(db).run().await,
            }
        })
    })
}

/// Runs one operation.
pub async fn exec(c: &Ctx, op: &Op) -> docrel::Result<String> {
    let db = &c.db;
    match op {
        Op::RenamePart { p, name, txn } => {
            let o =
                c.repo::<Part>(*txn).update_by_id(&Universe::part(*p), Part::fields().name.set(name.clone())).await?;
            Ok(outcome(o))
        }
        Op::RenamePartsMany { ps, name } => {
            let ids: Vec<ObjectId> = ps.iter().map(|p| Universe::part(*p)).collect();
            let o = c
                .repo::<Part>(false)
                .update_many(Part::fields().id.is_in(&ids), Part::fields().name.set(name.clone()))
                .await?;
            Ok(outcome(o))
        }
        Op::ReplacePart { p, name, product }
        | Op::SavePart { p, name, product }
        | Op::InsertPart { p, name, product } => {
            let part = Part {
                id: Universe::part(*p),
                name: name.clone(),
                product: Universe::product(*product),
                product_name: STALE.into(),
                qty: 1,
            };
            let repo = c.repo::<Part>(false);
            match op {
                Op::ReplacePart { .. } => repo.replace(&part).await?,
                Op::SavePart { .. } => repo.save(&part).await?,
                _ => repo.insert(&part).await?,
            }
            Ok(String::new())
        }
        Op::InsertManyParts { parts } => {
            let docs: Vec<Part> = parts
                .iter()
                .map(|(p, name, r)| Part {
                    id: Universe::part(*p),
                    name: name.clone(),
                    product: Universe::product(*r),
                    product_name: STALE.into(),
                    qty: 1,
                })
                .collect();
            c.repo::<Part>(false).insert_many(&docs).await?;
            Ok(String::new())
        }
        Op::MovePart { p, product, txn } => {
            let o = c
                .repo::<Part>(*txn)
                .update_by_id(&Universe::part(*p), Part::fields().product.set(Universe::product(*product)))
                .await?;
            Ok(outcome(o))
        }
        Op::DeletePart { p } => {
            Ok(format!("deleted {}", c.repo::<Part>(false).delete_by_id(&Universe::part(*p)).await?))
        }
        Op::DeleteManyParts { ps } => {
            let ids: Vec<ObjectId> = ps.iter().map(|p| Universe::part(*p)).collect();
            Ok(format!("deleted {}", c.repo::<Part>(false).delete_many(Part::fields().id.is_in(&ids)).await?))
        }
        Op::RenameProduct { r, name, txn } => {
            let o = c
                .repo::<Product>(*txn)
                .update_by_id(&Universe::product(*r), Product::fields().name.set(name.clone()))
                .await?;
            Ok(outcome(o))
        }
        Op::RenameProductsMany { rs, name } => {
            let ids: Vec<ObjectId> = rs.iter().map(|r| Universe::product(*r)).collect();
            let o = c
                .repo::<Product>(false)
                .update_many(Product::fields().id.is_in(&ids), Product::fields().name.set(name.clone()))
                .await?;
            Ok(outcome(o))
        }
        Op::ReplaceProduct { r, name, parts }
        | Op::SaveProduct { r, name, parts }
        | Op::InsertProduct { r, name, parts } => {
            let product = Product { id: Universe::product(*r), name: name.clone(), parts: part_refs(parts) };
            let repo = c.repo::<Product>(false);
            match op {
                Op::ReplaceProduct { .. } => repo.replace(&product).await?,
                Op::SaveProduct { .. } => repo.save(&product).await?,
                _ => repo.insert(&product).await?,
            }
            Ok(String::new())
        }
        Op::PushPartRef { r, p, txn } => {
            let o = c
                .repo::<Product>(*txn)
                .update_by_id(&Universe::product(*r), Product::fields().parts.push(part_refs(&[*p])))
                .await?;
            Ok(outcome(o))
        }
        Op::PullPartRef { r, p } => {
            let repo = c.repo::<Product>(false);
            let Some(product) = repo.get(&Universe::product(*r)).await? else { return Ok("no such product".into()) };
            let Some(element) = product.parts.iter().find(|e| e.id == Universe::part(*p)) else {
                return Ok("not listed".into());
            };
            let o = repo.update_by_id(&product.id, Product::fields().parts.pull(element)).await?;
            Ok(format!("pulled {element:?}: {}", outcome(o)))
        }
        Op::SetPartRefs { r, parts } => {
            let o = c
                .repo::<Product>(false)
                .update_by_id(&Universe::product(*r), Product::fields().parts.set(part_refs(parts)))
                .await?;
            Ok(outcome(o))
        }
        Op::DeleteProduct { r } => {
            Ok(format!("deleted {}", c.repo::<Product>(false).delete_by_id(&Universe::product(*r)).await?))
        }
        Op::InsertPerson { h, name } => {
            c.repo::<Person>(false)
                .insert(&Person { id: Universe::person(*h), name: name.clone(), tasks: vec![] })
                .await?;
            Ok(String::new())
        }
        Op::RenamePerson { h, name, txn } => {
            let o = c
                .repo::<Person>(*txn)
                .update_by_id(&Universe::person(*h), Person::fields().name.set(name.clone()))
                .await?;
            Ok(outcome(o))
        }
        Op::ReplacePerson { h, name } | Op::SavePerson { h, name } => {
            let repo = c.repo::<Person>(false);
            let read = repo.get(&Universe::person(*h)).await?;
            let save = matches!(op, Op::SavePerson { .. });
            let person = match read {
                Some(p) => Person { name: name.clone(), ..p },
                None if save => Person { id: Universe::person(*h), name: name.clone(), tasks: vec![] },
                None => return Ok("no such person".into()),
            };
            if save {
                repo.save(&person).await?;
            } else {
                repo.replace(&person).await?;
            }
            Ok(format!("tasks as read {}", person.tasks.len()))
        }
        Op::DeletePerson { h } => {
            Ok(format!("deleted {}", c.repo::<Person>(false).delete_by_id(&Universe::person(*h)).await?))
        }
        Op::InsertTask { t, description } => {
            let task = Task {
                id: Universe::task(*t),
                description: description.clone(),
                owner: None,
                owner_name: STALE.into(),
            };
            c.repo::<Task>(false).insert(&task).await?;
            Ok(String::new())
        }
        Op::ReplaceTask { t, description } | Op::SaveTask { t, description } => {
            let repo = c.repo::<Task>(false);
            let save = matches!(op, Op::SaveTask { .. });
            let task = match repo.get(&Universe::task(*t)).await? {
                Some(task) => Task { description: description.clone(), ..task },
                None if save => Task {
                    id: Universe::task(*t),
                    description: description.clone(),
                    owner: None,
                    owner_name: STALE.into(),
                },
                None => return Ok("no such task".into()),
            };
            if save {
                repo.save(&task).await?;
            } else {
                repo.replace(&task).await?;
            }
            Ok(format!("owner as read {:?}", task.owner))
        }
        Op::DeleteTask { t } => {
            Ok(format!("deleted {}", c.repo::<Task>(false).delete_by_id(&Universe::task(*t)).await?))
        }
        Op::Reassign { t, h } => {
            Ok(link(Task::rels().owner.reassign(db, &Universe::task(*t), &Universe::person(*h)).await?))
        }
        Op::LinkTask { h, t } => {
            Ok(link(Person::rels().tasks.link(db, &Universe::person(*h), &Universe::task(*t)).await?))
        }
        Op::UnlinkTask { h, t } => {
            Ok(link(Person::rels().tasks.unlink(db, &Universe::person(*h), &Universe::task(*t)).await?))
        }
        Op::UnlinkOwner { t, h } => {
            Ok(link(Task::rels().owner.unlink(db, &Universe::task(*t), &Universe::person(*h)).await?))
        }
        Op::SetOwnerPlainly { t, h } => {
            let o = c
                .repo::<Task>(false)
                .update_by_id(&Universe::task(*t), Task::fields().owner.set(Some(Universe::person(*h))))
                .await?;
            Ok(outcome(o))
        }
        Op::InsertItem { i, name } => {
            c.repo::<Item>(false).insert(&Item { id: Universe::item(*i), name: name.clone(), reviews: vec![] }).await?;
            Ok(String::new())
        }
        Op::ReplaceItem { i, name } | Op::SaveItem { i, name } => {
            let repo = c.repo::<Item>(false);
            let Some(item) = repo.get(&Universe::item(*i)).await? else { return Ok("no such item".into()) };
            let item = Item { name: name.clone(), ..item };
            if matches!(op, Op::SaveItem { .. }) {
                repo.save(&item).await?;
            } else {
                repo.replace(&item).await?;
            }
            let rids: Vec<i32> = item.reviews.iter().map(|r| r.review_id).collect();
            Ok(format!("subset as read {rids:?}"))
        }
        Op::DeleteItem { i } => {
            Ok(format!("deleted {}", c.repo::<Item>(false).delete_by_id(&Universe::item(*i)).await?))
        }
        Op::InsertReview { v, i, text, date } => {
            c.repo::<Review>(false).insert(&review_doc(*v, *i, text, *date)).await?;
            Ok(String::new())
        }
        Op::InsertManyReviews { reviews } => {
            let docs: Vec<Review> = reviews.iter().map(|(v, i, t, d)| review_doc(*v, *i, t, *d)).collect();
            c.repo::<Review>(false).insert_many(&docs).await?;
            Ok(String::new())
        }
        Op::EditReviewText { v, text, txn } => {
            let o = c
                .repo::<Review>(*txn)
                .update_by_id(&Universe::review(*v), Review::fields().text.set(text.clone()))
                .await?;
            Ok(outcome(o))
        }
        Op::EditReviewDate { v, date } => {
            let o = c
                .repo::<Review>(false)
                .update_by_id(&Universe::review(*v), Review::fields().published_date.set(DateTime::from_millis(*date)))
                .await?;
            Ok(outcome(o))
        }
        Op::MoveReview { v, i } => {
            let o = c
                .repo::<Review>(false)
                .update_by_id(&Universe::review(*v), Review::fields().product_id.set(Universe::item(*i)))
                .await?;
            Ok(outcome(o))
        }
        Op::ReplaceReview { v, i, text, date } | Op::SaveReview { v, i, text, date } => {
            let review = review_doc(*v, *i, text, *date);
            let repo = c.repo::<Review>(false);
            if matches!(op, Op::SaveReview { .. }) {
                repo.save(&review).await?;
            } else {
                repo.replace(&review).await?;
            }
            Ok(String::new())
        }
        Op::DeleteReview { v } => {
            Ok(format!("deleted {}", c.repo::<Review>(false).delete_by_id(&Universe::review(*v)).await?))
        }
        Op::DeleteManyReviews { vs } => {
            let ids: Vec<ObjectId> = vs.iter().map(|v| Universe::review(*v)).collect();
            Ok(format!("deleted {}", c.repo::<Review>(false).delete_many(Review::fields().id.is_in(&ids)).await?))
        }
        Op::RebuildSubset { i } => {
            Ok(format!("holds {}", Item::rels().reviews.rebuild(db, &Universe::item(*i)).await?))
        }
        Op::InsertPost { b } => {
            c.repo::<Post>(false).insert(&Post { id: Universe::post(*b), title: format!("post {b}") }).await?;
            Ok(String::new())
        }
        Op::DeletePost { b } => {
            Ok(format!("deleted {}", c.repo::<Post>(false).delete_by_id(&Universe::post(*b)).await?))
        }
        Op::AppendComment { b, text } => {
            let comment = Comment { name: "reader".into(), text: text.clone() };
            let a = CommentPage::rels().comments.append(db, &Universe::post(*b), &comment).await?;
            Ok(format!("page {:?}", a.page.unwrap_or_default()))
        }
        Op::Repair { source } | Op::Verify { source } => {
            let r = scan(db, *source, matches!(op, Op::Repair { .. }))?;
            Ok(format!("scanned {} stale {} dangling {} fixed {}", r.scanned, r.stale, r.dangling, r.fixed))
        }
        Op::FaultOn(fault) => fail_point(db, Some(fault)).await.map(|()| String::new()),
        Op::FaultOff => fail_point(db, None).await.map(|()| String::new()),
    }
}

/// The state every history starts from, written through docrel (inline,
/// no faults); the comments it appended.
async fn setup(db: &Database, seed: u64) -> docrel::Result<Vec<(i32, String)>> {
    Part::repo(db).ensure_indexes().await?;
    Product::repo(db).ensure_indexes().await?;
    Person::repo(db).ensure_indexes().await?;
    Task::repo(db).ensure_indexes().await?;
    Item::repo(db).ensure_indexes().await?;
    Review::repo(db).ensure_indexes().await?;
    Post::repo(db).ensure_indexes().await?;
    CommentPage::repo(db).ensure_indexes().await?;

    let products: Vec<Product> = (0..SETUP_PRODUCTS)
        .map(|r| Product { id: Universe::product(r), name: format!("r-s.{r}"), parts: vec![] })
        .chain([Product { id: Universe::sentinel_product(), name: "sentinel".into(), parts: vec![] }])
        .collect();
    Product::repo(db).insert_many(&products).await?;
    let parts: Vec<Part> = (0..SETUP_PARTS)
        .map(|p| Part {
            id: Universe::part(p),
            name: format!("p-s.{p}"),
            product: Universe::product(p % SETUP_PRODUCTS),
            product_name: STALE.into(),
            qty: 1,
        })
        .chain([Part {
            id: Universe::sentinel_part(),
            name: "sentinel".into(),
            product: Universe::sentinel_product(),
            product_name: STALE.into(),
            qty: 1,
        }])
        .collect();
    Part::repo(db).insert_many(&parts).await?;
    for r in 0..SETUP_PRODUCTS {
        // Part 0 is shared by every product: a rename of it fans out widely.
        let list = [0, (r + 1) % SETUP_PARTS, (r + SETUP_PRODUCTS) % SETUP_PARTS];
        Product::repo(db)
            .replace(&Product { id: Universe::product(r), name: format!("r-s.{r}"), parts: part_refs(&list) })
            .await?;
    }

    // Both sides of the two-way reference written by the inserts themselves
    // (link and reassign are exercised by the histories).
    let owner = |t: usize| t % SETUP_PEOPLE;
    let people: Vec<Person> = (0..SETUP_PEOPLE)
        .map(|h| Person {
            id: Universe::person(h),
            name: format!("h-s.{h}"),
            tasks: (0..SETUP_TASKS).filter(|t| owner(*t) == h).map(Universe::task).collect(),
        })
        .collect();
    Person::repo(db).insert_many(&people).await?;
    let tasks: Vec<Task> = (0..SETUP_TASKS)
        .map(|t| Task {
            id: Universe::task(t),
            description: format!("t-s.{t}"),
            owner: Some(Universe::person(owner(t))),
            owner_name: STALE.into(),
        })
        .collect();
    Task::repo(db).insert_many(&tasks).await?;

    let items: Vec<Item> =
        (0..plan::ITEMS).map(|i| Item { id: Universe::item(i), name: format!("i-s.{i}"), reviews: vec![] }).collect();
    Item::repo(db).insert_many(&items).await?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5e7u64);
    let reviews: Vec<Review> = (0..SETUP_REVIEWS)
        .map(|v| {
            let date = plan::unique_date(&mut rng, plan::MAX_WORKERS, v, 0);
            review_doc(v, v % plan::ITEMS, &format!("v-s.{v}"), date)
        })
        .collect();
    Review::repo(db).insert_many(&reviews).await?;

    let posts: Vec<Post> =
        (0..plan::POSTS).map(|b| Post { id: Universe::post(b), title: format!("post {b}") }).collect();
    Post::repo(db).insert_many(&posts).await?;
    let mut appended = Vec::new();
    for (b, n) in SETUP_COMMENTS.iter().enumerate() {
        for k in 0..*n {
            let text = format!("c-s.{b}.{k}");
            CommentPage::rels()
                .comments
                .append(db, &Universe::post(b), &Comment { name: "reader".into(), text: text.clone() })
                .await?;
            appended.push((Universe::post(b), text));
        }
    }
    Ok(appended)
}

/// The sync worker of a deferred history, restarted whenever it stops.
struct Sync {
    task: tokio::task::JoinHandle<()>,
    applied: tokio::sync::mpsc::UnboundedReceiver<Applied>,
}

impl Sync {
    async fn start(db: &Database, notes: Arc<Mutex<Vec<String>>>, t0: Instant) -> Result<Sync, String> {
        let (tx, applied) = tokio::sync::mpsc::unbounded_channel();
        let worker_db = db.clone();
        let task = tokio::spawn(async move {
            loop {
                let tx = tx.clone();
                let result = SyncWorker::new(&worker_db, "history").run(move |a| drop(tx.send(a.clone()))).await;
                if let Ok(mut n) = notes.lock() {
                    n.push(format!("{:.3}s sync worker stopped ({result:?}); restarted", t0.elapsed().as_secs_f64()));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match SyncWorker::new(db, "history").stored_token().await {
                Ok(Some(_)) => break,
                Ok(None) | Err(_) if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(20)).await,
                other => {
                    task.abort();
                    return Err(format!("the sync worker never stored a resume token: {other:?}"));
                }
            }
        }
        Ok(Sync { task, applied })
    }

    /// Writes the drain marker and waits for the worker to apply it: the
    /// change stream is ordered, so everything before it was applied too.
    async fn drain(mut self, db: &Database) -> Result<(), String> {
        let marker = Part::repo(db)
            .deferred_fan_out()
            .update_by_id(&Universe::sentinel_part(), Part::fields().name.set("drained".into()))
            .await;
        if let Err(e) = marker {
            self.task.abort();
            return Err(format!("writing the drain marker failed: {e}"));
        }
        let deadline = tokio::time::Instant::now() + DRAIN_TIMEOUT;
        let result = loop {
            match tokio::time::timeout_at(deadline, self.applied.recv()).await {
                Ok(Some(a)) if a.source == "parts" && a.id == Bson::ObjectId(Universe::sentinel_part()) => break Ok(()),
                Ok(Some(_)) => {}
                Ok(None) => break Err("the sync worker's channel closed".to_owned()),
                Err(_) => {
                    break Err(format!("the sync worker did not apply the drain marker within {DRAIN_TIMEOUT:?}"))
                }
            }
        };
        self.task.abort();
        let _ = self.task.await;
        result
    }
}

/// What the history adds to the check of I4.
fn facts(setup: &[(i32, String)], records: &[Record]) -> Facts {
    let mut f = Facts { appended: setup.to_vec(), posts_deleted: Vec::new() };
    for r in records {
        match (&r.op, &r.res) {
            (Op::AppendComment { b, text }, Res::Ok(_)) => f.appended.push((Universe::post(*b), text.clone())),
            (Op::DeletePost { b }, _) => f.posts_deleted.push(Universe::post(*b)),
            _ => {}
        }
    }
    f
}

/// Whether `DOCREL_HISTORY_TRACE=1` asks for every operation as it ends (on stderr).
fn trace() -> bool {
    std::env::var("DOCREL_HISTORY_TRACE").is_ok_and(|v| v == "1")
}

/// mongod aborts a transaction idle for 60 s on its own; SecantusDB only
/// when some transaction statement reaches its registry. This task sends
/// one every few seconds (a read in a transaction, aborted, on a client of
/// its own that no fail point targets), so that a transaction left open by
/// a cut connection is reaped as mongod would reap it.
struct Reaper(tokio::task::JoinHandle<()>);

impl Reaper {
    async fn start(db_name: &str) -> Result<Reaper, String> {
        let uri = std::env::var(docrel::URI_VARIABLE).map_err(|_| "MONGODB_URI is not set".to_owned())?;
        let client = docrel::connect(&uri).await.map_err(|e| e.to_string())?;
        let coll = client.database(db_name).collection::<docrel::bson::Document>("_history_reaper");
        Ok(Reaper(tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(5)).await;
                let Ok(mut session) = client.start_session().await else { continue };
                if session.start_transaction().await.is_ok() {
                    let _ = tokio::time::timeout(Duration::from_secs(5), coll.find_one(doc! {}).session(&mut session))
                        .await;
                    let _ = session.abort_transaction().await;
                }
            }
        })))
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Runs a history in a database of its own and checks the contract.
/// `Err` is a failure of the harness (no server, setup refused).
pub async fn run(plan: &Plan) -> Result<Outcome, String> {
    let t = TestDb::new(&format!("history_s{}", plan.seed)).await.map_err(|e| e.to_string())?;
    let reaper = Reaper::start(t.db.name()).await?;
    let result = run_in(&t, plan).await;
    // The database is dropped while the reaper still runs.
    drop(t);
    drop(reaper);
    result
}

async fn run_in(t: &TestDb, plan: &Plan) -> Result<Outcome, String> {
    let started = Instant::now();
    let db = t.db.clone();
    if trace() {
        eprintln!("seed {}: setup in {}", plan.seed, db.name());
    }
    let setup_comments = setup(&db, plan.seed).await.map_err(|e| format!("setup failed: {e}"))?;
    if trace() {
        eprintln!("seed {}: setup done ({:?}, faults {})", plan.seed, plan.mode, plan.faults);
    }
    let mut outcome = Outcome {
        plan: plan.clone(),
        records: Vec::new(),
        notes: Vec::new(),
        contract: Contract::A,
        before_repair: Vec::new(),
        violations: Vec::new(),
        repair: Vec::new(),
        elapsed: Duration::ZERO,
    };
    let facts0 = Facts { appended: setup_comments.clone(), posts_deleted: vec![] };
    let after_setup = check::check(&Snapshot::read(&db).await?, &facts0, CHECKED);
    if !after_setup.is_empty() {
        outcome.notes.push("setup (docrel calls, inline, no faults) already broke the invariants".into());
        outcome.violations = after_setup;
        outcome.elapsed = started.elapsed();
        return Ok(outcome);
    }

    let t0 = Instant::now();
    let notes = Arc::new(Mutex::new(Vec::new()));
    let sync = match plan.mode {
        Mode::Deferred => Some(Sync::start(&db, notes.clone(), t0).await?),
        Mode::Inline => None,
    };
    let ctx = Ctx { db: db.clone(), mode: plan.mode, gate: Arc::new(tokio::sync::RwLock::new(())) };
    let serial = plan.serial_transactions;
    let records = Arc::new(Mutex::new(Vec::new()));
    let mut workers = Vec::new();
    for (w, ops) in plan.workers.iter().enumerate() {
        let (ctx, ops, records) = (ctx.clone(), ops.clone(), records.clone());
        workers.push(tokio::spawn(async move {
            for (seq, op) in ops.into_iter().enumerate() {
                let start = t0.elapsed();
                let alone = serial && op.runs_transaction();
                let guarded = async {
                    let _shared = if alone { None } else { Some(ctx.gate.read().await) };
                    let _alone = if alone { Some(ctx.gate.write().await) } else { None };
                    exec(&ctx, &op).await
                };
                let res = match tokio::time::timeout(OP_TIMEOUT, guarded).await {
                    Ok(Ok(s)) => Res::Ok(s),
                    Ok(Err(e)) if op.is_fault() => Res::Refused(e.to_string()),
                    Ok(Err(e)) => classify(&e),
                    Err(_) => Res::TimedOut,
                };
                let end = t0.elapsed();
                if trace() {
                    eprintln!("{}", Record { worker: w, seq, op: op.clone(), start, end, res: res.clone() });
                }
                if let Ok(mut r) = records.lock() {
                    r.push(Record { worker: w, seq, op, start, end, res });
                }
            }
        }));
    }
    for w in workers {
        w.await.map_err(|e| format!("a worker panicked: {e}"))?;
    }
    // Quiesce: no more faults, the sync worker drained.
    if plan.faults {
        fail_point(&db, None).await.map_err(|e| format!("turning the fail point off: {e}"))?;
    }
    let mut liveness = Vec::new();
    if let Some(sync) = sync {
        if let Err(e) = sync.drain(&db).await {
            liveness.push(Violation { inv: Inv::Liveness, what: e });
        }
    }
    outcome.records = records.lock().map(|r| r.clone()).unwrap_or_default();
    outcome.notes.extend(notes.lock().map(|n| n.clone()).unwrap_or_default());
    for r in &outcome.records {
        if r.end - r.start > SLOW {
            outcome.notes.push(format!("slow ({:.1}s): {r}", (r.end - r.start).as_secs_f64()));
        }
    }
    let facts = facts(&setup_comments, &outcome.records);
    let failed = outcome.records.iter().any(|r| !r.op.is_fault() && r.res.failed());
    let snapshot = Snapshot::read(&db).await?;
    if failed {
        outcome.contract = Contract::B;
        outcome.before_repair = check::check(&snapshot, &facts, CHECKED);
        match repair_everything(&db).await {
            Ok(report) => outcome.repair = report,
            Err(e) => liveness.push(Violation { inv: Inv::Liveness, what: format!("the repair pass failed: {e}") }),
        }
        let repaired = Snapshot::read(&db).await?;
        outcome.violations = check::check(&repaired, &facts, CHECKED_AFTER_REPAIR);
    } else {
        outcome.violations = check::check(&snapshot, &facts, CHECKED);
    }
    outcome.violations.extend(liveness);
    outcome.elapsed = started.elapsed();
    Ok(outcome)
}
