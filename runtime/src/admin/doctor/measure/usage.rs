//! Rule 5's figures: writes of each copied source and reads of the
//! collection holding the copies, from the profiler when it is on for the
//! database (exact: the writes that set a copied field, whatever command
//! carried them, see [`super::profiled`]), else from the server's `top`
//! counters (update commands of any field), saying which, and per copy
//! which command and which counter each write figure comes from.

use super::profiled::{profiled, ADMIN_PROFILE};
use super::read::as_u64;
use crate::admin::doctor::declared::DeclaredCopy;
use crate::admin::doctor::report::CopyUse;
use crate::error::Result;
use mongodb::bson::{doc, Document as BsonDoc};
use mongodb::Database;
use std::collections::BTreeMap;

/// The use of each copy, and notes on where the figures come from; no
/// note when there is no copy.
pub(crate) async fn copies(db: &Database, copies: Vec<DeclaredCopy>) -> Result<(Vec<CopyUse>, Vec<String>)> {
    if copies.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    if profiling(db).await {
        let mut notes = vec![format!(
            "rule 5 from the profiler (`{}.system.profile`, level > 0; at level 1 only the operations slower than \
             `slowms` are there): writes are the statements of update, \
             findAndModify and bulkWrite commands of the source that set a copied field (a write of another field, \
             such as a push into a subset, does not count), each figure naming its command; reads are finds and \
             getMores of the holders",
            db.name()
        )];
        if !profiling(&db.client().database("admin")).await {
            notes.push(format!(
                "the `admin` database's profiler is off: a server that profiles a client-level bulkWrite whole, in \
                 `{ADMIN_PROFILE}` (SecantusDB; MongoDB profiles each of its operations in its own database), has \
                 those writes uncounted, and docrel sends a rename of a copied field as one on MongoDB 8.0+: turn it \
                 on too (`db.getSiblingDB(\"admin\").setProfilingLevel(2)`) on such a server"
            ));
        }
        let mut out = Vec::new();
        for c in copies {
            let p = profiled(db, &c).await?;
            let writes = p.writes_by.values().sum();
            out.push(use_of(c, Some(writes), Some(p.reads), "profiler", p.writes_by));
        }
        return Ok((out, notes));
    }
    match db.client().database("admin").run_command(doc! {"top": 1}).await {
        Ok(top) => {
            let note = "rule 5 from the server's `top` counters (per collection, since the server started; the \
                        profiler is off): writes are update commands on the source collection, whichever field they \
                        set (a push into a subset of the source counts too); a findAndModify counts as a command, \
                        not an update, and a client-level bulkWrite (how docrel renames a copied field on MongoDB \
                        8.0+) may not be counted for the collection at all (SecantusDB does not): turn the profiler \
                        on for the database (`db.setProfilingLevel(2)` while measuring) for exact figures. Reads are queries and \
                        getMores on the holders";
            Ok((from_top(&top, db.name(), copies), vec![note.into()]))
        }
        Err(e) => {
            let note = format!(
                "rule 5 not measured: the profiler is off and `top` was refused ({}); enable the profiler on the \
                 database (`db.setProfilingLevel(1)`) or grant `top`, and run the doctor again",
                crate::error::reason(&e)
            );
            let out = copies.into_iter().map(|c| use_of(c, None, None, "not measured", BTreeMap::new())).collect();
            Ok((out, vec![note]))
        }
    }
}

/// Whether the profiler is on for `db` (a refused `profile` counts as off).
async fn profiling(db: &Database) -> bool {
    db.run_command(doc! {"profile": -1}).await.ok().and_then(|r| as_u64(r.get("was"))).is_some_and(|level| level > 0)
}

fn use_of(
    c: DeclaredCopy,
    writes: Option<u64>,
    reads: Option<u64>,
    from: &str,
    writes_by: BTreeMap<String, u64>,
) -> CopyUse {
    CopyUse {
        source: c.source.to_owned(),
        fields: c.fields.into_iter().map(str::to_owned).collect(),
        copy: c.copy,
        holder: c.holder.to_owned(),
        writes,
        reads,
        measured_from: from.to_owned(),
        writes_by,
    }
}

/// From the answer of `top`: update commands on the source, queries and
/// getMores on the holders.
fn from_top(top: &BsonDoc, database: &str, copies: Vec<DeclaredCopy>) -> Vec<CopyUse> {
    let totals = top.get_document("totals").cloned().unwrap_or_default();
    let count = |ns: &str, what: &str| -> u64 {
        totals
            .get_document(ns)
            .ok()
            .and_then(|n| n.get_document(what).ok())
            .and_then(|w| as_u64(w.get("count")))
            .unwrap_or(0)
    };
    copies
        .into_iter()
        .map(|c| {
            let writes = count(&format!("{database}.{}", c.source), "update");
            let holder = format!("{database}.{}", c.holder);
            let reads = count(&holder, "queries") + count(&holder, "getmore");
            let by = BTreeMap::from([("update commands, any field".to_owned(), writes)]);
            use_of(c, Some(writes), Some(reads), "top", by)
        })
        .collect()
}
