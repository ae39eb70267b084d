//! The commands that report without changing data: `schema` (the report,
//! as Markdown or JSON, and its page), `indexes plan|apply`, and `doctor`.

use super::console::{json, write_file, Console, Exit};
use crate::admin::doctor::{self, Severity};
use crate::admin::{html, index_plan, report};
use crate::error::Result;
use crate::schema::document::Schema;
use crate::schema::graph::all_types;
use crate::schema::registry::describe;
use mongodb::Database;
use std::path::Path;

/// `schema`: the report of `types` (the linked ones, and the published ones
/// when a database is named), and its page when asked.
pub(super) fn schema(
    console: &mut Console,
    types: &[&'static Schema],
    page: Option<&Path>,
    as_json: bool,
) -> Result<Exit> {
    if let Some(path) = page {
        write_file(path, &html::schema_page_of(types))?;
        console.note(&format!("schema page written to {}", path.display()));
    }
    if as_json {
        console.say(&json(&schema_json(types)));
    } else {
        console.say(&report::report_of(types));
    }
    Ok(Exit::Ok)
}

/// `indexes plan` (exit 1 when anything would change) or, `apply`, the
/// creation of the missing indexes.
pub(super) async fn indexes(
    db: &Database,
    console: &mut Console,
    apply: bool,
    drop_undeclared: bool,
    as_json: bool,
) -> Result<Exit> {
    let plan = index_plan::plan(db).await?;
    if !apply {
        console.say(&if as_json { json(&plan) } else { plan.to_text(drop_undeclared) });
        return Ok(if plan.has_changes(drop_undeclared) { Exit::Found } else { Exit::Ok });
    }
    let applied = plan.apply(db, drop_undeclared).await?;
    if as_json {
        console.say(&json(&applied));
        return Ok(Exit::Ok);
    }
    let mut text = String::new();
    for c in &applied.created {
        text.push_str(&format!("created {c}\n"));
    }
    for d in &applied.dropped {
        text.push_str(&format!("dropped {d}\n"));
    }
    if text.is_empty() {
        text.push_str("nothing to do: every declared index exists\n");
    }
    console.say(&text);
    Ok(Exit::Ok)
}

/// `doctor`: the findings, and their page when asked; exit 1 when one is
/// at `fail_on` or above (never when `None`).
pub(super) async fn doctor(
    db: &Database,
    console: &mut Console,
    options: &doctor::Options,
    fail_on: Option<Severity>,
    page: Option<&Path>,
    as_json: bool,
) -> Result<Exit> {
    let found = doctor::run(db, options).await?;
    if let Some(path) = page {
        write_file(path, &doctor::doctor_page_of(&found, &all_types(db)))?;
        console.note(&format!("doctor page written to {}", path.display()));
    }
    console.say(&if as_json { found.to_json() } else { found.to_text() });
    Ok(match fail_on {
        Some(t) if found.at_least(t) > 0 => Exit::Found,
        _ => Exit::Ok,
    })
}

/// The schema as JSON: every type with its relationships.
fn schema_json(types: &[&'static Schema]) -> serde_json::Value {
    let markdown = report::report_of(types);
    let types: Vec<serde_json::Value> = types
        .iter()
        .map(|s| {
            let relations: Vec<serde_json::Value> = s
                .relations
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "field": r.field,
                        "target": r.target,
                        "inverse": r.inverse,
                        "describe": describe(r),
                    })
                })
                .collect();
            let copies: Vec<serde_json::Value> = s
                .copies
                .iter()
                .map(|c| serde_json::json!({"field": c.field, "source": c.source, "source_field": c.source_field, "via": c.via}))
                .collect();
            serde_json::json!({
                "collection": s.collection,
                "type": s.rust_name,
                "module": s.module,
                "relations": relations,
                "copies": copies,
            })
        })
        .collect();
    serde_json::json!({ "types": types, "markdown": markdown })
}
