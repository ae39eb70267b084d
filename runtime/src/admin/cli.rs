//! The admin command line (cargo feature `admin`): `schema`, `indexes
//! plan|apply`, `verify`, `repair`, `sync`, `doctor`, for the document
//! types linked into the program that calls [`main`].
//!
//! Exit codes, for scripts:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | done, nothing wrong (or nothing at or above `doctor --fail-on`) |
//! | 1 | done, and something is wrong: `verify` found a problem, `repair` left one it cannot fix, `doctor` found one at or above `--fail-on`, `indexes plan` has changes to apply |
//! | 2 | bad usage: an unknown option, subcommand or collection, no database named |
//! | 3 | failed: the server could not be reached, a command was refused, a file could not be written |
//! | 130 | interrupted (Ctrl-C, SIGTERM): a repair saved its checkpoint; the same command resumes it |

use crate::admin::checks::{self, RunReport};
use crate::admin::doctor::{self, Severity};
use crate::admin::{html, index_plan, report};
use crate::client::connect::connect;
use crate::denormalize::sync::{HistoryLost, SyncWorker, SYNC_COLLECTION};
use crate::error::{Error, Result};
use crate::schema::graph::graph;
use crate::schema::registry::{describe, sorted};
use clap::{Parser, Subcommand, ValueEnum};
use futures::FutureExt;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mongodb::bson::{self, doc, Bson, Document as BsonDoc};
use mongodb::Database;
use std::future::Future;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Operate the docrel schema of this program: its report, indexes, derived
/// data (verify, repair, sync) and how the live data follows the rules of
/// thumb (doctor).
#[derive(Debug, Parser)]
#[command(name = "admin", version, propagate_version = true)]
pub struct Cli {
    /// The deployment (a MongoDB connection string).
    #[arg(long, env = "MONGODB_URI", global = true, hide_env_values = true)]
    uri: Option<String>,
    /// The database holding the data.
    #[arg(long, env = "DOCREL_DB", global = true)]
    db: Option<String>,
    /// Print the report as JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The schema report: relationships, fan-outs, indexes, advice and a
    /// Mermaid diagram, as Markdown (no database needed).
    Schema {
        /// Also write a page with the diagram drawn (SVG) to this file.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
    },
    /// The indexes the types declare and their relationships need, against
    /// the ones that exist.
    Indexes {
        #[command(subcommand)]
        action: IndexAction,
    },
    /// Check derived data without writing: denormalized copies, two-way
    /// references, subsets, buckets. Exit 1 when anything is wrong.
    Verify {
        /// Only what involves this collection (source or holder of copies,
        /// either side of a two-way reference, subset parent or child,
        /// bucket collection).
        source: Option<String>,
        /// Documents read per batch.
        #[arg(long, default_value_t = 100)]
        batch: usize,
    },
    /// Fix derived data: rewrite stale copies, make both sides of two-way
    /// references agree, rebuild wrong subsets, recount buckets. Resumes
    /// from its checkpoint after Ctrl-C.
    Repair {
        /// Only what involves this collection (see `verify`).
        source: Option<String>,
        /// Report what would be fixed, and write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Documents read per batch (the checkpoint is saved after each).
        #[arg(long, default_value_t = 100)]
        batch: usize,
        /// Ignore the saved checkpoint and start from the beginning.
        #[arg(long)]
        restart: bool,
        /// Stop after this many batches, saving the checkpoint (to spread
        /// a long repair over several runs).
        #[arg(long, value_name = "N")]
        max_batches: Option<usize>,
    },
    /// Run the change-stream sync worker of deferred fan-outs until
    /// SIGINT/SIGTERM, resuming from its stored token and reporting lag.
    Sync {
        /// The worker's name (its resume token's key in `_docrel_sync`).
        #[arg(long, default_value = "admin")]
        name: String,
        /// Seconds between saves of the position while the stream moves.
        #[arg(long, default_value_t = 10)]
        checkpoint_every: u64,
        /// Seconds between progress and lag reports.
        #[arg(long, default_value_t = 10)]
        report_every: u64,
        /// When the stored position fell off the oplog, repair every source
        /// and go on, instead of stopping.
        #[arg(long)]
        repair_on_lost_history: bool,
    },
    /// The rules of thumb against the live data: array lengths, document
    /// sizes, read/write ratio of copies, N:M balance, dangling
    /// references, orphans, indexes.
    Doctor {
        /// Collections above this many documents are read through `$sample`.
        #[arg(long, default_value_t = 10_000)]
        sample: u64,
        /// Exit 1 when a finding is at this severity or above.
        #[arg(long, value_enum, default_value_t = FailOn::Error)]
        fail_on: FailOn,
        /// Also write the report as a page with histograms (SVG) to this file.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum IndexAction {
    /// What would be created, recreated or dropped (exit 1 when anything would).
    Plan {
        /// Count indexes no type declares as to be dropped.
        #[arg(long)]
        drop_undeclared: bool,
    },
    /// Create the missing indexes (and drop undeclared ones when asked).
    Apply {
        /// Also drop the indexes no type declares (other programs may use them).
        #[arg(long)]
        drop_undeclared: bool,
    },
}

/// The severity from which `doctor` exits with 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FailOn {
    /// Any finding.
    Info,
    /// Warnings and errors.
    Warning,
    /// Errors only.
    Error,
    /// Never: always exit 0 when the doctor ran.
    Never,
}

