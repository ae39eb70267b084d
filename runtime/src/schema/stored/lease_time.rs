//! How long a process holds a database's schema: the lease every fleet
//! shares ([`set_lease`]) and a database's own ([`set_lease_for`]).

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

/// The lease of one database ([`crate::kept`]), set by [`set_lease_for`]
/// over [`lease`].
#[derive(Default)]
struct LeaseFor(Mutex<Option<Duration>>);

fn lease_of(db: &Database) -> std::sync::Arc<LeaseFor> {
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
    if let Ok(mut set) = lease_of(db).0.lock() {
        *set = Some(lease.max(Duration::from_millis(1)));
    }
}

/// The lease this process holds the schema of `db` under.
pub fn lease_for(db: &Database) -> Duration {
    lease_of(db).0.lock().ok().and_then(|set| *set).unwrap_or_else(lease)
}
