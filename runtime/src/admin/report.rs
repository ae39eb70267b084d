//! The schema report, generated from the link-time registry: the
//! relationships of every document type (pattern, bounds, copied fields,
//! fan-out targets, delete rules), the indexes they need, the advice of the
//! compile-time rules, and a Mermaid diagram of the collections and links.

use crate::schema::document::{RelationKind, Schema};
use crate::schema::registry::describe;

/// The Markdown schema report of the document types in `schemas` (all
/// registered ones with [`schema_report`]).
///
/// ```
/// use docrel::{Document, bson::oid::ObjectId};
/// # use serde::{Deserialize, Serialize};
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "hosts")]
/// struct Host { #[serde(rename = "_id")] id: ObjectId, name: String }
///
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "logmsg")]
/// struct LogMsg {
///     #[serde(rename = "_id")] id: ObjectId,
///     #[parent_ref(to = Host, sort = "-time")] host: ObjectId,
///     time: docrel::bson::DateTime,
/// }
///
/// let report = docrel::admin::report::report_of(&[Host::schema(), LogMsg::schema()]);
/// assert!(report.contains("| logmsg | host | one-to-squillions (parent reference) |"));
/// assert!(report.contains("hosts ||--o{ logmsg : \"host\""));
/// assert!(report.contains("`logmsg`: `{host: 1, time: -1}`"));
/// ```
pub fn report_of(schemas: &[&'static Schema]) -> String {
    let mut out = String::from("# Schema\n\n## Relationships\n\n");
    relationships(schemas, &mut out);
    out.push_str("\n## Copied fields and their fan-outs\n\n");
    fanouts(schemas, &mut out);
    out.push_str("\n## Indexes\n\n");
    for s in schemas {
        let models = match crate::schema::indexes::needed_by(s) {
            Ok(models) => models,
            Err(e) => {
                out.push_str(&format!("- `{}`: {e}\n", s.collection));
                continue;
            }
        };
        for model in models {
            let shape = crate::admin::index_shape::Shape::of(&model);
            let keys: Vec<String> = shape.keys.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            let options = shape.show_options();
            out.push_str(&format!(
                "- `{}`: `{{{}}}`{}{}\n",
                s.collection,
                keys.join(", "),
                if shape.unique() { " unique" } else { "" },
                if options.is_empty() { String::new() } else { format!(" ({options})") }
            ));
        }
    }
    // Only when some type declares one: most deployments are not sharded.
    if schemas.iter().any(|s| !s.shard_key.is_empty()) {
        out.push_str("\n## Shard keys\n\n");
        for s in schemas.iter().filter(|s| !s.shard_key.is_empty()) {
            out.push_str(&format!("- `{}`: `{{{}}}`\n", s.collection, s.shard_key.join(": 1, ") + ": 1"));
        }
    }
    out.push_str("\n## Advice\n\n");
    advice(schemas, &mut out);
    out.push_str("\n## Diagram\n\n```mermaid\n");
    out.push_str(&mermaid(schemas));
    out.push_str("```\n");
    out
}

/// The table of relationships and top-level copies.
fn relationships(schemas: &[&Schema], out: &mut String) {
    out.push_str("| collection | field | pattern | details | copies kept by fan-out |\n|---|---|---|---|---|\n");
    for s in schemas {
        for rel in s.relations {
            let targets: Vec<String> =
                rel.copies.iter().map(|c| format!("{} <- {}.{}", c.field, c.source, c.source_field)).collect();
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                s.collection,
                rel.field,
                rel.pattern(),
                describe(rel).replace('|', "\\|"),
                targets.join(", ")
            ));
        }
        for copy in s.copies {
            out.push_str(&format!(
                "| {} | {} | denormalized copy | of {}::{} via `{}` | {} <- {}.{} |\n",
                s.collection,
                copy.field,
                copy.source_type,
                copy.source_field,
                copy.via,
                copy.field,
                copy.source,
                copy.source_field
            ));
        }
    }
}