/// How a command ended; [`Exit::code`] is the process's exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Done, nothing wrong.
    Ok,
    /// Done, and something is wrong (see the module docs).
    Found,
    /// Bad usage.
    Usage,
    /// Failed to run.
    Failed,
    /// Interrupted by a signal; a repair's checkpoint is saved.
    Interrupted,
}

impl Exit {
    /// The exit status: 0, 1, 2, 3 or 130.
    pub fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::Found => 1,
            Exit::Usage => 2,
            Exit::Failed => 3,
            Exit::Interrupted => 130,
        }
    }
}

/// A writer into a shared buffer, for [`Console::captured`].
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut b) = self.0.lock() {
            b.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Shared {
    fn text(&self) -> String {
        self.0.lock().map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default()
    }
}

/// Where the command writes: the report to `out`, progress and errors to
/// `err`.
pub struct Console {
    out: Box<dyn Write + Send>,
    err: Box<dyn Write + Send>,
    bar: bool,
    captured: Option<(Shared, Shared)>,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console").field("progress_bar", &self.bar).field("captured", &self.captured.is_some()).finish()
    }
}

impl Console {
    /// Standard output and error; a progress bar when standard error is a
    /// terminal, a line per batch otherwise.
    pub fn stdio() -> Self {
        Console {
            out: Box::new(std::io::stdout()),
            err: Box::new(std::io::stderr()),
            bar: std::io::stderr().is_terminal(),
            captured: None,
        }
    }

    /// Everything kept in memory (read it with [`Console::output`] and
    /// [`Console::errors`]): for tests and for programs that embed the tool.
    pub fn captured() -> Self {
        let (out, err) = (Shared::default(), Shared::default());
        Console { out: Box::new(out.clone()), err: Box::new(err.clone()), bar: false, captured: Some((out, err)) }
    }

    /// What a captured console's report says so far.
    pub fn output(&self) -> String {
        self.captured.as_ref().map(|(o, _)| o.text()).unwrap_or_default()
    }

    /// What a captured console's progress and errors say so far.
    pub fn errors(&self) -> String {
        self.captured.as_ref().map(|(_, e)| e.text()).unwrap_or_default()
    }

    fn say(&mut self, text: &str) {
        let _ = self.out.write_all(text.as_bytes());
        if !text.ends_with('\n') {
            let _ = self.out.write_all(b"\n");
        }
        let _ = self.out.flush();
    }

    fn note(&mut self, text: &str) {
        let _ = writeln!(self.err, "{text}");
        let _ = self.err.flush();
    }
}

/// A shutdown request: a future that completes on SIGINT/SIGTERM (or
/// whatever the caller passes), asked without blocking between batches.
struct Shutdown<'a> {
    signal: Pin<Box<dyn Future<Output = ()> + Send + 'a>>,
    fired: bool,
}

