//! The second process of a history: some of its workers run in another OS
//! process (this same binary started again), on a client of its own, with
//! its clock set back by libfaketime when the library is installed
//! (docrel takes the first version of a source and the stamps of its
//! writes from the clock of the process that writes: `SystemTime::now`).
//!
//! The two talk over the child's standard streams, one line each:
//! the parent sends the job (JSON) then `go <id>` when the gate lets an
//! operation in, or `stop`; the child sends `@hello <its clock, µs>`,
//! `@enter <id> <groups, each with its class>`, `@leave <id>`, `@rec <record>` and
//! `@done`. Other lines of its output (a test harness's) are ignored.

use super::exec::Ctx;
use super::gate::{Class, Gate, Group, Pass, SerialGuard};
use super::op::Op;
use super::plan::{Mode, Plan};
use super::run::{Record, Res};
use docrel::mongodb::Database;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::{mpsc, oneshot};

/// Set in the environment of a child process: run a job from stdin.
pub const CHILD_VARIABLE: &str = "DOCREL_HISTORY_CHILD";
/// The name of the test that, in a test binary, runs as the child.
pub const CHILD_TEST: &str = "history_child_process";
/// Where Debian's libfaketime is.
pub const FAKETIME_LIB: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// What a child runs.
#[derive(Serialize, Deserialize)]
struct Job {
    db: String,
    mode: Mode,
    /// The workers it runs: (worker number, its operations).
    workers: Vec<(usize, Vec<Op>)>,
    /// The parent's clock of the history when the child was started, ms.
    offset_ms: u64,
    /// The schema lease of a history changing a rule, ms (see `rule_change.rs`).
    lease_ms: Option<u64>,
}

/// A record as the child sends it (the parent knows the operation).
#[derive(Serialize, Deserialize)]
struct Sent {
    worker: usize,
    seq: usize,
    start_us: u64,
    end_us: u64,
    res: Res,
    #[serde(default)]
    undeclared: Option<String>,
}

fn micros_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0)
}

/// Whether this process was started as a child of a history.
pub fn is_child() -> bool {
    std::env::var_os(CHILD_VARIABLE).is_some()
}

