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

use super::lease_time::lease_for;
use super::obey::{confirmed_ago, obey};
use crate::error::{Error, Result};
use mongodb::Database;

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
    let reading = crate::kept::of_database::<Reading>(db);
    let _one = reading.0.lock().await;
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

/// Writes racing an expired lease of one database wait for one read
/// ([`crate::kept`]).
#[derive(Default)]
struct Reading(tokio::sync::Mutex<()>);
