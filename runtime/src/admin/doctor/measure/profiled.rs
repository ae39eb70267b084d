//! Rule 5 from the profiler: the writes of a copied source that set a
//! copied field, whatever command carried them, and the reads of the
//! holders.
//!
//! A write reaches the profiler in one of these forms, all counted:
//! - `update` (`op: "update"`): the statements of `updates` (a whole
//!   command, as SecantusDB records it) or the one `u` (MongoDB records a
//!   statement per entry);
//! - `findAndModify`: its `update`;
//! - a client-level `bulkWrite`, which docrel sends for a rename and its
//!   fan-out on MongoDB 8.0+: MongoDB records each of its operations in the
//!   operation's own database (`op: "bulkWrite"`, `updateMods`); a server
//!   that records the command whole records it in `admin`, where it ran
//!   (`ops` and `nsInfo`: SecantusDB), and `admin.system.profile` is read
//!   for it, only when the database's own profile holds none of the first
//!   form, so that no write is counted twice.
//!
//! Only the paths a write sets are compared with the copied fields, never
//! the values: a `$push` into a subset of the source whose elements have a
//! field of the same name is no write of that field.

use crate::admin::doctor::declared::DeclaredCopy;
use crate::error::{Error, Result};
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::Database;
use std::collections::BTreeMap;

/// Where the client-level `bulkWrite` commands a server profiles whole are.
pub(crate) const ADMIN_PROFILE: &str = "admin.system.profile";

/// One copy's figures from the profiler.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Profiled {
    /// Writes of a copied field, by `"<command> (<profile read>)"`.
    pub writes_by: BTreeMap<String, u64>,
    /// Finds and getMores of the holders.
    pub reads: u64,
}

/// The figures of one copy: its database's profile, then the `bulkWrite`
/// commands recorded whole in `admin`'s (a refused read of that one counts
/// nothing).
pub(crate) async fn profiled(db: &Database, c: &DeclaredCopy) -> Result<Profiled> {
    let (source, holder) = (format!("{}.{}", db.name(), c.source), format!("{}.{}", db.name(), c.holder));
    let own = format!("{}.system.profile", db.name());
    let mut out = Profiled::default();
    let mut per_operation = false;
    for entry in entries(db, doc! {"ns": {"$in": [&source, &holder]}}).await? {
        per_operation |= entry.get_str("op").ok() == Some("bulkWrite");
        if let Some((command, n)) = writes_in(&entry, &source, &c.fields) {
            *out.writes_by.entry(format!("{command} ({own})")).or_default() += n;
        }
        if entry.get_str("ns").ok() == Some(holder.as_str()) && matches!(entry.get_str("op"), Ok("query" | "getmore")) {
            out.reads += 1;
        }
    }
    if !per_operation {
        let whole = doc! {"command.bulkWrite": {"$exists": true}, "command.nsInfo.ns": &source};
        for entry in entries(&db.client().database("admin"), whole).await.unwrap_or_default() {
            if let Some((command, n)) = writes_in(&entry, &source, &c.fields) {
                *out.writes_by.entry(format!("{command} ({ADMIN_PROFILE})")).or_default() += n;
            }
        }
    }
    Ok(out)
}

/// The entries of `db`'s `system.profile` that `filter` matches.
async fn entries(db: &Database, filter: BsonDoc) -> Result<Vec<BsonDoc>> {
    let profile = db.collection::<BsonDoc>("system.profile");
    let err = |e| Error::driver("find", format!("{}.system.profile", db.name()), e);
    let mut cursor = profile.find(filter).projection(doc! {"ns": 1, "op": 1, "command": 1}).await.map_err(err)?;
    let mut out = Vec::new();
    while cursor.advance().await.map_err(err)? {
        out.push(cursor.deserialize_current().map_err(err)?);
    }
    Ok(out)
}

