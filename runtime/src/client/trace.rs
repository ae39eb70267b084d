//! Observability: one `tracing` span per docrel operation, with its round
//! trips, documents and time.
//!
//! Every public operation (a repository write or read, a loader, a relation
//! write, a bucket append, repair and verify) runs inside a span named
//! `docrel` at `DEBUG` level with the fields
//!
//! | field | what |
//! |---|---|
//! | `op` | the operation: `insert`, `find`, `load`, `update_by_id`, … |
//! | `collection` | the collection it is called on |
//! | `documents` | documents written, read or matched, where the operation knows |
//! | `round_trips` | commands sent to the server inside the operation, side effects (fill, fan-out, subset, inverse) included |
//! | `elapsed_us` | wall time in microseconds |
//! | `error` | the error's kind, when it failed |
//!
//! Inside it, `DEBUG` events name each fan-out target and the copies it
//! modified, and each retry (of a contended subset or transaction); a fan-out
//! that failed is a `WARN` event, since copies may now be stale. Nothing is
//! emitted at `INFO` or above on success, so a service's default log level
//! hears nothing from docrel.
//!
//! Round trips are counted from the driver's command events, which fire
//! inside the operation's task. Clients made by [`crate::connect`] and
//! [`crate::client::options`] count them already; for a client
//! built from options of your own, call [`count_round_trips`] on the
//! options first. Without it the `round_trips` field stays empty rather
//! than reading 0.

use crate::error::Result;
use mongodb::event::command::CommandEvent;
use mongodb::event::EventHandler;
use mongodb::options::ClientOptions;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tracing::field::Empty;
use tracing::{Instrument, Span};

tokio::task_local! {
    /// The round trips of the operation this task is running.
    static TRIPS: Arc<AtomicU64>;
}

/// Whether [`count_round_trips`] was installed on a client this process made.
static INSTALLED: AtomicU64 = AtomicU64::new(0);

/// Makes a client count the commands each docrel operation sends, for the
/// `round_trips` field of its span. A handler already on the options (the
/// user's own command monitoring) keeps receiving every event.
///
/// [`crate::connect`] and [`crate::client::options`] call this;
/// call it yourself only on options you build without them.
///
/// ```
/// use docrel::mongodb::options::ClientOptions;
/// let mut options = ClientOptions::default();
/// docrel::client::trace::count_round_trips(&mut options);
/// assert!(options.command_event_handler.is_some());
/// ```
pub fn count_round_trips(options: &mut ClientOptions) {
    INSTALLED.fetch_add(1, Ordering::Relaxed);
    chain(options, |event| {
        if let CommandEvent::Started(_) = event {
            let _ = TRIPS.try_with(|trips| trips.fetch_add(1, Ordering::Relaxed));
        }
    });
}

/// Installs `first` as the command event handler of `options`, in front of
/// whatever handler was there, which still receives every event.
pub(crate) fn chain(options: &mut ClientOptions, first: impl Fn(&CommandEvent) + Send + Sync + 'static) {
    let previous = options.command_event_handler.take();
    options.command_event_handler = Some(EventHandler::callback(move |event: CommandEvent| {
        first(&event);
        match &previous {
            None => {}
            Some(EventHandler::Callback(next)) => next(event),
            Some(EventHandler::AsyncCallback(next)) => {
                tokio::spawn(next(event));
            }
            Some(EventHandler::TokioMpsc(sender)) => {
                let sender = sender.clone();
                tokio::spawn(async move {
                    let _ = sender.send(event).await;
                });
            }
            // A kind of handler newer than this code: it cannot be called
            // from here, so say so once instead of dropping events silently.
            Some(_) => {
                static ONCE: std::sync::Once = std::sync::Once::new();
                ONCE.call_once(|| tracing::warn!("docrel: a command event handler of an unknown kind gets no events"));
            }
        }
    }));
}

/// One operation's span (see the module documentation).
pub(crate) struct Op {
    span: Span,
}

impl Op {
    /// A span for `op` on `collection`.
    pub(crate) fn new(op: &'static str, collection: &str) -> Op {
        Op {
            span: tracing::debug_span!(
                "docrel",
                op,
                collection,
                documents = Empty,
                round_trips = Empty,
                elapsed_us = Empty,
                error = Empty
            ),
        }
    }

    /// Records the documents the operation is given (a write's batch).
    pub(crate) fn documents(self, n: usize) -> Op {
        self.span.record("documents", n as u64);
        self
    }

    /// Runs `work` inside the span.
    pub(crate) fn run<R>(self, work: impl Future<Output = Result<R>>) -> impl Future<Output = Result<R>> {
        self.run_counted(work, |_| None)
    }

    /// Runs `work` inside the span and records the documents `count` finds
    /// in its result.
    ///
    /// Untraced (the span disabled), the result is `work` itself: no
    /// wrapper future around it. An `async fn` here would hold `work` twice
    /// (as its argument and inside the state that awaits it), and every
    /// docrel operation's future would be as large again and copied that
    /// much more each time it moves.
    pub(crate) fn run_counted<R, W: Future<Output = Result<R>>>(
        self,
        work: W,
        count: impl FnOnce(&R) -> Option<usize>,
    ) -> impl Future<Output = Result<R>> {
        let span = self.span;
        if span.is_disabled() {
            return futures::future::Either::Left(work);
        }
        // Traced: boxed once, so the states below hold a pointer to it.
        let work = Box::pin(work);
        futures::future::Either::Right(async move {
            let started = Instant::now();
            // A docrel operation inside another (a save that fans out, a loader
            // inside a join) counts on the outer one's counter, by difference.
            let (result, trips) = match TRIPS.try_with(Arc::clone) {
                Ok(trips) => {
                    let before = trips.load(Ordering::Relaxed);
                    let result = work.instrument(span.clone()).await;
                    (result, trips.load(Ordering::Relaxed) - before)
                }
                Err(_) => {
                    let trips = Arc::new(AtomicU64::new(0));
                    let result = TRIPS.scope(trips.clone(), work.instrument(span.clone())).await;
                    (result, trips.load(Ordering::Relaxed))
                }
            };
            if INSTALLED.load(Ordering::Relaxed) > 0 {
                span.record("round_trips", trips);
            }
            span.record("elapsed_us", started.elapsed().as_micros() as u64);
            match &result {
                Ok(value) => {
                    if let Some(n) = count(value) {
                        span.record("documents", n as u64);
                    }
                }
                Err(e) => {
                    span.record("error", tracing::field::display(e.kind()));
                }
            }
            result
        })
    }
}

/// A fan-out target rewritten: a `DEBUG` event in the operation's span.
pub(crate) fn fanned_out<'a>(target: &str, path: impl FnOnce() -> &'a str, modified: u64) {
    // `path` is called only when the event is enabled.
    tracing::debug!(target: "docrel", collection = target, path = path(), modified, "fan-out");
}

/// A retry: a `DEBUG` event in the operation's span.
pub(crate) fn retry(what: &'static str, attempt: u32) {
    tracing::debug!(target: "docrel", what, attempt, "retry");
}

/// A fan-out that failed, leaving copies possibly stale: a `WARN` event.
pub(crate) fn fan_out_failed(error: &dyn std::fmt::Display) {
    tracing::warn!(target: "docrel", %error, "fan-out failed; copies may be stale until repair");
}
