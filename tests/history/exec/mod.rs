//! Running one operation: the docrel calls of each kind (by schema in the
//! files beside this one), in a user's session when a session step runs
//! them, and which side of the contract an error is on.

mod catalog;
mod people;
mod reviews;
mod session;

pub use people::PULLED_OTHERS;

use super::op::{Fault, Op, Source};
use super::plan::Mode;
use super::run::Res;
use super::schema::*;
use docrel::bson::doc;
use docrel::mongodb::error::{ErrorKind, WriteFailure};
use docrel::mongodb::{ClientSession, Database};
use docrel::{relations::LinkWrite, repository::Call, repository::Repository, Document, Error};

/// What operations run against.
#[derive(Clone)]
pub struct Ctx {
    pub db: Database,
    pub mode: Mode,
    /// A client of the same server no fail point targets, for the
    /// checker's own commands between operations (`monitor::end_open`).
    pub janitor: docrel::mongodb::Client,
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

/// The user's session an operation runs in, if any.
pub type Sess<'s> = Option<&'s mut ClientSession>;

/// A docrel call run in the user's session when there is one.
trait Within<'a> {
    fn within(self, s: Sess<'a>) -> Self;
}

impl<'a, T, O> Within<'a> for Call<'a, T, O> {
    fn within(self, s: Sess<'a>) -> Self {
        match s {
            Some(s) => self.session(s),
            None => self,
        }
    }
}

impl<'a> Within<'a> for LinkWrite<'a> {
    fn within(self, s: Sess<'a>) -> Self {
        match s {
            Some(s) => self.session(s),
            None => self,
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
        // Not docrel's: the checker has no runner for the operation.
        Error::Invalid { what: docrel::Misuse::Application("history"), .. } => Res::Failed(text),
        Error::Invalid { what: docrel::Misuse::Application(session::ABORTED), .. } => Res::Refused(text),
        Error::EmbedFull { .. }
        | Error::StillReferenced { .. }
        | Error::NotFound { .. }
        | Error::Invalid { .. }
        | Error::TwoWayField { .. }
        | Error::Decode { .. }
        // The schema could not be confirmed within the lease: nothing was
        // written, which the history holds it to.
        | Error::SchemaLease { .. } => Res::Refused(text),
        // docrel's own answer: on MongoDB 8.0+ an `insert_many` is a
        // `bulkWrite` whose refusal the driver reports in another kind.
        Error::Driver { source, .. } if is_duplicate_key(source) || e.is_duplicate_key() => Res::Refused(text),
        _ => Res::Failed(text),
    }
}

fn outcome(o: docrel::repository::UpdateOutcome) -> String {
    format!("matched {} modified {}", o.matched, o.modified)
}

fn link(o: docrel::relations::LinkOutcome) -> String {
    format!("changed {} transactional {}", o.changed, o.transactional)
}

/// Turns the fail point on (`Some`) or off, for this history's client.
pub async fn fail_point(db: &Database, fault: Option<&Fault>) -> docrel::Result<()> {
    let command = match fault {
        None => doc! {"configureFailPoint": "failCommand", "mode": "off"},
        Some(f) => {
            let mut data = doc! {"failCommands": f.commands.clone(), "appName": db.name()};
            match f.error_code {
                _ if f.write_concern => data.insert(
                    "writeConcernError",
                    doc! {"code": 64, "errmsg": "waiting for replication timed out (history fault)"},
                ),
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
fn scan(db: &Database, source: Source, fix: bool) -> docrel::Result<docrel::check::Report> {
    tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current().block_on(async {
            match (source, fix) {
                (Source::Part, true) => docrel::check::copies::<Part>().repair(db).run().await,
                (Source::Part, false) => docrel::check::copies::<Part>().verify(db).run().await,
                (Source::Product, true) => docrel::check::copies::<Product>().repair(db).run().await,
                (Source::Product, false) => docrel::check::copies::<Product>().verify(db).run().await,
                (Source::Person, true) => docrel::check::copies::<Person>().repair(db).run().await,
                (Source::Person, false) => docrel::check::copies::<Person>().verify(db).run().await,
            }
        })
    })
}

/// Runs one operation.
pub async fn exec(c: &Ctx, op: &Op) -> docrel::Result<String> {
    match op {
        Op::Session { steps, end } => session::run(c, steps, *end).await,
        Op::Repair { source } | Op::Verify { source } => {
            let r = scan(&c.db, *source, matches!(op, Op::Repair { .. }))?;
            Ok(format!("scanned {} stale {} dangling {} fixed {}", r.scanned, r.stale, r.dangling, r.fixed))
        }
        Op::FaultOn { fault } => fail_point(&c.db, Some(fault)).await.map(|()| String::new()),
        Op::FaultOff {} => fail_point(&c.db, None).await.map(|()| String::new()),
        _ => call(c, op, None).await,
    }
}

/// Runs one docrel call, in the session `s` if given.
async fn call(c: &Ctx, op: &Op, mut s: Sess<'_>) -> docrel::Result<String> {
    if let Some(r) = catalog::run(c, op, s.as_deref_mut()).await {
        return r;
    }
    if let Some(r) = people::run(c, op, s.as_deref_mut()).await {
        return r;
    }
    if let Some(r) = reviews::run(c, op, s).await {
        return r;
    }
    Err(Error::Invalid {
        what: docrel::Misuse::Application("history"),
        message: format!("{op} is not a docrel call the checker runs"),
    })
}