/// The command that carried the writes of `source` (`"db.collection"`) in
/// one profiler entry and how many of its statements set one of `fields`;
/// `None` when none does.
pub(crate) fn writes_in(entry: &BsonDoc, source: &str, fields: &[&str]) -> Option<(&'static str, u64)> {
    let command = entry.get_document("command").ok()?;
    let sets = |u: Option<&Bson>| u.is_some_and(|u| sets_any(u, fields));
    let on_source = entry.get_str("ns").ok() == Some(source);
    let (carrier, n) = if let Ok(ops) = command.get_array("ops") {
        // A bulkWrite recorded whole: its operations name their namespace by index.
        let namespaces: Vec<&str> = command
            .get_array("nsInfo")
            .ok()?
            .iter()
            .map(|n| n.as_document().and_then(|n| n.get_str("ns").ok()).unwrap_or_default())
            .collect();
        let of_source = |op: &&BsonDoc| {
            super::read::as_u64(op.get("update")).and_then(|i| namespaces.get(i as usize)) == Some(&source)
        };
        let ops = ops.iter().filter_map(Bson::as_document).filter(of_source);
        ("bulkWrite", ops.filter(|op| sets(op.get("updateMods"))).count())
    } else if !on_source {
        return None;
    } else if command.contains_key("findAndModify") || command.contains_key("findandmodify") {
        ("findAndModify", usize::from(sets(command.get("update"))))
    } else if entry.get_str("op").ok() == Some("bulkWrite") {
        ("bulkWrite", usize::from(sets(command.get("updateMods"))))
    } else if let Ok(statements) = command.get_array("updates") {
        let statements = statements.iter().filter_map(Bson::as_document);
        ("update", statements.filter(|s| sets(s.get("u"))).count())
    } else {
        ("update", usize::from(entry.get_str("op").ok() == Some("update") && sets(command.get("u"))))
    };
    (n > 0).then_some((carrier, n as u64))
}

/// Whether an update (operators, a replacement, or a pipeline) sets one of
/// `fields`: a path it writes is a field, below one, or above one.
pub(crate) fn sets_any(update: &Bson, fields: &[&str]) -> bool {
    match update {
        Bson::Document(d) if d.keys().any(|k| k.starts_with('$')) => d.iter().any(|(operator, paths)| {
            paths.as_document().is_some_and(|paths| {
                paths.iter().any(|(path, value)| {
                    // `$rename` also writes the path it renames to.
                    touches(path, fields)
                        || (operator == "$rename" && value.as_str().is_some_and(|to| touches(to, fields)))
                })
            })
        }),
        Bson::Document(replacement) => replacement.keys().any(|k| touches(k, fields)),
        Bson::Array(stages) => stages.iter().filter_map(Bson::as_document).any(|s| stage_sets(s, fields)),
        _ => false,
    }
}

/// One stage of a pipeline update.
fn stage_sets(stage: &BsonDoc, fields: &[&str]) -> bool {
    stage.iter().any(|(name, spec)| match (name.as_str(), spec) {
        ("$set" | "$addFields" | "$project", Bson::Document(d)) => d.keys().any(|k| touches(k, fields)),
        ("$unset", Bson::String(path)) => touches(path, fields),
        ("$unset", Bson::Array(paths)) => paths.iter().filter_map(Bson::as_str).any(|p| touches(p, fields)),
        // A `$replaceWith` names the fields it writes anywhere in its
        // expression: any mention counts (a replace of a source through
        // docrel names them all, changed or not).
        _ => mentions(spec, fields),
    })
}

fn mentions(v: &Bson, fields: &[&str]) -> bool {
    match v {
        Bson::Document(d) => d.iter().any(|(k, v)| touches(k, fields) || mentions(v, fields)),
        Bson::Array(a) => a.iter().any(|v| mentions(v, fields)),
        _ => false,
    }
}

