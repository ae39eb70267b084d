//! An online change of the rules of derived data, while old and new
//! versions of the programs writing a database run side by side (the model
//! is F1's online schema change: intermediate states, and leases).
//!
//! A change moves through states, saved in [`CHANGE_COLLECTION`] so that a
//! stopped change resumes where it was:
//!
//! 1. **announced**: the new rules are published and the removed ones
//!    taken out of the stored schema. Every docrel process re-reads the
//!    schema at least once a lease before it writes
//!    ([`crate::schema::set_lease`]), so from here on each writer either
//!    follows the new rules or, unable to confirm them, writes nothing.
//! 2. **maintained**: after two leases (one for every process to confirm,
//!    one for writes that began under the old schema to finish), every
//!    write maintains the new rules.
//! 3. **backfilled**: the indexes the program needs are built, and the repairs of the new rules' sources have rewritten
//!    every copy and subset made before, collection by collection (each
//!    resumable from its checkpoint). What is backfilled is every rule of
//!    the program that no complete change backfilled before, published or
//!    not: a rule a program published at start-up has no data written for
//!    what was stored before it. An array made two-way has its other side
//!    built first, page by page in transactions (`inverse_build.rs`).
//! 4. **complete**: from here every derived value of the new rules is
//!    true, whatever mix of versions wrote meanwhile (a value being
//!    renamed is true once its write returns). A verify of the backfilled
//!    collections runs last; what it finds is reported.

use crate::admin::checks;
use crate::error::{Error, Misuse, Result};
use crate::schema::stored::{self, Diff, StoredType};
use mongodb::bson::{doc, Bson, DateTime, Document as BsonDoc};
use mongodb::Database;
use serde::Serialize;
use std::time::Duration;

pub use super::backfilled::CHANGE_COLLECTION;

/// What a change did, and where it stands.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ChangeReport {
    /// The change's id (from the rules it publishes and removes).
    pub id: String,
    /// The rules it adds and the backfills they need.
    pub diff: Diff,
    /// The rules it removed, as `collection.field`.
    pub removed: Vec<String>,
    /// Whether it resumed a change stopped before.
    pub resumed: bool,
    /// How long it waited for every process to follow the new rules.
    pub waited: Duration,
    /// The indexes it built (those the new rules need and the database lacked).
    pub indexes_built: usize,
    /// The collections whose repair backfilled the new rules, and
    /// `inverse:<collection>.<field>` for each array made two-way whose
    /// other side was built.
    pub backfilled: Vec<String>,
    /// Values the backfill rewrote.
    pub fixed: u64,
    /// Stale values the verify after the backfill saw (under live writes:
    /// fan-outs still on their way).
    pub stale: u64,
    /// The state it reached: `announced`, `maintained`, `backfilled` or `complete`.
    pub state: String,
}

impl ChangeReport {
    /// Whether the change completed: every derived value of its rules is true.
    pub fn complete(&self) -> bool {
        self.state == "complete"
    }
}

/// How far a long step of a change has come ([`Change::run_with`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Progress<'p> {
    /// The wait for every process to follow the new rules: milliseconds
    /// waited of the whole wait.
    Waiting {
        /// Waited so far.
        waited_ms: u64,
        /// The whole wait.
        total_ms: u64,
    },
    /// A collection's backfill: documents repaired of its total.
    Backfill {
        /// The collection.
        collection: &'p str,
        /// Documents done.
        done: u64,
        /// Documents in all.
        total: u64,
    },
}

/// A change of the stored schema to a program's (see the module's docs).
///
/// ```no_run
/// # async fn f(db: docrel::mongodb::Database) -> docrel::Result<()> {
/// let program = docrel::schema::stored::program();
/// let report = docrel::admin::change::change(&db, program)
///     .remove("products", "old_name")
///     .run(|| false, |step| eprintln!("{step}"))
///     .await?;
/// assert!(report.complete());
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a change does nothing until run"]
pub struct Change<'a> {
    db: &'a Database,
    program: Vec<StoredType>,
    removals: Vec<(String, String)>,
    wait: Option<Duration>,
}

