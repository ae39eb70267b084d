//! The lease holders of a database, read on the server's clock: who holds
//! the schema, under which lease, what each has seen of the moves, and
//! which shape each links.

use crate::error::{Error, Result};
use crate::schema::stored::{MoveState, LEASES_COLLECTION};
use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::Database;
use serde::Serialize;
use std::collections::BTreeMap;

/// One process holding (or having held) the schema lease of a database.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Holder {
    /// The process's id (its row's `_id`).
    pub process: String,
    /// Its host.
    pub host: String,
    /// Its process id on that host.
    pub pid: i64,
    /// Its executable's name.
    pub program: String,
    /// Its lease, in milliseconds.
    pub lease_ms: i64,
    /// Milliseconds since it last renewed (server time).
    pub age_ms: i64,
    /// Whether its lease is current: it may be writing now.
    pub live: bool,
    /// The state of each move it has seen, by move id.
    pub seen: BTreeMap<String, MoveState>,
    /// The old arrays it links (`posts.comments`).
    pub old_shape: Vec<String>,
    /// The new collections whose move it declares.
    pub new_shape: Vec<String>,
}

/// Every holder of `db`, newest renewal first; ages are on the server's
/// clock (its `localTime` against the `$$NOW` each row was renewed at).
pub async fn holders(db: &Database) -> Result<Vec<Holder>> {
    Ok(holders_now(db).await?.0)
}

/// [`holders`], and the server's time they were aged at.
pub(super) async fn holders_now(db: &Database) -> Result<(Vec<Holder>, i64)> {
    let now = server_now(db).await?;
    let failed = |e| Error::driver("find", LEASES_COLLECTION, e);
    let rows: Vec<BsonDoc> = db
        .collection::<BsonDoc>(LEASES_COLLECTION)
        .find(doc! {})
        .sort(doc! {"renewed_at": -1})
        .await
        .map_err(failed)?
        .try_collect()
        .await
        .map_err(failed)?;
    Ok((rows.iter().map(|row| holder(row, now)).collect(), now))
}

fn holder(row: &BsonDoc, now: i64) -> Holder {
    let text = |k: &str| row.get_str(k).unwrap_or("?").to_owned();
    let int = |k: &str| match row.get(k) {
        Some(Bson::Int64(n)) => *n,
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Double(n)) => *n as i64,
        _ => 0,
    };
    let names = |k: &str| -> Vec<String> {
        row.get_array(k).map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()).unwrap_or_default()
    };
    let seen = row
        .get_document("seen")
        .map(|s| {
            s.iter()
                .filter_map(|(id, state)| {
                    let state = MoveState::ALL.into_iter().find(|m| state.as_str() == Some(m.name()))?;
                    Some((id.clone(), state))
                })
                .collect()
        })
        .unwrap_or_default();
    let renewed = row.get_datetime("renewed_at").map_or(0, |t| t.timestamp_millis());
    let (lease_ms, age_ms) = (int("lease_ms"), (now - renewed).max(0));
    Holder {
        process: row.get_str("_id").unwrap_or("?").to_owned(),
        host: text("host"),
        pid: int("pid"),
        program: text("program"),
        lease_ms,
        age_ms,
        live: age_ms < lease_ms,
        seen,
        old_shape: names("old_shape"),
        new_shape: names("new_shape"),
    }
}

/// Forgets the rows of processes silent for a day: the collection keeps
/// one row per process that wrote during a move, not one per lease.
pub(crate) async fn forget_silent(db: &Database) -> Result<u64> {
    let day_ago = mongodb::bson::DateTime::from_millis(mongodb::bson::DateTime::now().timestamp_millis() - 86_400_000);
    let r = db
        .collection::<BsonDoc>(LEASES_COLLECTION)
        .delete_many(doc! {"renewed_at": {"$lt": day_ago}})
        .await
        .map_err(|e| Error::driver("delete", LEASES_COLLECTION, e))?;
    Ok(r.deleted_count)
}

/// The server's clock, in milliseconds since the epoch (`hello`'s `localTime`).
pub(crate) async fn server_now(db: &Database) -> Result<i64> {
    let hello = db.run_command(doc! {"hello": 1}).await.map_err(|e| Error::driver("hello", db.name(), e))?;
    Ok(hello
        .get_datetime("localTime")
        .map_or_else(|_| mongodb::bson::DateTime::now().timestamp_millis(), |t| t.timestamp_millis()))
}