impl<'a> Shutdown<'a> {
    fn new(signal: impl Future<Output = ()> + Send + 'a) -> Self {
        Shutdown { signal: Box::pin(signal), fired: false }
    }
    fn requested(&mut self) -> bool {
        if !self.fired {
            self.fired = self.signal.as_mut().now_or_never().is_some();
        }
        self.fired
    }
    async fn wait(&mut self) {
        if !self.fired {
            self.signal.as_mut().await;
            self.fired = true;
        }
    }
}

/// Completes on Ctrl-C (SIGINT) or, on Unix, SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    {
        let term = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            () = ctrl_c => {}
            () = term => {}
        }
    }
    #[cfg(not(unix))]
    ctrl_c.await;
}

/// The admin command of this program: parses the process's arguments, runs
/// the command on a runtime of its own, stops gracefully on SIGINT/SIGTERM,
/// and returns the exit status. A program's `src/bin/admin.rs`:
///
/// ```no_run
/// fn main() -> std::process::ExitCode {
///     docrel::admin::main()
/// }
/// ```
pub fn main() -> std::process::ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::from(Exit::Failed.code());
        }
    };
    let mut console = Console::stdio();
    let exit = runtime.block_on(run(std::env::args_os(), &mut console, shutdown_signal()));
    std::process::ExitCode::from(exit.code())
}

/// Runs one admin command given as arguments (the first is the program's
/// name), writing to `console`; `shutdown` completing stops `repair`
/// (checkpoint saved) and `sync` (position saved) gracefully.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use docrel::admin::{run, Console, Exit};
/// let mut console = Console::captured();
/// let exit = run(["admin", "schema"], &mut console, std::future::pending()).await;
/// assert_eq!(exit, Exit::Ok);
/// assert!(console.output().starts_with("# Schema"));
///
/// let exit = run(["admin", "no-such-command"], &mut console, std::future::pending()).await;
/// assert_eq!((exit, exit.code()), (Exit::Usage, 2));
/// # }
/// ```
pub async fn run<I, T>(args: I, console: &mut Console, shutdown: impl Future<Output = ()> + Send) -> Exit
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let text = e.render().to_string();
            if e.use_stderr() {
                console.note(text.trim_end());
                return Exit::Usage;
            }
            console.say(&text);
            return Exit::Ok;
        }
    };
    let mut shutdown = Shutdown::new(shutdown);
    match execute(cli, console, &mut shutdown).await {
        Ok(exit) => exit,
        Err(e) => {
            console.note(&format!("error: {e}"));
            match e {
                Error::Invalid {
                    what:
                        crate::error::Misuse::Collection | crate::error::Misuse::Database | crate::error::Misuse::Severity,
                    ..
                }
                | Error::UnknownSource { .. } => Exit::Usage,
                _ => Exit::Failed,
            }
        }
    }
}

async fn database(cli: &Cli) -> Result<Database> {
    let Some(name) = cli.db.as_deref().filter(|n| !n.is_empty()) else {
        return Err(Error::Invalid {
            what: crate::error::Misuse::Database,
            message: "name the database: `--db NAME`, or set DOCREL_DB=NAME".into(),
        });
    };
    let uri = cli.uri.clone().unwrap_or_else(|| "mongodb://127.0.0.1:27017".to_owned());
    Ok(connect(&uri).await?.database(name))
}

fn write_file(path: &PathBuf, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| Error::Invalid {
        what: crate::error::Misuse::File,
        message: format!("cannot write {}: {e}; check the directory exists and is writable", path.display()),
    })
}

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

