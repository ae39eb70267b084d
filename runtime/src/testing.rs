//! Support for tests against a real server: a database of one's own per
//! test (so tests run in parallel), dropped afterwards, on a client whose
//! round trips are counted.

use crate::client::connect::{connect_with, options, URI_VARIABLE};
use crate::client::monitor::RoundTrips;
use crate::error::{Error, Result};
use mongodb::{Client, Database};
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

fn counters() -> &'static Mutex<HashMap<String, RoundTrips>> {
    static COUNTERS: OnceLock<Mutex<HashMap<String, RoundTrips>>> = OnceLock::new();
    COUNTERS.get_or_init(Default::default)
}

/// A database of its own for one test, on a monitored client. It is dropped
/// from the server when the value is dropped (also when the test fails).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> docrel::Result<()> {
/// # if std::env::var("MONGODB_URI").is_err() { return Ok(()) }
/// let t = docrel::testing::TestDb::new("example").await?;
/// let mark = t.trips.mark();
/// t.db.list_collection_names().await.unwrap();
/// assert_eq!(t.trips.since(mark), 1);
/// # Ok(()) }
/// ```
pub struct TestDb {
    /// The test's own database.
    pub db: Database,
    /// Its client.
    pub client: Client,
    /// The client's round-trip counter.
    pub trips: RoundTrips,
    uri: String,
}

// The URI may carry a password: `Debug` shows it redacted.
impl std::fmt::Debug for TestDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestDb")
            .field("db", &self.db.name())
            .field("uri", &crate::client::connect::redact(&self.uri))
            .field("trips", &self.trips.count())
            .finish()
    }
}

/// The schema lease of a [`TestDb`]'s database (see
/// [`crate::schema::set_lease_for`]); a test of leases sets its own.
pub const TEST_LEASE: std::time::Duration = std::time::Duration::from_secs(3600);

impl TestDb {
    /// Connects to `MONGODB_URI` and names a fresh database after `label`.
    pub async fn new(label: &str) -> Result<TestDb> {
        let uri = std::env::var(URI_VARIABLE).map_err(|_| Error::Invalid {
            what: crate::error::Misuse::Environment,
            message: format!(
                "{URI_VARIABLE} is not set: point it at a test server (a replica set, so transactions \
                 work), for example `{URI_VARIABLE}=mongodb://127.0.0.1:27017/?directConnection=true cargo test`"
            ),
        })?;
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let clean: String = label.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).take(30).collect();
        let name = format!("t_{clean}_{}_{}", std::process::id(), SEQ.fetch_add(1, Ordering::SeqCst));
        let trips = RoundTrips::new();
        let mut opts = options(&uri).await?;
        // The database's name is also the client's appName, so a fail point
        // (`failCommand` with `appName`) hits this test's client and no other.
        opts.app_name = Some(name.clone());
        trips.install(&mut opts);
        let client = connect_with(&uri, opts).await?;
        let db = client.database(&name);
        // Read the (empty) stored schema now, as the first write would, so
        // a test's round-trip counts start after it; and hold it for the
        // test's life: no other program publishes to this database, and a
        // re-read would land in the middle of a test's counts.
        crate::schema::stored::obey_saying(&db, false).await?;
        crate::schema::stored::set_lease_for(&db, TEST_LEASE);
        if let Ok(mut map) = counters().lock() {
            map.insert(name, trips.clone());
        }
        Ok(TestDb { db, client, trips, uri })
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let name = self.db.name().to_owned();
        if let Ok(mut map) = counters().lock() {
            map.remove(&name);
        }
        let uri = self.uri.clone();
        // The test's runtime may be shutting down: drop from a runtime of our own.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
            rt.block_on(async move {
                let client = Client::with_uri_str(&uri).await.ok()?;
                client.database(&name).drop().await.ok()
            })
        })
        .join();
    }
}

/// Makes this process's program the document types declared in `modules`
/// (module paths as `module_path!()` gives them, with their submodules)
/// and nothing else: a test binary can then play one version of a program
/// of several it declares (the old `Post` with its comments, or the new
/// `Post` and `Comment`), one per process. Call it first, before anything
/// reads the registry.
///
/// # Panics
/// When the registry was already read, or this was already called: the
/// process would mix two programs.
///
/// ```
/// // A process that links none of the test's types:
/// docrel::testing::link_only(&["no_such_module"]);
/// assert_eq!(docrel::schema::registry::schemas().count(), 0);
/// ```
pub fn link_only(modules: &[&str]) {
    if let Err(e) = crate::schema::registry::link_only(modules) {
        panic!("docrel::testing::link_only: {e}");
    }
}

/// Makes docrel take the deployment `client` talks to as reporting the
/// release `version` (`"9.0.4"`), for that deployment alone (every client
/// of it in this process: keep such a test apart from the tests that need
/// the real answer): the commands a newer server gets are then seen, and
/// pinned, on any server.
///
/// ```
/// # docrel::testing::doc_test(|db| async move {
/// docrel::testing::pretend_release(db.client(), "9.0.4");
/// # Ok(()) });
/// ```
pub fn pretend_release(client: &mongodb::Client, version: &str) {
    crate::client::release::pretend(client, version);
}

/// The round-trip counter of a database handed out by [`TestDb`] or [`doc_test`].
///
/// # Panics
/// When `db` did not come from them: a test-support misuse.
pub fn round_trips(db: &Database) -> RoundTrips {
    counters()
        .lock()
        .ok()
        .and_then(|m| m.get(db.name()).cloned())
        .expect("round_trips: this database was not created by docrel::testing")
}

/// Runs a documentation example against the server of `MONGODB_URI` in a
/// database of its own. Without `MONGODB_URI` the example is skipped with a
/// note, so `cargo test` outside `scripts/test` still compiles every example;
/// under CI (`CI` set) a missing server fails the example instead, so no
/// example passes there without having run.
///
/// # Panics
/// When the example returns an error: it is a test. When `CI` is set and
/// `MONGODB_URI` is not.
pub fn doc_test<F, Fut>(example: F)
where
    F: FnOnce(Database) -> Fut,
    Fut: Future<Output = Result<()>>,
{
    if std::env::var(URI_VARIABLE).is_err() {
        if std::env::var_os("CI").is_some() {
            panic!("{URI_VARIABLE} is not set under CI: this database example would pass without running (set {URI_VARIABLE})");
        }
        eprintln!("note: {URI_VARIABLE} is not set; database example skipped (set {URI_VARIABLE} to run it)");
        return;
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    rt.block_on(async {
        let t = TestDb::new("doc").await.expect("connecting for the example");
        if let Err(e) = example(t.db.clone()).await {
            panic!("example failed: {e}");
        }
    });
}
