//! A rule of derived data changed online during a history (issue 28's
//! rolling deploy; `--rule-change`, on in CI).
//!
//! The rules: documents of `h_rc_labels`, `{_id, ref, name, refs: [{id,
//! name}]}`, copy `Product::name` through the reference `ref` (top-level)
//! and `Part::name` into each element of the reference array `refs`. No binary of the
//! checker declares that type: it exists only as the stored type built
//! here ([`holder_type`]), so a process follows it only from the store.
//! Setup inserts the holders raw with wrong copies: only the fan-outs made
//! under the rule and the change's backfill can make them true.
//!
//! At a point drawn from the seed ([`RuleChange`]), this process runs
//! `docrel::admin::change::change` with that type while the workers go on
//! writing, here and in the second process, which learns the rule only
//! from the store within its lease; in some histories a second change
//! removes the element copy again (the top-level one stays). Every process holds the schema under [`LEASE`].
//! The change takes the gate (`gate.rs`) only for its backfill, as a plain
//! write of the catalog: its fan-outs are plain multi-document writes.
//! A change that fails (a fail point cuts it) is run again: it resumes.
//!
//! After the history (and its repair pass in a (b)-history where an
//! operation writing the catalog failed: otherwise before it, since no cut
//! fan-out can excuse a stale copy there), [`Changer::check`]
//! reads the raw documents: every change reported complete (a removed
//! copy gone from the stored schema) and every copy the rules still declare
//! equals the current name of the part it refers to, its version record
//! not ahead of it (I1; a holder of a part that does not exist dangles, as
//! everywhere).

use super::check::{all as raw, by_id, key, show, Inv, Violation};
use super::copies::{check_site, Site};
use super::gate::{entry, Class, Gate, Group};
use super::op::Op;
use super::plan::{Plan, RuleChange, PARTS, PRODUCTS};
use super::run::OP_TIMEOUT;
use super::universe::Universe;
use docrel::admin::change::{change, ChangeReport};
use docrel::bson::{doc, Bson, Document};
use docrel::mongodb::Database;
use docrel::schema::stored::{StoredCopy, StoredElemCopy, StoredField, StoredKind, StoredRelation, StoredType};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The collection of the holders of the stored-only rule.
pub const HOLDERS: &str = "h_rc_labels";
/// The lease every process of a rule-changing history holds schemas under.
pub const LEASE: Duration = Duration::from_millis(300);
/// How often a failed change is run again while the workers write.
const ATTEMPTS: usize = 20;
/// The copies of a rule: (copy, source field).
const NAME: &[(&str, &str)] = &[("name", "name")];
/// The rule some histories remove again: the element copy.
const REMOVED: &str = "refs.name";
/// The sources' collections and types.
const PART: (&str, &str) = ("parts", "Part");
const PRODUCT: (&str, &str) = ("products", "Product");

fn field(name: &str, rust_type: &str, kind: &str, target: Option<&str>) -> StoredField {
    let target = target.map(str::to_owned);
    StoredField {
        rust: name.to_owned(),
        bson: name.to_owned(),
        rust_type: rust_type.to_owned(),
        kind: kind.to_owned(),
        target,
    }
}

fn reference(field: &str, kind: StoredKind, to: (&str, &str), copies: Vec<StoredElemCopy>) -> StoredRelation {
    StoredRelation {
        field: field.to_owned(),
        rust_field: field.to_owned(),
        kind,
        target: Some(to.0.to_owned()),
        target_type: Some(to.1.to_owned()),
        inverse: None,
        on_delete: "nothing".to_owned(),
        order: Vec::new(),
        copies,
        elements: Vec::new(),
        subset: None,
        bucket: None,
        warn_above: None,
    }
}