async fn execute(cli: Cli, console: &mut Console, shutdown: &mut Shutdown<'_>) -> Result<Exit> {
    match &cli.command {
        Command::Schema { html: page } => {
            if let Some(path) = page {
                write_file(path, &html::schema_page())?;
                console.note(&format!("schema page written to {}", path.display()));
            }
            if cli.json {
                console.say(&json(&schema_json()));
            } else {
                console.say(&report::schema_report());
            }
            Ok(Exit::Ok)
        }
        Command::Indexes { action } => {
            let db = database(&cli).await?;
            let plan = index_plan::plan(&db).await?;
            match action {
                IndexAction::Plan { drop_undeclared } => {
                    if cli.json {
                        console.say(&json(&plan));
                    } else {
                        console.say(&plan.to_text(*drop_undeclared));
                    }
                    Ok(if plan.has_changes(*drop_undeclared) { Exit::Found } else { Exit::Ok })
                }
                IndexAction::Apply { drop_undeclared } => {
                    let applied = plan.apply(&db, *drop_undeclared).await?;
                    if cli.json {
                        console.say(&json(&applied));
                    } else {
                        let mut text = String::new();
                        for c in &applied.created {
                            text.push_str(&format!("created {c}\n"));
                        }
                        for d in &applied.dropped {
                            text.push_str(&format!("dropped {d}\n"));
                        }
                        if text.is_empty() {
                            text.push_str("nothing to do: every declared index exists\n");
                        }
                        console.say(&text);
                    }
                    Ok(Exit::Ok)
                }
            }
        }
        Command::Verify { source, batch } => {
            let db = database(&cli).await?;
            let run = checks::verify(&db, source.as_deref())?.batch(*batch);
            let report = drive(run, console, shutdown, "verify").await?;
            show_run(console, &report, cli.json, "verify");
            Ok(if report.interrupted {
                Exit::Interrupted
            } else if report.found() > 0 {
                Exit::Found
            } else {
                Exit::Ok
            })
        }
        Command::Repair { source, dry_run, batch, restart, max_batches } => {
            let db = database(&cli).await?;
            let run = checks::repair(&db, source.as_deref())?
                .batch(*batch)
                .dry_run(*dry_run)
                .restart(*restart)
                .max_batches(*max_batches);
            let report = drive(run, console, shutdown, if *dry_run { "repair (dry run)" } else { "repair" }).await?;
            show_run(console, &report, cli.json, "repair");
            Ok(if report.interrupted {
                Exit::Interrupted
            } else if (*dry_run && report.found() > 0) || report.unfixable() > 0 {
                Exit::Found
            } else {
                Exit::Ok
            })
        }
        Command::Sync { name, checkpoint_every, report_every, repair_on_lost_history } => {
            let db = database(&cli).await?;
            sync(&db, console, shutdown, name, *checkpoint_every, *report_every, *repair_on_lost_history).await
        }
        Command::Doctor { sample, fail_on, html: page } => {
            let db = database(&cli).await?;
            let options = doctor::Options { sample: (*sample).max(1), ..doctor::Options::default() };
            let found = doctor::run(&db, &options).await?;
            if let Some(path) = page {
                write_file(path, &doctor::doctor_page(&found))?;
                console.note(&format!("doctor page written to {}", path.display()));
            }
            console.say(&if cli.json { found.to_json() } else { found.to_text() });
            let threshold = match fail_on {
                FailOn::Info => Some(Severity::Info),
                FailOn::Warning => Some(Severity::Warning),
                FailOn::Error => Some(Severity::Error),
                FailOn::Never => None,
            };
            Ok(match threshold {
                Some(t) if found.at_least(t) > 0 => Exit::Found,
                _ => Exit::Ok,
            })
        }
    }
}

/// The schema as JSON: every type with its relationships.
fn schema_json() -> serde_json::Value {
    let types: Vec<serde_json::Value> = sorted()
        .iter()
        .map(|s| {
            let relations: Vec<serde_json::Value> = s
                .relations
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "field": r.field,
                        "target": r.target,
                        "inverse": r.inverse,
                        "describe": describe(r),
                    })
                })
                .collect();
            let copies: Vec<serde_json::Value> = s
                .copies
                .iter()
                .map(|c| serde_json::json!({"field": c.field, "source": c.source, "source_field": c.source_field, "via": c.via}))
                .collect();
            serde_json::json!({
                "collection": s.collection,
                "type": s.rust_name,
                "module": s.module,
                "relations": relations,
                "copies": copies,
            })
        })
        .collect();
    serde_json::json!({ "types": types, "markdown": report::schema_report() })
}