/// The fan-outs of each source collection, once per collection.
fn fanouts(schemas: &[&'static Schema], out: &mut String) {
    // The fan-outs among exactly these types.
    let g = crate::schema::graph::Graph::build(schemas.iter().copied());
    let mut sources: Vec<&str> = schemas.iter().map(|s| s.collection).collect();
    sources.dedup();
    let mut seen = Vec::new();
    for source in sources {
        // Two types of one collection share its fan-outs: list them once.
        if seen.contains(&source) {
            continue;
        }
        seen.push(source);
        for target in g.targets_of(source) {
            let fields: Vec<String> = target.fields.iter().map(|(c, src)| format!("{src} -> {c}")).collect();
            out.push_str(&format!(
                "- `{}` -> `{}` through `{}`: {}\n",
                source,
                target.collection,
                target.id_path(),
                fields.join(", ")
            ));
        }
    }
}

/// The rules of thumb each type was warned about or acknowledged.
fn advice(schemas: &[&Schema], out: &mut String) {
    let mut any = false;
    for s in schemas {
        for a in s.advice.iter().filter(|a| (a.applies)()) {
            any = true;
            let state = if a.acknowledged { "acknowledged" } else { "warned" };
            out.push_str(&format!("- `{}.{}`: {} ({state})\n", s.collection, a.field, a.rule));
        }
    }
    if !any {
        out.push_str("- none: every rule of thumb is followed\n");
    }
}

/// The index in `schemas` of the type a relation of `from` leads to: the
/// type it names in that collection, preferring one declared next to
/// `from`, else any of the collection (the schema report's diagram and the
/// HTML one draw the same arrows).
pub(crate) fn entity_of(
    schemas: &[&Schema],
    collection: &str,
    type_name: Option<&str>,
    from: &Schema,
) -> Option<usize> {
    let candidates: Vec<usize> = (0..schemas.len()).filter(|i| schemas[*i].collection == collection).collect();
    let named: Vec<usize> = candidates.iter().copied().filter(|i| Some(schemas[*i].rust_name) == type_name).collect();
    named
        .iter()
        .copied()
        .find(|i| schemas[*i].module == from.module)
        .or_else(|| named.first().copied())
        .or_else(|| candidates.first().copied())
}

/// The last segment of a type's module, which tells apart two types that
/// share a collection.
pub(crate) fn module_name(s: &Schema) -> &'static str {
    s.module.rsplit("::").next().unwrap_or(s.module)
}

/// A name Mermaid parses as an entity or attribute: letters, digits and
/// `_`, starting with a letter or `_`.
fn ident(text: &str) -> String {
    let mut out: String = text.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if !out.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        out.insert(0, 'x');
    }
    out
}

/// The entity name of each schema: its collection, or, for a collection
/// that several types share, the collection with the type's module and
/// name (`products_catalog_Product`), so two types are never merged.
fn entities(schemas: &[&Schema]) -> Vec<String> {
    schemas
        .iter()
        .map(|s| {
            let shared = schemas.iter().filter(|o| o.collection == s.collection).count() > 1;
            if shared {
                ident(&format!("{}_{}_{}", s.collection, module_name(s), s.rust_name))
            } else {
                ident(s.collection)
            }
        })
        .collect()
}

/// The Mermaid `erDiagram` of `schemas`: an entity per document type, a
/// line per reference, parent reference and subset. Every name is made of
/// letters, digits and `_`, and every label is quoted, so it always parses.
///
/// ```
/// # use docrel::{Document, bson::oid::ObjectId};
/// # use serde::{Deserialize, Serialize};
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "log-msgs")]
/// struct LogMsg { #[serde(rename = "_id")] id: ObjectId }
/// let diagram = docrel::admin::report::mermaid(&[LogMsg::schema()]);
/// assert!(diagram.starts_with("erDiagram\n    log_msgs {\n"));
/// ```
pub fn mermaid(schemas: &[&Schema]) -> String {
    let names = entities(schemas);
    let mut out = String::from("erDiagram\n");
    for (s, name) in schemas.iter().zip(&names) {
        out.push_str(&format!("    {name} {{\n"));
        for f in s.fields {
            let ty: String = f.rust_type.chars().filter(|c| c.is_alphanumeric() || *c == '_').collect();
            out.push_str(&format!("        {} {}\n", ident(if ty.is_empty() { "unit" } else { &ty }), ident(f.bson)));
        }
        out.push_str("    }\n");
    }
    let find = |collection: &str, type_name: Option<&str>, from: &Schema| -> Option<&String> {
        entity_of(schemas, collection, type_name, from).map(|i| &names[i])
    };
    let label = |text: &str| format!("\"{}\"", text.replace('"', "'"));
    for (s, name) in schemas.iter().zip(&names) {
        for rel in s.relations {
            let Some(target) = rel.target.and_then(|t| find(t, rel.target_type, s)) else { continue };
            let line = match rel.kind {
                RelationKind::RefMany { .. } => format!("    {name} }}o--o{{ {target} : {}\n", label(rel.field)),
                RelationKind::RefOne { .. } => format!("    {name} }}o--o| {target} : {}\n", label(rel.field)),
                RelationKind::ParentRef => format!("    {target} ||--o{{ {name} : {}\n", label(rel.field)),
                _ => continue,
            };
            out.push_str(&line);
        }
        for rel in s.relations {
            if let Some(sub) = &rel.subset {
                if let Some(child) = find(sub.child, Some(sub.child_type), s) {
                    out.push_str(&format!(
                        "    {name} ||--o{{ {child} : {}\n",
                        label(&format!("{} (subset)", rel.field))
                    ));
                }
            }
        }
    }
    out
}

/// The Markdown schema report of every document type linked into the program.
pub fn schema_report() -> String {
    report_of(&crate::schema::graph::graph().types())
}
