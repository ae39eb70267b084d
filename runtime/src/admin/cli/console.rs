//! Where the admin command writes (its report, its progress and errors),
//! how it ends (the exit status), and how it is asked to stop.

use crate::error::{Error, Result};
use futures::FutureExt;
use std::future::Future;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

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
    pub(super) err: Box<dyn Write + Send>,
    /// Whether progress is drawn as a bar (on a terminal).
    pub(super) bar: bool,
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

    /// Writes `text` to the report, ending its line.
    pub(super) fn say(&mut self, text: &str) {
        let _ = self.out.write_all(text.as_bytes());
        if !text.ends_with('\n') {
            let _ = self.out.write_all(b"\n");
        }
        let _ = self.out.flush();
    }

    /// Writes a line of progress or error.
    pub(super) fn note(&mut self, text: &str) {
        let _ = writeln!(self.err, "{text}");
        let _ = self.err.flush();
    }
}

/// A shutdown request: a future that completes on SIGINT/SIGTERM (or
/// whatever the caller passes), asked without blocking between batches.
pub(super) struct Shutdown<'a> {
    signal: Pin<Box<dyn Future<Output = ()> + Send + 'a>>,
    fired: bool,
}

impl<'a> Shutdown<'a> {
    pub(super) fn new(signal: impl Future<Output = ()> + Send + 'a) -> Self {
        Shutdown { signal: Box::pin(signal), fired: false }
    }
    /// Whether the signal came, without waiting for it.
    pub(super) fn requested(&mut self) -> bool {
        if !self.fired {
            self.fired = self.signal.as_mut().now_or_never().is_some();
        }
        self.fired
    }
    /// Waits for the signal.
    pub(super) async fn wait(&mut self) {
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

/// Writes a page (`--html FILE`).
pub(super) fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| Error::Invalid {
        what: crate::error::Misuse::File,
        message: format!("cannot write {}: {e}; check the directory exists and is writable", path.display()),
    })
}

/// A report as JSON (`--json`).
pub(super) fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}