/// The holders' type as another program would publish it: a copy of
/// `Product::name` through `ref`, and one of `Part::name` in each element
/// of `refs`.
pub fn holder_type() -> StoredType {
    let name = |(source, source_type): (&str, &str)| {
        ("name".to_owned(), source.to_owned(), source_type.to_owned(), "name".to_owned())
    };
    let (copy, source, source_type, source_field) = name(PART);
    let element = StoredElemCopy { field: copy, source, source_type, source_field };
    let (copy, source, source_type, source_field) = name(PRODUCT);
    let top = StoredCopy { field: copy, source, source_type, source_field, via: "ref".to_owned() };
    StoredType {
        collection: HOLDERS.to_owned(),
        rust_name: "Label".to_owned(),
        module: "labels".to_owned(),
        fields: vec![
            field("_id", "i32", "plain", None),
            field("ref", "ObjectId", "one", Some("products")),
            field("name", "String", "plain", None),
            field("refs", "Vec<LabelRef>", "structs", Some("parts")),
        ],
        relations: vec![
            reference("ref", StoredKind::RefOne { optional: false }, PRODUCT, Vec::new()),
            reference("refs", StoredKind::RefMany { max: Some(8), key: Some("id".to_owned()) }, PART, vec![element]),
        ],
        indexes: Vec::new(),
        copies: vec![top],
        shard_key: Vec::new(),
    }
}

/// The holders setup inserts, raw, every copy wrong: one per part id a
/// history names (most parts exist, some are inserted later), each listing
/// that part and part 0 and referring to a product (the same way).
pub fn holders() -> Vec<Document> {
    (0..PARTS)
        .map(|i| {
            let refs = [Universe::part(i), Universe::part(0)];
            let refs: Vec<Bson> = refs.iter().map(|id| doc! {"id": *id, "name": "stale"}.into()).collect();
            doc! {"_id": i as i32, "ref": Universe::product(i % PRODUCTS), "name": "stale", "refs": refs}
        })
        .collect()
}

/// Which change a run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Which {
    Add,
    Remove,
}

/// What the changes of a history did.
#[derive(Debug, Default)]
struct Log {
    added: Option<ChangeReport>,
    removed: Option<ChangeReport>,
    errors: Vec<String>,
    notes: Vec<String>,
}

/// The rule change of one history (see the module's head).
pub struct Changer {
    db: Database,
    plan: RuleChange,
    gate: Arc<Gate>,
    /// Operations this process's workers ended so far.
    progress: Arc<AtomicUsize>,
    /// How many they run in all.
    local_ops: usize,
    /// The workers are done.
    done: AtomicBool,
    t0: Instant,
    log: Mutex<Log>,
    /// A second database of this process beside the history's (`twin.rs`).
    twin: Mutex<Option<super::twin::Twin>>,
}

impl Changer {
    /// For a history that changes a rule: the short lease, and the holders
    /// inserted raw. `progress` counts the operations this process's
    /// workers end; `local_ops` is how many they run.
    pub async fn new(
        db: &Database,
        plan: &Plan,
        gate: Arc<Gate>,
        progress: Arc<AtomicUsize>,
        local_ops: usize,
    ) -> Result<Option<Changer>, String> {
        let Some(rule) = plan.rule_change else { return Ok(None) };
        docrel::schema::set_lease_for(db, LEASE);
        let coll = db.collection::<Document>(HOLDERS);
        coll.insert_many(holders()).await.map_err(|e| format!("inserting the holders of {HOLDERS}: {e}"))?;
        let (log, done, t0) = (Mutex::new(Log::default()), AtomicBool::new(false), Instant::now());
        let twin = Mutex::new(Some(super::twin::Twin::start(db).await?));
        Ok(Some(Changer { db: db.clone(), plan: rule, gate, progress, local_ops, done, t0, log, twin }))
    }

    /// Runs `workers` with the changes alongside; the workers' output.
    pub async fn alongside<T>(this: Option<&Changer>, workers: impl std::future::Future<Output = T>) -> T {
        let Some(changer) = this else { return workers.await };
        let workers = async {
            let out = workers.await;
            changer.done.store(true, Ordering::SeqCst);
            out
        };
        tokio::join!(workers, changer.during()).0
    }

