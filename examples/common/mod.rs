//! What every scenario example shares: connecting to `MONGODB_URI` on a
//! client whose round trips are counted, the example's own database, and a
//! log that prints each step with the round trips it cost.
//!
//! It lives in a subfolder so that cargo does not take it for an example of
//! its own; each example includes it with `#[path = "common/mod.rs"]`.

use docrel::client::RoundTrips;
use docrel::mongodb::Database;
use std::future::IntoFuture;
use std::sync::Mutex;

/// Where the examples look for a server when `MONGODB_URI` is not set.
pub const DEFAULT_URI: &str = "mongodb://127.0.0.1:27017";

/// Prints what a scenario does, one step at a time, with the round trips
/// (commands sent to the server) each step cost.
#[derive(Debug)]
pub struct Log {
    trips: RoundTrips,
    costs: Mutex<Vec<(String, u64)>>,
}

impl Log {
    /// A log counting the round trips of the client `trips` is installed on.
    pub fn new(trips: RoundTrips) -> Self {
        Log { trips, costs: Mutex::new(Vec::new()) }
    }

    /// A heading line.
    pub fn title(&self, text: &str) {
        println!("{text}");
    }

    /// Runs one step and prints what it cost.
    pub async fn step<T>(&self, what: &str, f: impl IntoFuture<Output = docrel::Result<T>>) -> docrel::Result<T> {
        let mark = self.trips.mark();
        let out = f.await?;
        let n = self.trips.since(mark);
        println!("  {what:<72} {n} round trip{}", if n == 1 { "" } else { "s" });
        if let Ok(mut costs) = self.costs.lock() {
            costs.push((what.to_owned(), n));
        }
        Ok(out)
    }

    /// A line of detail under the last step.
    pub fn show(&self, line: impl std::fmt::Display) {
        println!("      {line}");
    }

    /// The round trips the step named `what` cost (the last one of that name).
    #[allow(dead_code)] // read by tests/examples.rs
    pub fn cost(&self, what: &str) -> Option<u64> {
        let costs = self.costs.lock().ok()?;
        costs.iter().rev().find(|(w, _)| w == what).map(|(_, n)| *n)
    }
}

/// Connects to the server of `MONGODB_URI` (counting round trips) and opens
/// the database of `DOCREL_DB`, by default `docrel_<example>`, dropping it
/// first so that every run starts from nothing.
pub async fn open(example: &str) -> docrel::Result<(Database, Log)> {
    let uri = std::env::var(docrel::client::URI_VARIABLE).unwrap_or_else(|_| DEFAULT_URI.to_owned());
    let trips = RoundTrips::new();
    let mut options = docrel::client::options(&uri).await?;
    trips.install(&mut options);
    let client = docrel::connect_with(&uri, options).await?;
    let name = std::env::var("DOCREL_DB").ok().filter(|n| !n.is_empty()).unwrap_or_else(|| format!("docrel_{example}"));
    let db = client.database(&name);
    db.drop().await.map_err(|e| docrel::Error::driver("dropDatabase", db.name(), e))?;
    println!("{example}: database `{name}`, dropped and started afresh");
    Ok((db, Log::new(trips)))
}

/// Says where the data was left.
pub fn done(db: &Database) {
    println!("done: the data is left in database `{}` for inspection", db.name());
}

/// Ends the program: on an error, prints it and exits with status 1.
pub fn finish(example: &str, result: docrel::Result<()>) {
    if let Err(e) = result {
        eprintln!("{example} failed: {e}");
        std::process::exit(1);
    }
}