/// Whether writing `path` writes one of `fields`, below it or above it.
fn touches(path: &str, fields: &[&str]) -> bool {
    let below = |a: &str, b: &str| a.strip_prefix(b).is_some_and(|rest| rest.starts_with('.'));
    fields.iter().any(|f| path == *f || below(path, f) || below(f, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: &str = "shop.parts";

    fn update(u: BsonDoc) -> BsonDoc {
        doc! {"op": "update", "ns": NS, "command": {"update": "parts", "updates": [{"q": {"name": "x"}, "u": u}]}}
    }

    #[test]
    fn a_write_counts_when_its_update_sets_a_copied_field() {
        let counted = |e: &BsonDoc, fields: &[&str]| writes_in(e, NS, fields);
        assert_eq!(counted(&update(doc! {"$set": {"name": "y"}}), &["name"]), Some(("update", 1)));
        assert!(counted(&update(doc! {"$set": {"name.first": "y"}}), &["name"]).is_some(), "below the field");
        assert!(counted(&update(doc! {"$set": {"spec": 1}}), &["spec.size"]).is_some(), "above it");
        assert!(counted(&update(doc! {"$set": {"qty": 1}}), &["name"]).is_none(), "the filter is not looked at");
        assert!(counted(&update(doc! {"$set": {"names": 1}}), &["name"]).is_none(), "another field");
        assert!(counted(&update(doc! {"$rename": {"old": "name"}}), &["name"]).is_some());
        let statement = doc! {"op": "update", "ns": NS, "command": {"q": {}, "u": {"$set": {"name": "y"}}}};
        assert_eq!(counted(&statement, &["name"]), Some(("update", 1)), "MongoDB's entry per statement");
        let other = doc! {"op": "update", "ns": "shop.other", "command": {"q": {}, "u": {"$set": {"name": "y"}}}};
        assert!(counted(&other, &["name"]).is_none(), "another collection");
    }

    /// docrel pushes into a subset with `$each`, `$sort` and `$slice`: the
    /// elements' own `name` is no write of the source's.
    #[test]
    fn a_push_into_a_subset_is_no_write_of_the_copied_field() {
        let push = doc! {"$push": {"latest": {"$each": [{"n": 1, "name": "a1"}], "$sort": {"n": -1}, "$slice": 10}},
        "$inc": {"_docrel.subsets.latest.n": 1}};
        assert!(writes_in(&update(push), NS, &["name"]).is_none());
        let replace = vec![doc! {"$replaceWith": {"$literal": {"name": "y", "qty": 1}}}];
        assert!(sets_any(&Bson::from(replace), &["name"]), "a replacement names it");
        let pipeline = vec![doc! {"$set": {"qty": 1}}, doc! {"$unset": ["name"]}];
        assert!(sets_any(&Bson::from(pipeline), &["name"]));
    }

    /// Each form a rename can take in a profile.
    #[test]
    fn find_and_modify_and_bulk_write_count_whatever_their_form() {
        let fam =
            doc! {"op": "command", "ns": NS, "command": {"findAndModify": "parts", "update": {"$set": {"name": "y"}}}};
        assert_eq!(writes_in(&fam, NS, &["name"]), Some(("findAndModify", 1)));
        let per_op = doc! {"op": "bulkWrite", "ns": NS, "command": {"update": 0, "filter": {}, "updateMods": {"$set": {"name": "y"}}}};
        assert_eq!(writes_in(&per_op, NS, &["name"]), Some(("bulkWrite", 1)));
        // Recorded whole: the source's statement counts, the fan-out into the holder does not.
        let whole = doc! {"op": "command", "ns": "admin", "command": {"bulkWrite": 1,
        "nsInfo": [{"ns": NS}, {"ns": "shop.products"}],
        "ops": [{"update": 0, "filter": {}, "updateMods": {"$set": {"name": "y", "_docrel.v": 2}}},
                {"update": 1, "filter": {}, "updateMods": {"$set": {"parts.$[p].name": "y"}}},
                {"insert": 0, "document": {"name": "z"}}]}};
        assert_eq!(writes_in(&whole, NS, &["name"]), Some(("bulkWrite", 1)));
        assert!(writes_in(&whole, NS, &["qty"]).is_none());
    }
}
