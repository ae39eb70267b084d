//! Counting round trips exactly, with the driver's command monitoring.

use crate::bson_compat;
use mongodb::event::command::CommandEvent;
use mongodb::options::ClientOptions;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The most commands [`RoundTrips`] keeps names of; older ones are dropped
/// (they are still counted), so a long-running client's log stays bounded.
pub const LOG_LIMIT: usize = 100_000;

/// Counts the commands a client sends (each one is a round trip) and the
/// bytes of the replies, from the driver's `CommandStartedEvent`s.
///
/// ```
/// # docrel::testing::doc_test(|db| async move {
/// # use docrel::bson::doc;
/// // `doc_test` hands out a database whose client is monitored.
/// let trips = docrel::testing::round_trips(&db);
/// let mark = trips.mark();
/// db.collection::<docrel::bson::Document>("c").insert_one(doc! {"a": 1}).await.unwrap();
/// assert_eq!(trips.since(mark), 1);
/// assert_eq!(trips.commands_since(mark), ["insert c"]);
/// # Ok(()) });
/// ```
#[derive(Clone, Default, Debug)]
pub struct RoundTrips {
    inner: Arc<Inner>,
}

#[derive(Default, Debug)]
struct Inner {
    count: AtomicU64,
    reply_bytes: AtomicU64,
    log: Mutex<Log>,
}

/// The names of the latest commands, and how many were dropped before them.
#[derive(Default, Debug)]
struct Log {
    dropped: u64,
    names: VecDeque<String>,
}

/// A point in a [`RoundTrips`] count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    count: u64,
    bytes: u64,
}

impl RoundTrips {
    /// A new counter.
    pub fn new() -> Self {
        Self::default()
    }

    /// Installs the counter on client options (before the client is built).
    /// A command event handler already there keeps receiving every event.
    pub fn install(&self, options: &mut ClientOptions) {
        let inner = self.inner.clone();
        crate::client::trace::chain(options, move |event: &CommandEvent| match event {
            CommandEvent::Started(started) => {
                inner.count.fetch_add(1, Ordering::SeqCst);
                let target = started
                    .command
                    .get(&started.command_name)
                    .and_then(|v| v.as_str())
                    .map(|c| format!(" {c}"))
                    .unwrap_or_default();
                if let Ok(mut log) = inner.log.lock() {
                    if log.names.len() == LOG_LIMIT {
                        log.names.pop_front();
                        log.dropped += 1;
                    }
                    log.names.push_back(format!("{}{target}", started.command_name));
                }
            }
            CommandEvent::Succeeded(done) => {
                let bytes = bson_compat::to_vec(&done.reply).map(|v| v.len() as u64).unwrap_or(0);
                inner.reply_bytes.fetch_add(bytes, Ordering::SeqCst);
            }
            _ => {}
        });
    }

    /// Commands sent so far.
    pub fn count(&self) -> u64 {
        self.inner.count.load(Ordering::SeqCst)
    }

    /// Bytes of the replies received so far (BSON size of each reply).
    pub fn reply_bytes(&self) -> u64 {
        self.inner.reply_bytes.load(Ordering::SeqCst)
    }

    /// The current position, to count from.
    pub fn mark(&self) -> Mark {
        Mark { count: self.count(), bytes: self.reply_bytes() }
    }

    /// Commands sent since `mark`.
    pub fn since(&self, mark: Mark) -> u64 {
        self.count() - mark.count
    }

    /// Reply bytes received since `mark`.
    pub fn bytes_since(&self, mark: Mark) -> u64 {
        self.reply_bytes() - mark.bytes
    }

    /// The commands sent since `mark`, as `"name collection"` (`"find parts"`);
    /// at most the last 100,000.
    pub fn commands_since(&self, mark: Mark) -> Vec<String> {
        let Ok(log) = self.inner.log.lock() else { return Vec::new() };
        let skip = mark.count.saturating_sub(log.dropped) as usize;
        log.names.iter().skip(skip).cloned().collect()
    }
}
