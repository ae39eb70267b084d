//! Who holds a database's schema lease while a move runs: each process
//! renews one row of [`LEASES_COLLECTION`] whenever it confirms the
//! schema, stamped with the server's clock, saying which state of each
//! move it has seen and which shape it links (or which side of a two-way
//! array being made one-way it declares). The change running a move
//! enters a state only once every live holder has seen the previous one,
//! and retires the old shape only once no live holder links it. Without a
//! move or a retiring array nothing is written.

use super::moves_state::ActiveMove;
use super::transitions::RetiringInverse;
use crate::error::{Error, Result};
use mongodb::bson::{doc, oid::ObjectId, Document as BsonDoc};
use mongodb::Database;
use std::sync::OnceLock;

/// The collection of lease holders.
pub const LEASES_COLLECTION: &str = "_docrel_leases";

/// This process, as the holders' rows name it.
fn process() -> &'static (ObjectId, String, String) {
    static PROCESS: OnceLock<(ObjectId, String, String)> = OnceLock::new();
    PROCESS.get_or_init(|| {
        let host = std::env::var("HOSTNAME")
            .ok()
            .or_else(|| std::fs::read_to_string("/etc/hostname").ok().map(|h| h.trim().to_owned()))
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "?".to_owned());
        let program = std::env::current_exe()
            .ok()
            .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "?".to_owned());
        (ObjectId::new(), host, program)
    })
}

/// This process's id, as its row names it (`_id`).
pub(crate) fn this_process() -> String {
    process().0.to_hex()
}

/// The shapes of `moves` this program links: the old arrays (`posts.comments`)
/// whose owner type it declares with the field, and the new collections
/// whose type declares the move; and the sides of `retiring` two-way pairs
/// it declares (`courses.students`), as old arrays.
fn shapes(moves: &[ActiveMove], retiring: &[RetiringInverse]) -> (Vec<String>, Vec<String>) {
    let declared: Vec<String> = super::moves::program_moves().into_iter().map(|m| m.id).collect();
    let mut old = Vec::new();
    let mut new = Vec::new();
    for m in moves {
        if m.spec.kind.is_back() {
            // A move back's old shape is the documents referring to their parent.
            let links_old =
                crate::schema::registry::schemas().filter(|s| s.collection == m.spec.to.collection).any(|s| {
                    s.relations
                        .iter()
                        .any(|r| r.field == m.spec.parent_field && r.target == Some(&m.spec.from.collection))
                });
            if links_old {
                old.push(m.spec.to.collection.clone());
            }
            if declared.contains(&m.spec.id) {
                new.push(format!("{}.{}", m.spec.from.collection, m.field));
            }
            continue;
        }
        let field = m.spec.from.rust_field.as_deref().unwrap_or_default();
        let links_old = crate::schema::registry::schemas()
            .filter(|s| s.collection == m.spec.from.collection)
            .any(|s| s.relations.iter().any(|r| r.rust_field == field));
        if links_old {
            old.push(format!("{}.{field}", m.spec.from.collection));
        }
        if declared.contains(&m.spec.id) {
            new.push(m.spec.to.collection.clone());
        }
    }
    for r in retiring {
        let declares = crate::schema::registry::schemas()
            .filter(|s| s.collection == r.collection)
            .any(|s| s.relations.iter().any(|rel| rel.field == r.field));
        if declares {
            old.push(r.side());
        }
    }
    (old, new)
}

/// Renews this process's row for `db`: what it has seen of `moves` and
/// which retiring sides it declares, under a lease of `lease`, at the
/// server's time.
pub(super) async fn renew(
    db: &Database,
    (moves, retiring): (&[ActiveMove], &[RetiringInverse]),
    lease: std::time::Duration,
) -> Result<()> {
    let (id, host, program) = process();
    let (old, new) = shapes(moves, retiring);
    let seen: BsonDoc = moves.iter().map(|m| (m.spec.id.clone(), m.state.name().into())).collect();
    let row = doc! {
        "process": id.to_hex(),
        "host": host,
        "pid": i64::from(std::process::id()),
        "program": program,
        "lease_ms": i64::try_from(lease.as_millis()).unwrap_or(i64::MAX),
        "renewed_at": "$$NOW",
        "seen": {"$literal": seen},
        "old_shape": {"$literal": old},
        "new_shape": {"$literal": new},
    };
    db.collection::<BsonDoc>(LEASES_COLLECTION)
        .update_one(doc! {"_id": id.to_hex()}, vec![doc! {"$set": row}])
        .upsert(true)
        .await
        .map_err(|e| Error::driver("update", LEASES_COLLECTION, e))?;
    Ok(())
}