/// Runs a verify or repair with progress: a bar that knows its total and
/// ETA on a terminal, a line per batch otherwise.
async fn drive(
    run: checks::Run<'_>,
    console: &mut Console,
    shutdown: &mut Shutdown<'_>,
    what: &str,
) -> Result<RunReport> {
    if let Some(saved) = run.saved().await?.filter(|_| what == "repair") {
        console.note(&format!("{what}: resuming the checkpoint saved before ({saved}); `--restart` starts over"));
    }
    let bar = if console.bar {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(
            "{msg:32!} [{bar:30.cyan/blue}] {pos}/{len} documents · {per_sec} · ETA {eta}",
        )
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        Some(bar)
    } else {
        None
    };
    // The rate of this run (a resumed one starts past zero), for the ETA.
    let mut first: Option<(Instant, u64)> = None;
    let mut last_line: Option<(Instant, u64, String)> = None;
    let err = &mut console.err;
    let progress_bar = bar.clone();
    let result = run
        .run(
            || shutdown.requested(),
            move |p| {
                let (t0, done0) = *first.get_or_insert((Instant::now(), p.done));
                if let Some(bar) = &progress_bar {
                    bar.set_length(p.total);
                    bar.set_position(p.done);
                    bar.set_message(p.job.name.clone());
                } else if last_line.as_ref().is_none_or(|(t, done, job)| {
                    // A line per job, every 2 s, and at the end: enough for a log.
                    *done != p.done
                        && (*job != p.job.name || t.elapsed() >= Duration::from_secs(2) || p.done >= p.total)
                }) {
                    last_line = Some((Instant::now(), p.done, p.job.name.clone()));
                    let eta = if p.done > done0 && p.total > p.done {
                        let per = t0.elapsed().as_secs_f64() / (p.done - done0) as f64;
                        format!(", ETA {:.1} s", per * (p.total - p.done) as f64)
                    } else {
                        String::new()
                    };
                    let _ = writeln!(
                        err,
                        "{what}: {}: {}/{} documents, {} found, {} fixed{eta}",
                        p.job.name, p.done, p.total, p.found, p.fixed
                    );
                    let _ = err.flush();
                }
            },
        )
        .await;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    result
}

fn show_run(console: &mut Console, report: &RunReport, as_json: bool, what: &str) {
    if as_json {
        console.say(&json(report));
        return;
    }
    let mut text = String::new();
    if let Some(r) = &report.resumed {
        text.push_str(&format!("resumed: {r}\n"));
    }
    for j in &report.jobs {
        text.push_str(&format!(
            "{:<8} {:<48} scanned {:>6}  found {:>4}  fixed {:>4}{}\n",
            j.kind,
            j.name,
            j.scanned,
            j.found,
            j.fixed,
            if j.unfixable > 0 { format!("  cannot fix {}", j.unfixable) } else { String::new() }
        ));
        for p in &j.problems {
            text.push_str(&format!("         - {p}\n"));
        }
    }
    text.push_str(&format!(
        "{what}: {}/{} documents read, {} problems found, {} fixed{}{}\n",
        report.done,
        report.total,
        report.found(),
        report.fixed(),
        if report.dry_run { " (dry run: nothing written)" } else { "" },
        if report.interrupted {
            ". Interrupted: the checkpoint is saved; run the same command again to resume"
        } else {
            ""
        }
    ));
    console.say(&text);
}

/// The cluster time a resume token stands for, in seconds, where its format
/// is known: MongoDB's (hex KeyString starting with a timestamp) or a BSON
/// document with a timestamp field (the embedded test server's).
fn token_seconds(token: &Bson) -> Option<u32> {
    let data = token.as_document()?.get_str("_data").ok()?;
    let bytes: Vec<u8> =
        (0..data.len() / 2).filter_map(|i| u8::from_str_radix(data.get(2 * i..2 * i + 2)?, 16).ok()).collect();
    if bytes.first() == Some(&0x82) && bytes.len() >= 9 {
        return Some(u32::from_be_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]));
    }
    let d = bson::Document::from_reader(&mut bytes.as_slice()).ok()?;
    d.values().find_map(|v| match v {
        Bson::Timestamp(t) => Some(t.time),
        _ => None,
    })
}

