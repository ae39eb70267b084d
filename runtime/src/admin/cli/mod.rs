//! The admin command line (cargo feature `admin`): `schema`, `indexes
//! plan|apply`, `verify`, `repair`, `sync`, `doctor`, for the document
//! types linked into the program that calls [`main`] and those published
//! in the database (`docrel::schema::publish`), which it obeys.
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
//!
//! The commands live in their own modules: `reports` (schema, indexes,
//! doctor), `verify` (verify and repair), `sync`; `console` is where they
//! write and how they end.

mod console;
mod reports;
mod schema_change;
mod sync;
mod verify;

pub use console::{shutdown_signal, Console, Exit};

use crate::admin::checks;
use crate::admin::doctor::{self, Severity};
use crate::client::connect::{connect, redact};
use crate::error::{Error, Result};
use clap::{Parser, Subcommand, ValueEnum};
use console::Shutdown;
use mongodb::Database;
use std::future::Future;
use std::path::PathBuf;

/// Operate the docrel schema of this program: its report, indexes, derived
/// data (verify, repair, sync) and how the live data follows the rules of
/// thumb (doctor).
#[derive(Parser)]
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

// The URI may carry a password: `Debug` shows it redacted.
impl std::fmt::Debug for Cli {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cli")
            .field("uri", &self.uri.as_deref().map(redact))
            .field("db", &self.db)
            .field("json", &self.json)
            .field("command", &self.command)
            .finish()
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The schema report: relationships, fan-outs, indexes, advice and a
    /// Mermaid diagram, as Markdown: of the types this program links, and,
    /// when a database is named (`--uri mongodb://host/NAME` or `--db`), of
    /// the schema published there too (the standalone `docrel` links no
    /// type: it needs the database).
    Schema {
        /// Also write a page with the diagram drawn (SVG) to this file.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        /// Compare a program's schema with the stored one, or publish it.
        #[command(subcommand)]
        change: Option<SchemaChange>,
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
enum SchemaChange {
    /// What publishing a program's schema (the JSON its
    /// `docrel::schema::export()` gives) would change in the stored one:
    /// added collections and rules, the backfills they need, conflicts;
    /// and the plan of every move it declares (`moved_from`), counted on
    /// the live data. Exit 1 when anything would change.
    Diff {
        /// The program's exported schema.
        #[arg(long, value_name = "FILE")]
        file: PathBuf,
        /// Do not time a move's copy on one page of real parents (the probe
        /// writes a scratch collection and drops it).
        #[arg(long)]
        no_probe: bool,
    },
    /// Change the stored schema online to a program's: first run each move
    /// it declares (`moved_from`) to `switched`, both shapes kept while old
    /// and new versions write; then publish its rules
    /// (refused, with nothing written, when one conflicts) and remove the
    /// `--remove`d ones, wait two leases for every process to follow them,
    /// backfill the new copies and subsets, verify. Stopped, it resumes
    /// when run again; exit 0 when complete.
    Apply {
        /// The program's exported schema.
        #[arg(long, value_name = "FILE")]
        file: PathBuf,
        /// A stored rule to remove, as COLLECTION.FIELD (repeatable).
        #[arg(long, value_name = "COLLECTION.FIELD")]
        remove: Vec<String>,
        /// Seconds to wait between publishing and backfilling (default:
        /// two leases, 60 s; it must cover every process's lease).
        #[arg(long, value_name = "SECONDS")]
        wait: Option<f64>,
        /// Run the moves in a maintenance window: refused while any other
        /// program holds the schema's lease; the new shape's indexes are
        /// built after the copy, which is then faster.
        #[arg(long)]
        offline: bool,
    },
    /// The moves between patterns in progress: each one's state, how long
    /// it has been in it and what its next state waits for; and the
    /// processes holding the schema lease, with what each has seen and
    /// which shape it links.
    Status {
        /// The fleet's lease in seconds (default: this process's, 30 s).
        #[arg(long, value_name = "SECONDS")]
        lease: Option<f64>,
    },
    /// Retire the old shape of every switched move a program declares
    /// (`moved_from`), once no live process links it: both shapes are no
    /// longer kept, the old array's rule leaves the stored schema, and the
    /// move completes. Likewise the other side of every two-way array the
    /// program makes one-way (listed first, so every process says within
    /// a lease whether it declares it). Refused while an old version holds
    /// a lease (`schema status` lists them). Exit 0 when complete.
    Retire {
        /// The program's exported schema (the new version's).
        #[arg(long, value_name = "FILE")]
        file: PathBuf,
        /// Also remove the old array from every parent, or the retired
        /// side from its documents (in pages, once every process has seen
        /// it retired).
        #[arg(long)]
        drop_old: bool,
        /// The fleet's lease in seconds (default: this process's, 30 s).
        #[arg(long, value_name = "SECONDS")]
        lease: Option<f64>,
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

impl FailOn {
    /// The severity from which the doctor exits with 1; `None`: never.
    fn threshold(self) -> Option<Severity> {
        match self {
            FailOn::Info => Some(Severity::Info),
            FailOn::Warning => Some(Severity::Warning),
            FailOn::Error => Some(Severity::Error),
            FailOn::Never => None,
        }
    }
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

/// The database named by `--db`/`DOCREL_DB`, else by the URI's path, with
/// the schema published in it obeyed: the commands then cover the types
/// other programs published as well as the linked ones.
async fn database(cli: &Cli, console: &mut Console) -> Result<Database> {
    let uri = cli.uri.clone().unwrap_or_else(|| "mongodb://127.0.0.1:27017".to_owned());
    let named = cli.db.as_deref().filter(|n| !n.is_empty()).map(str::to_owned);
    let Some(name) = named.or_else(|| uri_database(&uri)) else {
        return Err(Error::Invalid {
            what: crate::error::Misuse::Database,
            message: "name the database: `--db NAME`, DOCREL_DB=NAME, or in the URI (`mongodb://host/NAME`)".into(),
        });
    };
    let client = connect(&uri).await?;
    let db = client.database(&name);
    let obeyed = crate::schema::obey(&db).await?;
    for d in &obeyed.differences {
        console.note(&format!("note: schema difference: {d}"));
    }
    if crate::schema::graph::all_types(&db).is_empty() {
        console.note(&format!(
            "warning: no document types: this program links none and `{name}` has no published schema; publish it \
             from your program with `docrel::schema::publish(&db)`"
        ));
    }
    Ok(db)
}

/// The database a connection string names (`mongodb://host/NAME`), if any.
fn uri_database(uri: &str) -> Option<String> {
    // The hosts follow the user info (a password may hold `/`, `?` or `@`).
    let (_, _, rest) = crate::client::connect::split(uri);
    let rest = rest.trim_start_matches('@').split(['?', '#']).next().unwrap_or_default();
    rest.split_once('/').map(|(_, db)| db.to_owned()).filter(|db| !db.is_empty())
}

/// The lease given in seconds, or this process's for `db`.
fn fleet_lease(seconds: Option<f64>, db: &mongodb::Database) -> std::time::Duration {
    seconds
        .map(|s| std::time::Duration::try_from_secs_f64(s.max(0.001)).unwrap_or(std::time::Duration::MAX))
        .unwrap_or_else(|| crate::schema::lease_for(db))
}

async fn execute(cli: Cli, console: &mut Console, shutdown: &mut Shutdown<'_>) -> Result<Exit> {
    match &cli.command {
        Command::Schema { change: Some(change), .. } => {
            let db = database(&cli, console).await?;
            match change {
                SchemaChange::Diff { file, no_probe } => {
                    schema_change::diff(&db, file, !no_probe, console, cli.json).await
                }
                SchemaChange::Apply { file, remove, wait, offline } => {
                    let wait = wait.map(|s| {
                        std::time::Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(std::time::Duration::MAX)
                    });
                    let args = schema_change::Apply { file, remove, wait, offline: *offline };
                    schema_change::apply(&db, &args, console, shutdown, cli.json).await
                }
                SchemaChange::Status { lease } => {
                    let lease = fleet_lease(*lease, &db);
                    schema_change::status(&db, lease, console, cli.json).await
                }
                SchemaChange::Retire { file, drop_old, lease } => {
                    let lease = fleet_lease(*lease, &db);
                    schema_change::retire(&db, file, *drop_old, lease, console, shutdown, cli.json).await
                }
            }
        }
        Command::Schema { html: page, change: None } => {
            // With a database named, the report covers its published schema too.
            let types = if cli.db.is_some() || cli.uri.as_deref().and_then(uri_database).is_some() {
                crate::schema::graph::all_types(&database(&cli, console).await?)
            } else {
                crate::schema::graph::graph().types()
            };
            if types.is_empty() {
                console.note(
                    "warning: no document types: this program links none; name a database (`--uri \
                     mongodb://host/NAME`) to report the schema published there",
                );
            }
            reports::schema(console, &types, page.as_deref(), cli.json)
        }
        Command::Indexes { action } => {
            let db = database(&cli, console).await?;
            let (apply, drop_undeclared) = match action {
                IndexAction::Plan { drop_undeclared } => (false, *drop_undeclared),
                IndexAction::Apply { drop_undeclared } => (true, *drop_undeclared),
            };
            reports::indexes(&db, console, apply, drop_undeclared, cli.json).await
        }
        Command::Verify { source, batch } => {
            let db = database(&cli, console).await?;
            let run = checks::verify(&db, source.as_deref())?.batch(*batch);
            verify::verify(run, console, shutdown, cli.json).await
        }
        Command::Repair { source, dry_run, batch, restart, max_batches } => {
            let db = database(&cli, console).await?;
            let run = checks::repair(&db, source.as_deref())?
                .batch(*batch)
                .dry_run(*dry_run)
                .restart(*restart)
                .max_batches(*max_batches);
            verify::repair(run, *dry_run, console, shutdown, cli.json).await
        }
        Command::Sync { name, checkpoint_every, report_every, repair_on_lost_history } => {
            let db = database(&cli, console).await?;
            sync::sync(&db, console, shutdown, name, *checkpoint_every, *report_every, *repair_on_lost_history).await
        }
        Command::Doctor { sample, fail_on, html: page } => {
            let db = database(&cli, console).await?;
            let options = doctor::Options { sample: (*sample).max(1), ..doctor::Options::default() };
            reports::doctor(&db, console, &options, fail_on.threshold(), page.as_deref(), cli.json).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{uri_database, Cli};
    use clap::Parser;

    #[test]
    fn the_database_of_a_uri_is_its_path() {
        assert_eq!(uri_database("mongodb://h:1/shop?w=1").as_deref(), Some("shop"));
        assert_eq!(uri_database("mongodb+srv://u:p/a?b@h.example.com/shop").as_deref(), Some("shop"));
        assert_eq!(uri_database("mongodb://h1,h2/?replicaSet=rs"), None);
        assert_eq!(uri_database("mongodb://u:pa/ss@h"), None);
    }

    /// The URI may carry a password: `Debug` of the parsed command line shows it redacted.
    #[test]
    fn the_command_line_shows_no_password() {
        let cli =
            Cli::parse_from(["admin", "--uri", "mongodb://ann:SECRETa?b@127.0.0.1:27017/db", "--db", "shop", "schema"]);
        let shown = format!("{cli:?}");
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(shown.contains("127.0.0.1:27017") && shown.contains("shop") && shown.contains("Schema"), "{shown}");
    }
}
