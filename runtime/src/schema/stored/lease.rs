//! The lease under which a process holds the schema published in a
//! database. Every docrel write first holds it: the first write to a
//! database reads the stored schema (so a process obeys the rules other
//! programs published from its first write on, without being told to),
//! and a write more than one lease after the last confirmation reads it
//! again. When that read fails the write is refused
//! ([`Error::SchemaLease`]): a process never writes with a schema older
//! than its lease, which is what lets an online rule change
//! ([`super::change`]) wait one lease and know that every writer follows
//! the new rule or writes nothing.

use super::obey::{confirmed_ago, obey};
use crate::error::{Error, Result};
use mongodb::Database;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// The lease a process holds a database's schema under unless
/// [`set_lease`] says otherwise.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

static LEASE_MS: AtomicU64 = AtomicU64::new(DEFAULT_LEASE.as_millis() as u64);

/// Sets the lease this process holds every database's schema under (at
/// least a millisecond). A shorter lease makes rule changes complete
/// sooner (a rule change, `docrel::admin::change`, waits two leases) and costs one read of the
/// schema collection per database per lease, only when writes happen. Every
/// process of a fleet and the program running the change must use the same
/// lease.
///
/// ```
/// docrel::schema::set_lease(std::time::Duration::from_secs(10));
/// assert_eq!(docrel::schema::lease(), std::time::Duration::from_secs(10));
/// # docrel::schema::set_lease(docrel::schema::DEFAULT_LEASE);
/// ```
pub fn set_lease(lease: Duration) {
    LEASE_MS.store((lease.as_millis() as u64).max(1), Ordering::SeqCst);
}

/// The lease this process holds schemas under ([`DEFAULT_LEASE`] unless
/// [`set_lease`] changed it).
pub fn lease() -> Duration {
    Duration::from_millis(LEASE_MS.load(Ordering::SeqCst))
}

/// The lease of one database and the read that renews it
/// ([`crate::kept`]).
#[derive(Default)]
struct Held {
    /// Set by [`set_lease_for`], over [`lease`].
    lease: Mutex<Option<Duration>>,
    /// Writes racing an expired lease wait for one read.
    reading: tokio::sync::Mutex<()>,
}

fn held(db: &Database) -> std::sync::Arc<Held> {
    crate::kept::of_database(db)
}

/// Sets the lease this process holds the schema of `db` under, over the
/// process-wide [`lease`]: a database no other program publishes to (a
/// test's own, say) can hold it longer. A rule change of that database
/// must wait this lease ([`crate::admin::change::Change::wait`]).
///
/// ```no_run
/// # async fn f(db: docrel::mongodb::Database) {
/// docrel::schema::set_lease_for(&db, std::time::Duration::from_secs(600));
/// assert_eq!(docrel::schema::lease_for(&db), std::time::Duration::from_secs(600));
/// # }
/// ```
pub fn set_lease_for(db: &Database, lease: Duration) {
    if let Ok(mut set) = held(db).lease.lock() {
        *set = Some(lease.max(Duration::from_millis(1)));
    }
}

/// The lease this process holds the schema of `db` under.
pub fn lease_for(db: &Database) -> Duration {
    held(db).lease.lock().ok().and_then(|set| *set).unwrap_or_else(lease)
}

/// When the lease under which this process last confirmed the schema of
/// `db` lapses (`None`: never confirmed).
pub(crate) fn held_until(db: &Database) -> Option<std::time::Instant> {
    Some(std::time::Instant::now() - confirmed_ago(db)? + lease_for(db))
}

/// Holds the schema of `db` for a write: nothing to do while the last
/// confirmation is within the lease; otherwise reads and obeys it again,
/// and refuses the write ([`Error::SchemaLease`], nothing written) when
/// that fails. Writes racing an expired lease read the schema once.
pub(crate) async fn hold(db: &Database) -> Result<()> {
    let lease = lease_for(db);
    let fresh = || confirmed_ago(db).is_some_and(|ago| ago < lease);
    if fresh() {
        return Ok(());
    }
    let held = held(db);
    let _one = held.reading.lock().await;
    if fresh() {
        return Ok(());
    }
    let since = confirmed_ago(db);
    obey(db).await.map(|_| ()).map_err(|e| Error::SchemaLease {
        database: db.name().to_owned(),
        since: since.map_or_else(|| "never".to_owned(), |d| format!("{:.1} s", d.as_secs_f64())),
        lease,
        reason: e.to_string(),
        // An unreachable server (an election, a cut) passes; a schema of a
        // newer docrel does not. The sync worker retries the one and
        // dead-letters only the other.
        transient: e.is_transient(),
    })
}
