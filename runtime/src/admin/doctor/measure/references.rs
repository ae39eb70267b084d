//! References checked for documents that exist: the ids a collection holds
//! (at most [`Options::max_ids`] per field), looked up in their target with
//! `$in` reads of 500.

use super::read::{aggregate, coverage};
use crate::admin::doctor::report::{Missing, Options, RefStat};
use crate::error::{show_id, Result};
use crate::schema::document::{Relation, RelationKind, Schema};
use crate::schema::pattern::Pattern;
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::Database;

/// Each reference field of the types of `collection` (once), checked.
pub(crate) async fn references(
    db: &Database,
    options: &Options,
    collection: &str,
    types: &[&'static Schema],
) -> Result<Vec<RefStat>> {
    let mut seen: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for s in types {
        for rel in s.relations.iter().filter(|r| r.is_reference()) {
            let Some(target) = rel.target else { continue };
            if seen.contains(&rel.field) {
                continue;
            }
            seen.push(rel.field);
            out.extend(reference(db, options, collection, rel, target).await?);
        }
    }
    Ok(out)
}

/// One reference field; `None` when the collection is empty.
async fn reference(
    db: &Database,
    options: &Options,
    collection: &str,
    rel: &Relation,
    target: &str,
) -> Result<Option<RefStat>> {
    let (coverage, mut pipeline) = coverage(db, collection, options.sample).await?;
    if coverage.documents == 0 {
        return Ok(None);
    }
    let ids_expr: Bson = match rel.kind {
        // `$map` rather than `"$parts.id"`: correct on every server.
        RelationKind::RefMany { key: Some(key), .. } => Bson::Document(doc! {"$map": {
            "input": {"$cond": [{"$isArray": format!("${}", rel.field)}, format!("${}", rel.field), []]},
            "in": format!("$$this.{key}"),
        }}),
        _ => Bson::String(format!("${}", rel.field)),
    };
    pipeline.push(doc! {"$project": {"_id": 1, "r": ids_expr}});
    let rows = aggregate(db, collection, pipeline).await?;
    let (held, ids) = held_ids(&rows, options.max_ids);
    let found = existing(db, target, &ids).await?;
    let missing: Vec<&Bson> = ids.iter().filter(|id| !found.contains(id)).collect();
    let documents = held.iter().filter(|refs| refs.iter().any(|r| missing.contains(&r))).count() as u64;
    let kind = if rel.pattern() == Pattern::ParentReference { Missing::Orphans } else { Missing::Dangling };
    Ok(Some(RefStat {
        collection: collection.to_owned(),
        field: rel.field.to_owned(),
        target: target.to_owned(),
        kind,
        coverage,
        ids_checked: ids.len() as u64,
        missing_ids: missing.len() as u64,
        documents,
        examples: missing.iter().take(5).map(|id| show_id(id)).collect(),
    }))
}

/// The ids each row holds (nulls left out), and the distinct ids among
/// them, at most `max_ids`.
fn held_ids(rows: &[BsonDoc], max_ids: usize) -> (Vec<Vec<Bson>>, Vec<Bson>) {
    let mut held = Vec::new();
    let mut ids: Vec<Bson> = Vec::new();
    for r in rows {
        let refs: Vec<Bson> = match r.get("r") {
            Some(Bson::Array(a)) => a.iter().filter(|v| **v != Bson::Null).cloned().collect(),
            Some(Bson::Null) | None => Vec::new(),
            Some(v) => vec![v.clone()],
        };
        for id in &refs {
            if ids.len() < max_ids && !ids.contains(id) {
                ids.push(id.clone());
            }
        }
        held.push(refs);
    }
    (held, ids)
}

/// Which of `ids` exist in `target`.
async fn existing(db: &Database, target: &str, ids: &[Bson]) -> Result<Vec<Bson>> {
    let mut found = Vec::new();
    for chunk in ids.chunks(500) {
        let pipeline = vec![doc! {"$match": {"_id": {"$in": chunk.to_vec()}}}, doc! {"$project": {"_id": 1}}];
        let rows = aggregate(db, target, pipeline).await?;
        found.extend(rows.into_iter().filter_map(|d| d.get("_id").cloned()));
    }
    Ok(found)
}