/// How far the worker's saved position is behind the server, in words.
async fn lag(db: &Database, name: &str) -> String {
    let saved = db.collection::<BsonDoc>(SYNC_COLLECTION).find_one(doc! {"_id": name}).await.ok().flatten();
    let Some(saved) = saved else { return "no position saved yet".into() };
    let now = db.run_command(doc! {"hello": 1}).await.ok().and_then(|r| match r.get("operationTime") {
        Some(Bson::Timestamp(t)) => Some(t.time),
        _ => None,
    });
    if let (Some(at), Some(now)) = (saved.get("token").and_then(token_seconds), now) {
        return format!("position {} s behind the server's clock (from the resume token)", now.saturating_sub(at));
    }
    match saved.get_datetime("saved") {
        Ok(t) => format!(
            "position saved {:.1} s ago (the token's time is not readable on this server)",
            (bson::DateTime::now().timestamp_millis() - t.timestamp_millis()) as f64 / 1000.0
        ),
        Err(_) => "lag unknown".into(),
    }
}

async fn sync(
    db: &Database,
    console: &mut Console,
    shutdown: &mut Shutdown<'_>,
    name: &str,
    checkpoint_every: u64,
    report_every: u64,
    repair_on_lost_history: bool,
) -> Result<Exit> {
    let g = graph();
    let sources = g.sources();
    let children = g.subset_children();
    if sources.is_empty() && children.is_empty() {
        console.note("sync: nothing in this schema is derived from another collection; there is nothing to follow");
        return Ok(Exit::Ok);
    }
    let mut worker = SyncWorker::new(db, name).checkpoint_every(Duration::from_secs(checkpoint_every.max(1)));
    if repair_on_lost_history {
        worker = worker.on_history_lost(HistoryLost::RepairAndContinue);
    }
    let resumed = worker.stored_token().await?.is_some();
    console.note(&format!(
        "sync `{name}` on database `{}`: following sources [{}] and subset children [{}]; {}. Stop with Ctrl-C or \
         SIGTERM",
        db.name(),
        sources.join(", "),
        children.join(", "),
        if resumed { "resuming from its stored token" } else { "starting from now" }
    ));
    let ready = Arc::new(AtomicU64::new(0));
    let opened = ready.clone();
    let worker = worker.on_ready(move || {
        opened.fetch_add(1, Ordering::SeqCst);
    });
    let applied = Arc::new(AtomicU64::new(0));
    let counter = applied.clone();
    let lines: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = lines.clone();
    let every = Duration::from_secs(report_every.max(1));
    let reporter = async {
        let mut before = 0;
        loop {
            tokio::time::sleep(every).await;
            let now = applied.load(Ordering::SeqCst);
            let line = format!(
                "sync: {now} changes applied ({} in the last {} s); {}{}",
                now - before,
                every.as_secs(),
                lag(db, name).await,
                if ready.load(Ordering::SeqCst) == 0 { "; stream not open yet" } else { "" }
            );
            before = now;
            if let Ok(mut l) = sink.lock() {
                l.push(line);
            }
        }
    };
    let work = worker.run_until(shutdown.wait(), move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    // Report lines are written as they come, between awaits of the worker.
    let outcome = {
        let mut work = std::pin::pin!(work);
        let mut reporter = std::pin::pin!(reporter);
        loop {
            tokio::select! {
                r = &mut work => break r,
                () = &mut reporter => {}
                () = tokio::time::sleep(Duration::from_millis(200)) => {}
            }
            let pending: Vec<String> = lines.lock().map(|mut l| l.drain(..).collect()).unwrap_or_default();
            for line in pending {
                console.note(&line);
            }
        }
    };
    for line in lines.lock().map(|mut l| l.drain(..).collect::<Vec<_>>()).unwrap_or_default() {
        console.note(&line);
    }
    outcome?;
    console.note(&format!(
        "sync: stopped after {} changes applied; position saved ({})",
        applied.load(Ordering::SeqCst),
        lag(db, name).await
    ));
    Ok(Exit::Ok)
}