/// A change of the stored schema of `db` to `program`'s rules (the types a
/// program exports with `docrel::schema::export()`).
pub fn change(db: &Database, program: Vec<StoredType>) -> Change<'_> {
    Change { db, program, removals: Vec::new(), wait: None }
}

impl<'a> Change<'a> {
    /// Also removes the stored rule on `field` of `collection` (see
    /// [`stored::retract`]). Remove a rule once no program version that
    /// reads its derived values runs any more.
    pub fn remove(mut self, collection: &str, field: &str) -> Self {
        self.removals.push((collection.to_owned(), field.to_owned()));
        self
    }

    /// How long to wait between announcing and backfilling: two leases by
    /// default ([`crate::schema::lease_for`]); it must cover the lease of every
    /// process of the fleet.
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = Some(wait);
        self
    }

    /// Runs (or resumes) the change. `stop` is asked between steps and
    /// batches: a stopped change keeps its state and resumes when run
    /// again. `step` hears each step in words.
    pub async fn run(self, stop: impl FnMut() -> bool, step: impl FnMut(&str)) -> Result<ChangeReport> {
        self.run_with(stop, step, |_| {}).await
    }

    /// [`Change::run`], with `progress` told how far each long step has
    /// come (the wait for the fleet, each collection's backfill): what the
    /// command line draws as a bar.
    pub async fn run_with(
        self,
        mut stop: impl FnMut() -> bool,
        mut step: impl FnMut(&str),
        mut progress: impl FnMut(&Progress<'_>),
    ) -> Result<ChangeReport> {
        let db = self.db;
        let mut report = ChangeReport { id: self.id(), ..ChangeReport::default() };
        let states = db.collection::<BsonDoc>(CHANGE_COLLECTION);
        let saved =
            states.find_one(doc! {"_id": &report.id}).await.map_err(|e| Error::driver("find", CHANGE_COLLECTION, e))?;
        report.resumed = saved.is_some();
        let saved = match saved {
            Some(s) => s,
            None => self.announce(&mut report, &mut step).await?,
        };
        report.diff = bson_field(&saved, "diff")?;
        report.removed = bson_field(&saved, "removed")?;
        report.backfilled = bson_field(&saved, "backfilled")?;
        report.state = saved.get_str("state").unwrap_or("announced").to_owned();
        if report.state == "complete" {
            step("complete already");
            return Ok(report);
        }
        let announced = saved.get_datetime("announced_at").map(|d| d.timestamp_millis()).unwrap_or(0);
        if !self.wait_for_fleet(announced, &mut report, &mut stop, &mut step, &mut progress).await? {
            return Ok(report);
        }
        self.set_state(&mut report, "maintained").await?;
        // The indexes the new rules need, before the backfill reads by them.
        for (collection, model) in crate::admin::missing_indexes::missing_indexes(db, &self.program).await? {
            step(&format!("index build: {collection} {}", crate::admin::index_plan::show(&model.keys)));
            db.collection::<BsonDoc>(&collection)
                .create_index(model)
                .await
                .map_err(|e| Error::driver("createIndexes", collection.clone(), e))?;
            report.indexes_built += 1;
        }
        if !self.backfill(&mut report, &mut stop, &mut step, &mut progress).await? {
            return Ok(report);
        }
        self.set_state(&mut report, "backfilled").await?;
        self.verify(&mut report, &mut stop, &mut step).await
    }

    /// Waits until two leases (or the wait set) after `announced`; `false`
    /// when stopped first.
    async fn wait_for_fleet(
        &self,
        announced: i64,
        report: &mut ChangeReport,
        stop: &mut impl FnMut() -> bool,
        step: &mut impl FnMut(&str),
        progress: &mut impl FnMut(&Progress<'_>),
    ) -> Result<bool> {
        let wait = self.wait.unwrap_or(crate::schema::stored::lease_for(self.db) * 2);
        let total_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
        let until = announced.saturating_add(i64::try_from(total_ms).unwrap_or(i64::MAX));
        let left = until - DateTime::now().timestamp_millis();
        if left > 0 {
            step(&format!("waiting {:.1} s for every process to follow the new rules", left as f64 / 1000.0));
        }
        loop {
            let left = until - DateTime::now().timestamp_millis();
            let waited_ms = total_ms.saturating_sub(u64::try_from(left).unwrap_or(0));
            progress(&Progress::Waiting { waited_ms: waited_ms.min(total_ms), total_ms });
            if left <= 0 {
                break;
            }
            if stop() {
                step("stopped: run the change again to resume it");
                return Ok(false);
            }
            tokio::time::sleep(Duration::from_millis(left.min(200) as u64)).await;
        }
        report.waited = wait;
        Ok(true)
    }

    /// Repairs each collection the new rules derive data in, saving each
    /// one done; `false` when stopped first.
    async fn backfill(
        &self,
        report: &mut ChangeReport,
        stop: &mut impl FnMut() -> bool,
        step: &mut impl FnMut(&str),
        progress: &mut impl FnMut(&Progress<'_>),
    ) -> Result<bool> {
        for c in report.diff.inverses.clone() {
            let key = format!("inverse:{}.{}", c.collection, c.field);
            if report.backfilled.contains(&key) {
                super::inverse_build::built(self.db, &c).await?;
                continue;
            }
            step(&format!("backfill: build `{}.{}` from `{}.{}`", c.target, c.inverse, c.collection, c.field));
            let mut each = |done, total| progress(&Progress::Backfill { collection: &c.target, done, total });
            if !super::inverse_build::build(self.db, &c, &mut *stop, &mut each).await? {
                step("stopped: run the change again to resume it");
                return Ok(false);
            }
            self.backfilled(report, key).await?;
            super::inverse_build::built(self.db, &c).await?;
        }
        for collection in report.diff.repairs.clone() {
            if report.backfilled.contains(&collection) {
                continue;
            }
            step(&format!("backfill: repair {collection}"));
            let each = |_: &checks::Job, r: &checks::RunReport| {
                progress(&Progress::Backfill { collection: &collection, done: r.done, total: r.total })
            };
            let run = checks::repair(self.db, Some(&collection))?.run(&mut *stop, each).await?;
            report.fixed += run.fixed();
            if run.interrupted {
                step("stopped: run the change again to resume it");
                return Ok(false);
            }
            self.backfilled(report, collection).await?;
        }
        Ok(true)
    }

    /// Saves `what` as backfilled, so a resumed change skips it.
    async fn backfilled(&self, report: &mut ChangeReport, what: String) -> Result<()> {
        self.db
            .collection::<BsonDoc>(CHANGE_COLLECTION)
            .update_one(doc! {"_id": &report.id}, doc! {"$addToSet": {"backfilled": &what}})
            .await
            .map_err(|e| Error::driver("update", CHANGE_COLLECTION, e))?;
        report.backfilled.push(what);
        Ok(())
    }

    /// Publishes the new rules, removes the old, and saves the change as
    /// announced.
    async fn announce(&self, report: &mut ChangeReport, step: &mut impl FnMut(&str)) -> Result<BsonDoc> {
        let diff = super::backfilled::owed(self.db, &self.program).await?;
        stored::publish_types(self.db, &self.program).await?;
        // A publish keeps the stored bounds: a change is what changes them.
        stored::rebound(self.db, &diff.bounds).await?;
        for b in &diff.bounds {
            step(&format!("bound published: {}", b.describe()));
        }
        // And keeps arrays one-way: a change makes them two-way. Their other
        // sides are read from the arrays until built.
        super::inverse_build::announce(self.db, &diff.inverses).await?;
        stored::reinverse(self.db, &diff.inverses).await?;
        for i in &diff.inverses {
            step(&format!("inverse published: {}", i.describe()));
        }
        for i in &diff.one_way {
            step(&format!("inverse kept two-way: {}", i.describe_one_way()));
        }
        let mut removed = Vec::new();
        for (collection, field) in &self.removals {
            if stored::retract(self.db, collection, field).await? {
                removed.push(format!("{collection}.{field}"));
            }
        }
        step(&format!(
            "announced: {} rule(s) added, {} removed; backfills: {}",
            diff.added_rules.len() + diff.added_collections.len(),
            removed.len(),
            diff.repairs.len()
        ));
        let saved = doc! {
            "_id": &report.id,
            "state": "announced",
            "announced_at": DateTime::now(),
            "diff": to_bson(&diff)?,
            "removed": to_bson(&removed)?,
            "backfilled": [],
        };
        let states = self.db.collection::<BsonDoc>(CHANGE_COLLECTION);
        states.insert_one(&saved).await.map_err(|e| Error::driver("insert", CHANGE_COLLECTION, e))?;
        // This process follows the new rules at once.
        stored::obey(self.db).await?;
        Ok(saved)
    }

    /// Completes the change, then verifies its collections once. Under
    /// live writes a verify also sees values whose fan-out is still on its
    /// way, so what it finds is reported, not waited for: the guarantee
    /// rests on the leases and the backfill, and a verify with writes quiet
    /// shows 0.
    async fn verify(
        &self,
        report: &mut ChangeReport,
        stop: &mut impl FnMut() -> bool,
        step: &mut impl FnMut(&str),
    ) -> Result<ChangeReport> {
        super::backfilled::record(self.db, &self.program, &report.removed).await?;
        self.set_state(report, "complete").await?;
        report.stale = 0;
        for collection in &report.diff.repairs {
            report.stale += checks::verify(self.db, Some(collection))?.run(&mut *stop, |_, _| {}).await?.found();
        }
        step(&match report.stale {
            0 => "complete: every value the new rules derive is true".to_owned(),
            n => format!(
                "complete; a verify under live writes saw {n} value(s) whose fan-out was on its way (`docrel verify` \
                 with writes quiet shows what, if anything, writes without docrel)"
            ),
        });
        Ok(report.clone())
    }

    async fn set_state(&self, report: &mut ChangeReport, state: &str) -> Result<()> {
        report.state = state.to_owned();
        self.db
            .collection::<BsonDoc>(CHANGE_COLLECTION)
            .update_one(doc! {"_id": &report.id}, doc! {"$set": {"state": state}})
            .await
            .map_err(|e| Error::driver("update", CHANGE_COLLECTION, e))?;
        Ok(())
    }

    /// The change's id: the same program and removals give the same id, so
    /// running it again resumes it.
    fn id(&self) -> String {
        let prints: Vec<String> = self.program.iter().map(stored::fingerprint).collect();
        let removals: Vec<String> = self.removals.iter().map(|(c, f)| format!("-{c}.{f}")).collect();
        format!("{:016x}", crate::schema::document::field_key(&[prints, removals].concat().join(",")))
    }
}

fn to_bson<T: Serialize>(value: &T) -> Result<Bson> {
    crate::bson_compat::to_bson(value)
        .map_err(|e| Error::Encode { what: "a schema change's state".into(), message: e.to_string() })
}

fn bson_field<T: serde::de::DeserializeOwned>(saved: &BsonDoc, field: &str) -> Result<T> {
    let value = saved.get(field).cloned().unwrap_or(Bson::Null);
    crate::bson_compat::from_bson(value).map_err(|e| Error::Invalid {
        what: Misuse::Schema,
        message: format!("the saved state of a schema change in `{CHANGE_COLLECTION}` cannot be read ({field}: {e})"),
    })
}