    /// The changes while the workers write, each at its point.
    async fn during(&self) {
        if !self.reach(self.plan.start).await {
            return;
        }
        self.attempts(Which::Add, ATTEMPTS).await;
        if let Some(at) = self.plan.remove {
            if self.reach(at).await {
                self.attempts(Which::Remove, ATTEMPTS).await;
            }
        }
    }

    /// Waits until `permille` of this process's operations ended; `false`
    /// when the workers stopped before.
    async fn reach(&self, permille: usize) -> bool {
        let at = self.local_ops * permille / 1000;
        loop {
            if self.progress.load(Ordering::SeqCst) >= at {
                return true;
            }
            if self.done.load(Ordering::SeqCst) {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// After the history, faults off: completes what did not complete
    /// while the workers ran, as an operator would run it again.
    pub async fn finish(&self) {
        self.done.store(true, Ordering::SeqCst);
        self.attempts(Which::Add, 3).await;
        if self.plan.remove.is_some() {
            self.attempts(Which::Remove, 3).await;
        }
    }

    /// Runs change `which` until it completes, at most `n` times.
    async fn attempts(&self, which: Which, n: usize) {
        for _ in 0..n {
            let (complete, added) = self.state(which);
            if complete || (which == Which::Remove && !added) {
                return;
            }
            let started = self.t0.elapsed();
            let ran = tokio::time::timeout(OP_TIMEOUT, self.attempt(which)).await;
            let ran = ran.unwrap_or_else(|_| Err(format!("did not end within {OP_TIMEOUT:?}")));
            self.record(which, started, ran);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Keeps what a run of change `which` begun at `started` did.
    fn record(&self, which: Which, started: Duration, ran: Result<(ChangeReport, Vec<String>), String>) {
        let Ok(mut log) = self.log.lock() else { return };
        match ran {
            Ok((report, steps)) => {
                let what = format!(
                    "{which:?} [{:.3}..{:.3}] {} (fixed {}, seen stale under writes {}): {}",
                    started.as_secs_f64(),
                    self.t0.elapsed().as_secs_f64(),
                    report.state,
                    report.fixed,
                    report.stale,
                    steps.join("; ")
                );
                log.notes.push(what);
                *match which {
                    Which::Add => &mut log.added,
                    Which::Remove => &mut log.removed,
                } = Some(report);
            }
            Err(e) => log.errors.push(format!("{which:?} at {:.3}s: {e}", started.as_secs_f64())),
        }
    }

    /// Whether change `which` completed, and whether the adding one did.
    fn state(&self, which: Which) -> (bool, bool) {
        let Ok(log) = self.log.lock() else { return (false, false) };
        let done = |r: &Option<ChangeReport>| r.as_ref().is_some_and(ChangeReport::complete);
        let this = match which {
            Which::Add => &log.added,
            Which::Remove => &log.removed,
        };
        (done(this), done(&log.added))
    }

    /// One run of change `which`: announced (or resumed) outside the gate,
    /// then, once every process follows it, backfilled inside it.
    async fn attempt(&self, which: Which) -> Result<(ChangeReport, Vec<String>), String> {
        let make = || {
            let c = change(&self.db, vec![holder_type()]);
            match which {
                Which::Add => c,
                Which::Remove => c.remove(HOLDERS, REMOVED),
            }
        };
        let mut steps = Vec::new();
        if which == Which::Add && self.plan.published_first {
            // Published before the change, as at a program's start-up.
            docrel::schema::stored::publish_types(&self.db, &[holder_type()]).await.map_err(|e| e.to_string())?;
            steps.push("published before the change".to_owned());
        }
        // Asked to stop at its first question: it announces and returns.
        let first = make().run(|| true, |s| steps.push(s.to_owned())).await.map_err(|e| e.to_string())?;
        if first.complete() {
            return Ok((first, steps));
        }
        if first.state == "announced" {
            tokio::time::sleep(LEASE * 2).await;
        }
        let _pass = self.gate.enter_as(&[(Group::Catalog, Class::Plain)]).await;
        let report = make().run(|| false, |s| steps.push(s.to_owned())).await.map_err(|e| e.to_string())?;
        Ok((report, steps))
    }

    /// What the changes did, for the notes.
    fn notes(&self) -> Vec<String> {
        let Ok(log) = self.log.lock() else { return Vec::new() };
        let mut out: Vec<String> = log.notes.iter().map(|n| format!("rule change: {n}")).collect();
        if !log.errors.is_empty() {
            out.push(format!("rule change: {} failed run(s), run again: {}", log.errors.len(), log.errors.join(" | ")));
        }
        out
    }

    /// The check of a quiesced history before its repair pass, unless one
    /// of the `failed` operations wrote the catalog (its cut fan-out may
    /// have left holders stale until the repair pass): `None` then.
    pub async fn check_early<'o>(
        &self,
        seed: u64,
        mut failed: impl Iterator<Item = &'o Op>,
    ) -> Result<Option<Vec<Violation>>, String> {
        if failed.any(|op| entry(op).iter().any(|(g, _)| *g == Group::Catalog)) {
            return Ok(None);
        }
        let found = self.check(seed).await?;
        if let Ok(mut log) = self.log.lock() {
            log.notes.push("the copies were checked before any repair pass".to_owned());
        }
        Ok(Some(found))
    }

    /// Ends the history's rule change: its violations (checked `early`, or
    /// now), its notes, and this process forgets the history's schema.
    pub async fn conclude(
        &self,
        seed: u64,
        early: Option<Vec<Violation>>,
        violations: &mut Vec<Violation>,
        notes: &mut Vec<String>,
    ) -> Result<(), String> {
        let found = match early {
            Some(found) => found,
            None => self.check(seed).await?,
        };
        violations.extend(found);
        let twin = self.twin.lock().ok().and_then(|mut t| t.take());
        if let Some(twin) = twin {
            violations.extend(twin.conclude(seed).await?);
        }
        notes.extend(self.notes());
        self.forget().await
    }

    /// The check after the history (see the module's head).
    async fn check(&self, seed: u64) -> Result<Vec<Violation>, String> {
        let (added, removed_report) = match self.log.lock() {
            Ok(log) => (log.added.clone(), log.removed.clone()),
            Err(e) => return Err(e.to_string()),
        };
        let mut out = Vec::new();
        let incomplete = |which: &str, r: &Option<ChangeReport>| {
            let state = r.as_ref().map_or("never announced", |r| r.state.as_str()).to_owned();
            let what = format!("seed {seed}: the change {which} {HOLDERS}'s copies did not complete ({state})");
            Violation { inv: Inv::Liveness, what }
        };
        if !added.as_ref().is_some_and(ChangeReport::complete) {
            out.push(incomplete("adding", &added));
            return Ok(out);
        }
        let removed = self.plan.remove.is_some();
        if removed {
            if !self.state(Which::Remove).0 {
                out.push(incomplete("removing", &removed_report));
            }
            out.extend(still_stored(&self.db).await?);
        }
        let holders = raw(&self.db, HOLDERS).await?;
        let (parts, products) = (raw(&self.db, "parts").await?, raw(&self.db, "products").await?);
        let (found, checked) = copies(&holders, &parts, &products, !removed);
        let unrecorded = found.iter().filter(|v| v.inv == Inv::Unrecorded).count();
        if let Ok(mut log) = self.log.lock() {
            log.notes.push(format!(
                "checked {checked} copies of {} holders{} ({unrecorded} with no version record)",
                holders.len(),
                if removed { ", the top-level ones only" } else { "" }
            ));
        }
        out.extend(found.into_iter().filter(|v| v.inv == Inv::I1));
        Ok(out)
    }

    /// Makes this process forget the stored schema of the history's
    /// database: the schema graph is the process's, not the database's, so
    /// the rule would otherwise be followed in the next history's database
    /// before its change announced it there.
    async fn forget(&self) -> Result<(), String> {
        let schema = self.db.collection::<Document>(docrel::schema::stored::SCHEMA_COLLECTION);
        schema.delete_many(doc! {}).await.map_err(|e| format!("clearing the stored schema: {e}"))?;
        docrel::schema::obey(&self.db).await.map_err(|e| e.to_string())?;
        Ok(())
    }
}

/// After a removal: the stored schema must no longer hold the element
/// copy (and still hold the top-level one).
async fn still_stored(db: &Database) -> Result<Vec<Violation>, String> {
    let schema = raw(db, docrel::schema::stored::SCHEMA_COLLECTION).await?;
    let stored =
        schema.iter().find(|d| d.get_str("_id").ok() == Some(HOLDERS)).and_then(|d| d.get_document("type").ok());
    let count = |d: &Document| d.get_array("copies").map(|a| a.len()).unwrap_or(0);
    let top = stored.map_or(0, count);
    let inner: usize = stored
        .and_then(|t| t.get_array("relations").ok())
        .map_or(0, |r| r.iter().filter_map(Bson::as_document).map(count).sum());
    if (top, inner) == (1, 0) {
        return Ok(Vec::new());
    }
    let text = stored.map_or("(none)".to_owned(), |t| Bson::Document(t.clone()).to_string());
    let what = format!(
        "after the removal of {HOLDERS}.{REMOVED}, the stored schema holds {top} top-level and {inner} element \
         copies (expected 1 and 0): {text}"
    );
    Ok(vec![Violation { inv: Inv::Liveness, what }])
}

/// I1 of the stored-only rules over the raw `holders`, `parts` and
/// `products`, the element copies only when `elements` (also
/// [`Inv::Unrecorded`] for a copy with no version record); how many copies
/// it compared.
pub fn copies(
    holders: &[Document],
    parts: &[Document],
    products: &[Document],
    elements: bool,
) -> (Vec<Violation>, usize) {
    let (parts, products) = (by_id(parts), by_id(products));
    let (mut out, mut checked) = (Vec::new(), 0);
    for h in holders {
        let id = show(h.get("_id"));
        if let Some(product) = h.get("ref").and_then(|r| products.get(&key(r))) {
            let what = format!("{HOLDERS} {id} (product {}, a rule only the store declares)", show(h.get("ref")));
            check_site(&Site { what, values: h, holder: h, record: "ref", source: product, fields: NAME }, &mut out);
            checked += 1;
        }
        let refs = h.get_array("refs").ok().filter(|_| elements);
        let refs = refs.map(|a| a.iter().filter_map(Bson::as_document).collect::<Vec<_>>());
        for (k, e) in refs.unwrap_or_default().into_iter().enumerate() {
            let Some(part) = e.get("id").and_then(|r| parts.get(&key(r))) else { continue };
            let what = format!("{HOLDERS} {id} refs[{k}] (part {}, a rule only the store declares)", show(e.get("id")));
            check_site(&Site { what, values: e, holder: h, record: "refs", source: part, fields: NAME }, &mut out);
            checked += 1;
        }
    }
    (out, checked)
}

/// The summary's words for a history's rule change.
pub fn describe(rule: Option<RuleChange>) -> String {
    match rule {
        None => String::new(),
        Some(RuleChange { start, remove, published_first }) => {
            let first = if published_first { " (published first)" } else { "" };
            match remove {
                None => format!(" rules added at {}%{first}", start / 10),
                Some(r) => format!(" rules added at {}%{first}, one removed at {}%", start / 10, r / 10),
            }
        }
    }
}