/// The child's side: runs the job read from stdin, then returns.
pub async fn child_main() -> Result<(), String> {
    let mut lines = lines_of(std::io::stdin().lock_owned_reader());
    let first = lines.recv().await.ok_or("no job on stdin")?;
    let job: Job = serde_json::from_str(&first).map_err(|e| format!("the job: {e}"))?;
    let (out, writer) = line_writer(std::io::stdout());
    let _ = out.send(format!("@hello {}", micros_now()));
    let remote = Arc::new(Remote { out: out.clone(), waiting: Mutex::new(HashMap::new()), next: AtomicU64::new(0) });
    let stop = Arc::new(AtomicBool::new(false));
    let (reader_remote, reader_stop) = (remote.clone(), stop.clone());
    let reader = tokio::spawn(async move {
        while let Some(line) = lines.recv().await {
            match line.split_once(' ') {
                Some(("go", id)) => reader_remote.go(id.trim().parse().unwrap_or(u64::MAX)),
                _ if line.trim() == "stop" => reader_stop.store(true, Ordering::SeqCst),
                _ => {}
            }
        }
    });
    let db = connect_like(&job.db).await?;
    if let Some(ms) = job.lease_ms {
        docrel::schema::set_lease(Duration::from_millis(ms));
        docrel::schema::set_lease_for(&db, Duration::from_millis(ms));
    }
    let ctx = Ctx { db, mode: job.mode, janitor: janitor().await? };
    let t0 = Instant::now() - Duration::from_millis(job.offset_ms);
    let mut tasks = Vec::new();
    for (w, ops) in job.workers {
        let (ctx, remote, stop, out) = (ctx.clone(), remote.clone(), stop.clone(), out.clone());
        tasks.push(tokio::spawn(async move {
            let sink = move |r: Record| {
                let sent = Sent {
                    worker: r.worker,
                    seq: r.seq,
                    start_us: r.start.as_micros() as u64,
                    end_us: r.end.as_micros() as u64,
                    res: r.res,
                    undeclared: r.undeclared,
                };
                let _ = out.send(format!("@rec {}", serde_json::to_string(&sent).unwrap_or_default()));
            };
            super::run::run_worker(&ctx, &Admission::Remote(remote), w, ops, t0, &stop, sink).await;
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    let _ = out.send("@done".to_owned());
    drop(out);
    drop(remote);
    reader.abort();
    let _ = writer.join();
    Ok(())
}

/// Owned access to a standard stream that a thread can keep.
trait OwnedReader {
    fn lock_owned_reader(self) -> Box<dyn BufRead + Send>;
}

impl OwnedReader for std::io::Stdin {
    fn lock_owned_reader(self) -> Box<dyn BufRead + Send> {
        Box::new(std::io::BufReader::new(self))
    }
}

/// The lines of `input`, read on a thread of their own (the runtime has
/// no standard streams of its own here).
fn lines_of(input: Box<dyn BufRead + Send>) -> mpsc::UnboundedReceiver<String> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in input.lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// A sender of lines to `output`, written on a thread of their own, and
/// the thread (ends once every sender is dropped).
fn line_writer(mut output: impl Write + Send + 'static) -> (std_mpsc::Sender<String>, std::thread::JoinHandle<()>) {
    let (tx, rx) = std_mpsc::channel::<String>();
    let thread = std::thread::spawn(move || {
        for line in rx {
            if writeln!(output, "{line}").and_then(|()| output.flush()).is_err() {
                break;
            }
        }
    });
    (tx, thread)
}

/// A client of its own on the database named `db`, whose appName is the
/// database's name (as [`docrel::testing::TestDb`] sets it), so that the
/// history's fail points hit it too, reporting each operation's commands
/// to it (`monitor.rs`).
pub async fn connect_like(db: &str) -> Result<Database, String> {
    let uri = std::env::var(docrel::client::URI_VARIABLE).map_err(|_| "MONGODB_URI is not set".to_owned())?;
    let mut opts = docrel::client::options(&uri).await.map_err(|e| e.to_string())?;
    opts.app_name = Some(db.to_owned());
    super::monitor::install(&mut opts);
    let client = docrel::connect_with(&uri, opts).await.map_err(|e| e.to_string())?;
    Ok(client.database(db))
}

/// A client of the server that no fail point of a history targets (its
/// appName is not a database's).
pub async fn janitor() -> Result<docrel::mongodb::Client, String> {
    let uri = std::env::var(docrel::client::URI_VARIABLE).map_err(|_| "MONGODB_URI is not set".to_owned())?;
    let mut opts = docrel::client::options(&uri).await.map_err(|e| e.to_string())?;
    opts.app_name = Some("history-janitor".to_owned());
    docrel::connect_with(&uri, opts).await.map_err(|e| e.to_string())
}

/// The gate as the child sees it: the parent's, asked over the pipe.
pub struct Remote {
    out: std_mpsc::Sender<String>,
    waiting: Mutex<HashMap<u64, oneshot::Sender<()>>>,
    next: AtomicU64,
}

impl Remote {
    fn go(&self, id: u64) {
        if let Some(tx) = self.waiting.lock().ok().and_then(|mut w| w.remove(&id)) {
            let _ = tx.send(());
        }
    }
}

/// Leaves the parent's gate when dropped.
pub struct RemotePass {
    id: u64,
    out: std_mpsc::Sender<String>,
}

impl Drop for RemotePass {
    fn drop(&mut self) {
        let _ = self.out.send(format!("@leave {}", self.id));
    }
}

/// How a worker is let in: by the gate of its own process, or by the
/// parent's over the pipe.
pub enum Admission {
    Local(Arc<Gate>),
    Remote(Arc<Remote>),
}

/// What a worker holds while its operation runs.
pub enum Admitted {
    Local(#[allow(dead_code)] Pass, #[allow(dead_code)] Option<SerialGuard>),
    Remote(#[allow(dead_code)] RemotePass),
}

impl Admission {
    /// Waits until `op` may run.
    pub async fn enter(&self, op: &Op) -> Admitted {
        match self {
            Admission::Local(gate) => {
                let (pass, serial) = gate.enter(op).await;
                Admitted::Local(pass, serial)
            }
            Admission::Remote(r) => {
                let id = r.next.fetch_add(1, Ordering::SeqCst);
                let (tx, rx) = oneshot::channel();
                if let Ok(mut w) = r.waiting.lock() {
                    w.insert(id, tx);
                }
                let entry = super::gate::entry(op);
                let _ = r.out.send(format!("@enter {id} {}", serde_json::to_string(&entry).unwrap_or_default()));
                let pass = RemotePass { id, out: r.out.clone() };
                let _ = rx.await;
                Admitted::Remote(pass)
            }
        }
    }
}

/// The parent's side of a child: what it ran, and a note about it.
pub struct ChildRun {
    pub records: Vec<Record>,
    pub note: String,
}

/// The command that starts this binary again as a child.
fn child_command(skew_ms: i64) -> Result<(std::process::Command, String), String> {
    let exe = std::env::current_exe().map_err(|e| format!("this binary's path: {e}"))?;
    let mut cmd = std::process::Command::new(exe);
    // In a test binary, only the child's test runs; the runner ignores them.
    cmd.args([CHILD_TEST, "--exact", "--nocapture", "--test-threads", "1"]);
    cmd.env(CHILD_VARIABLE, "1");
    cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped());
    let skew = if skew_ms == 0 {
        "no clock skew asked".to_owned()
    } else if std::path::Path::new(FAKETIME_LIB).exists() {
        cmd.env("LD_PRELOAD", FAKETIME_LIB);
        cmd.env("FAKETIME", format!("{:+.3}", skew_ms as f64 / 1000.0));
        cmd.env("DONT_FAKE_MONOTONIC", "1");
        format!("clock set {skew_ms:+} ms by libfaketime")
    } else {
        format!("NO clock skew: {FAKETIME_LIB} is missing (apt-get install libfaketime)")
    };
    Ok((cmd, skew))
}

/// The parent's view of a running child: what it sent so far.
struct Listener<'p> {
    plan: &'p Plan,
    gate: Arc<Gate>,
    stop: Arc<AtomicBool>,
    to_child: std_mpsc::Sender<String>,
    /// The gate's passes held for the child, by its id.
    held: HashMap<u64, tokio::task::JoinHandle<()>>,
    records: Vec<Record>,
    skew_seen: Option<i64>,
    done: bool,
    /// This process's start of the history: a child's record ends here no
    /// earlier than it arrived.
    t0: Instant,
}

impl Listener<'_> {
    /// Handles one line of the child's output.
    fn line(&mut self, line: &str) -> Result<(), String> {
        // A test harness may print its own words before ours on a line.
        let Some(line) = line.find('@').map(|at| &line[at..]) else { return Ok(()) };
        let (tag, rest) = line.split_once(' ').unwrap_or((line, ""));
        match tag {
            "@hello" => self.skew_seen = rest.trim().parse::<i64>().ok().map(|t| (t - micros_now()) / 1000),
            "@enter" => {
                let Some((id, entry)) = rest.split_once(' ') else { return Ok(()) };
                let id: u64 = id.parse().unwrap_or(u64::MAX);
                let entry: Vec<(Group, Class)> =
                    serde_json::from_str(entry).map_err(|e| format!("the child's @enter: {e}"))?;
                let (gate, to_child) = (self.gate.clone(), self.to_child.clone());
                let pass = tokio::spawn(async move {
                    let _pass = gate.enter_as(&entry).await;
                    let _ = to_child.send(format!("go {id}"));
                    std::future::pending::<()>().await;
                });
                self.held.insert(id, pass);
            }
            "@leave" => {
                if let Some(h) = rest.trim().parse().ok().and_then(|id: u64| self.held.remove(&id)) {
                    h.abort();
                }
            }
            "@rec" => self.record(rest)?,
            "@done" => self.done = true,
            _ => {}
        }
        Ok(())
    }

    fn record(&mut self, json: &str) -> Result<(), String> {
        let sent: Sent = serde_json::from_str(json).map_err(|e| format!("the child's @rec: {e}"))?;
        if matches!(sent.res, Res::TimedOut) {
            self.stop.store(true, Ordering::SeqCst);
        }
        let op = self.plan.workers.get(sent.worker).and_then(|ops| ops.get(sent.seq)).cloned();
        let op = op.ok_or_else(|| format!("the child ran an operation w{}#{} of no plan", sent.worker, sent.seq))?;
        // The child's clock starts late by its own start-up (its `t0` is
        // taken once it runs), so its times are early by that much: the
        // start stays a bound from below, and the end is taken no earlier
        // than the record's arrival, so the interval holds the call's
        // (what `pulled.rs` compares across processes).
        let start = Duration::from_micros(sent.start_us);
        let end = Duration::from_micros(sent.end_us).max(self.t0.elapsed());
        let undeclared = sent.undeclared;
        self.records.push(Record { worker: sent.worker, seq: sent.seq, op, start, end, res: sent.res, undeclared });
        Ok(())
    }
}

impl Drop for Listener<'_> {
    fn drop(&mut self) {
        for (_, h) in self.held.drain() {
            h.abort();
        }
    }
}

/// Runs `workers` of `plan` in a child process against `db`, letting its
/// operations in through `gate`; returns when the child is done.
pub async fn run_child(
    db: &Database,
    plan: &Plan,
    workers: Vec<(usize, Vec<Op>)>,
    gate: Arc<Gate>,
    t0: Instant,
    stop: Arc<AtomicBool>,
) -> Result<ChildRun, String> {
    let (mut cmd, skew) = child_command(plan.skew_ms)?;
    let mut child = cmd.spawn().map_err(|e| format!("starting the second process: {e}"))?;
    let pid = child.id();
    let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
    let (Some(stdin), Some(stdout)) = (stdin, stdout) else { return Err("the child's pipes".into()) };
    let lease_ms = plan.rule_change.map(|_| super::rule_change::LEASE.as_millis() as u64);
    let offset_ms = t0.elapsed().as_millis() as u64;
    let job = Job { db: db.name().to_owned(), mode: plan.mode, workers, offset_ms, lease_ms };
    let job = serde_json::to_string(&job).map_err(|e| e.to_string())?;
    let (to_child, feeder) = line_writer(stdin);
    let _ = to_child.send(job);
    let mut lines = lines_of(Box::new(std::io::BufReader::new(stdout)));
    let mut l = Listener {
        plan,
        gate,
        stop: stop.clone(),
        to_child,
        held: HashMap::new(),
        records: Vec::new(),
        skew_seen: None,
        done: false,
        t0,
    };
    let mut stop_sent = false;
    let listened: Result<(), String> = loop {
        tokio::select! {
            line = lines.recv() => match line {
                Some(line) => if let Err(e) = l.line(&line) { break Err(e) },
                None => break Ok(()),
            },
            () = tokio::time::sleep(Duration::from_millis(200)), if !stop_sent => {
                if stop.load(Ordering::SeqCst) {
                    stop_sent = true;
                    let _ = l.to_child.send("stop".to_owned());
                }
            }
        }
    };
    if listened.is_err() {
        let _ = child.kill();
    }
    let (records, skew_seen, done) = (std::mem::take(&mut l.records), l.skew_seen, l.done);
    // Its passes and its sender go: the feeder's channel closes.
    drop(l);
    let status = tokio::task::spawn_blocking(move || {
        let _ = feeder.join();
        child.wait()
    })
    .await
    .map_err(|e| e.to_string())?;
    let status = status.map_err(|e| e.to_string())?;
    listened?;
    if !done || !status.success() {
        return Err(format!("the second process (pid {pid}) ended before its job was done: {status}"));
    }
    let seen = skew_seen.map(|ms| format!("{ms:+} ms")).unwrap_or_else(|| "unknown".into());
    let note = format!("second process pid {pid}: {skew}; its clock measured {seen} from this one's");
    Ok(ChildRun { records, note })
}
