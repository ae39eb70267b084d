//! Rule 5's figures: writes of each copied source and reads of the
//! collection holding the copies, from the profiler when it is on for the
//! database (exact: the writes that set a copied field), else from the
//! server's `top` counters (writes of any field), saying which.

use super::read::as_u64;
use crate::admin::doctor::declared::DeclaredCopy;
use crate::admin::doctor::report::CopyUse;
use crate::error::{Error, Result};
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::Database;

/// The use of each copy, and a note on where the figures come from; no
/// note when there is no copy.
pub(crate) async fn copies(db: &Database, copies: Vec<DeclaredCopy>) -> Result<(Vec<CopyUse>, Option<String>)> {
    if copies.is_empty() {
        return Ok((Vec::new(), None));
    }
    let profiling = db
        .run_command(doc! {"profile": -1})
        .await
        .ok()
        .and_then(|r| as_u64(r.get("was")))
        .is_some_and(|level| level > 0);
    if profiling {
        let note = "rule 5 from the profiler (`system.profile` of this database, level > 0): writes are updates and \
                    findAndModify of the source that set a copied field; reads are finds and getMores of the holders";
        return Ok((profiled(db, copies).await?, Some(note.into())));
    }
    match db.client().database("admin").run_command(doc! {"top": 1}).await {
        Ok(top) => {
            let note = "rule 5 from the server's `top` counters (per collection, since the server started; the \
                        profiler is off): writes are update commands on the source collection, whichever field they \
                        set (some servers count findAndModify as a command, not an update), reads are queries and \
                        getMores on the holders";
            Ok((from_top(&top, db.name(), copies), Some(note.into())))
        }
        Err(e) => {
            let note = format!(
                "rule 5 not measured: the profiler is off and `top` was refused ({e}); enable the profiler on the \
                 database (`db.setProfilingLevel(1)`) or grant `top`, and run the doctor again"
            );
            Ok((copies.into_iter().map(|c| use_of(c, None, None, "not measured")).collect(), Some(note)))
        }
    }
}

fn use_of(c: DeclaredCopy, writes: Option<u64>, reads: Option<u64>, from: &str) -> CopyUse {
    CopyUse {
        source: c.source.to_owned(),
        fields: c.fields.into_iter().map(str::to_owned).collect(),
        copy: c.copy,
        holder: c.holder.to_owned(),
        writes,
        reads,
        measured_from: from.to_owned(),
    }
}

/// From `system.profile`: updates of the source that set a copied field,
/// finds and getMores of the holders.
async fn profiled(db: &Database, copies: Vec<DeclaredCopy>) -> Result<Vec<CopyUse>> {
    let mut out = Vec::new();
    for c in copies {
        let namespaces = vec![format!("{}.{}", db.name(), c.source), format!("{}.{}", db.name(), c.holder)];
        let mut cursor = db
            .collection::<BsonDoc>("system.profile")
            .find(doc! {"ns": {"$in": namespaces}})
            .projection(doc! {"ns": 1, "op": 1, "command": 1})
            .await
            .map_err(|e| Error::driver("find", "system.profile", e))?;
        let (mut writes, mut reads) = (0, 0);
        while cursor.advance().await.map_err(|e| Error::driver("find", "system.profile", e))? {
            let r: BsonDoc = cursor.deserialize_current().map_err(|e| Error::driver("find", "system.profile", e))?;
            let ns = r.get_str("ns").unwrap_or_default();
            let op = r.get_str("op").unwrap_or_default();
            let command = r.get_document("command").cloned().unwrap_or_default();
            if ns.ends_with(&format!(".{}", c.source)) && sets_any(&command, &c.fields) {
                writes += 1;
            }
            if ns.ends_with(&format!(".{}", c.holder)) && matches!(op, "query" | "getmore") {
                reads += 1;
            }
        }
        out.push(use_of(c, Some(writes), Some(reads), "profiler"));
    }
    Ok(out)
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
            use_of(c, Some(writes), Some(reads), "top")
        })
        .collect()
}

/// Whether an update or findAndModify command (as the profiler records
/// it) sets one of `fields`, through any operator, at any depth of its
/// update document (filters are not looked at).
pub(crate) fn sets_any(command: &BsonDoc, fields: &[&str]) -> bool {
    fn walk(v: &Bson, fields: &[&str]) -> bool {
        match v {
            Bson::Document(d) => d.iter().any(|(k, v)| {
                fields.iter().any(|f| k == f || k.starts_with(&format!("{f}.")) || f.starts_with(&format!("{k}.")))
                    || walk(v, fields)
            }),
            Bson::Array(a) => a.iter().any(|v| walk(v, fields)),
            _ => false,
        }
    }
    let updates = command.get_array("updates").map(|u| u.iter().filter_map(Bson::as_document).collect::<Vec<_>>());
    match updates {
        Ok(list) => list.iter().any(|u| u.get("u").is_some_and(|u| walk(u, fields))),
        Err(_) => command.get("update").filter(|_| !command.contains_key("updates")).is_some_and(|u| walk(u, fields)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_counts_when_its_update_sets_a_copied_field() {
        let update = |u: BsonDoc| doc! {"update": "parts", "updates": [{"q": {"name": "x"}, "u": u}]};
        assert!(sets_any(&update(doc! {"$set": {"name": "y"}}), &["name"]));
        assert!(sets_any(&update(doc! {"$set": {"name.first": "y"}}), &["name"]), "below the field");
        assert!(sets_any(&update(doc! {"$set": {"spec": 1}}), &["spec.size"]), "above it");
        assert!(!sets_any(&update(doc! {"$set": {"qty": 1}}), &["name"]), "the filter is not looked at");
        let find_and_modify = doc! {"findAndModify": "parts", "update": {"$set": {"name": "y"}}};
        assert!(sets_any(&find_and_modify, &["name"]));
    }
}
