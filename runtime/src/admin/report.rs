//! The schema report, generated from the link-time registry: the
//! relationships of every document type (pattern, bounds, copied fields,
//! fan-out targets, delete rules), the indexes they need, the advice of the
//! compile-time rules, and a Mermaid diagram of the collections and links.

use crate::schema::document::{RelationKind, Schema};
use crate::schema::registry::{describe, sorted};

/// The pattern of the reference texts a relationship follows.
fn pattern(kind: RelationKind, subset: bool) -> &'static str {
    match kind {
        RelationKind::Embed { .. } if subset => "subset",
        RelationKind::Embed { many: true, .. } => "one-to-few (embed)",
        RelationKind::Embed { many: false, .. } => "one-to-one (embed)",
        RelationKind::RefMany { .. } => "one-to-many (child references)",
        RelationKind::RefOne { .. } => "many-to-one (reference)",
        RelationKind::ParentRef => "one-to-squillions (parent reference)",
        RelationKind::Bucket => "bucket",
    }
}

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
/// let report = docrel::report::report_of(&[Host::schema(), LogMsg::schema()]);
/// assert!(report.contains("| logmsg | host | one-to-squillions (parent reference) |"));
/// assert!(report.contains("hosts ||--o{ logmsg : host"));
/// assert!(report.contains("`logmsg`: `{host: 1, time: -1}`"));
/// ```
pub fn report_of(schemas: &[&Schema]) -> String {
    let mut out = String::from("# Schema\n\n## Relationships\n\n");
    out.push_str("| collection | field | pattern | details | copies kept by fan-out |\n|---|---|---|---|---|\n");
    for s in schemas {
        for rel in s.relations {
            let targets: Vec<String> =
                rel.copies.iter().map(|c| format!("{} <- {}.{}", c.field, c.source, c.source_field)).collect();
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                s.collection,
                rel.field,
                pattern(rel.kind, rel.subset.is_some()),
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
    out.push_str("\n## Copied fields and their fan-outs\n\n");
    let mut sources: Vec<&str> = schemas.iter().map(|s| s.collection).collect();
    sources.dedup();
    let mut seen = Vec::new();
    for source in sources {
        // Two types of one collection share its fan-outs: list them once.
        if seen.contains(&source) {
            continue;
        }
        seen.push(source);
        for target in crate::denormalize::fanout::targets_of(source) {
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
    out.push_str("\n## Indexes\n\n");
    for s in schemas {
        for model in crate::schema::indexes::needed_by(s) {
            let keys: Vec<String> = model.keys.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            let unique = model.options.as_ref().and_then(|o| o.unique).unwrap_or(false);
            out.push_str(&format!(
                "- `{}`: `{{{}}}`{}\n",
                s.collection,
                keys.join(", "),
                if unique { " unique" } else { "" }
            ));
        }
    }
    out.push_str("\n## Advice\n\n");
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
    out.push_str("\n## Diagram\n\n```mermaid\nerDiagram\n");
    for s in schemas {
        out.push_str(&format!("    {} {{\n", s.collection));
        for f in s.fields {
            let ty: String = f.rust_type.chars().filter(|c| c.is_alphanumeric() || *c == '_').collect();
            out.push_str(&format!("        {} {}\n", ty, f.bson));
        }
        out.push_str("    }\n");
    }
    for s in schemas {
        for rel in s.relations {
            let Some(target) = rel.target else { continue };
            let line = match rel.kind {
                RelationKind::RefMany { .. } => format!("    {} }}o--o{{ {} : {}\n", s.collection, target, rel.field),
                RelationKind::RefOne { .. } => format!("    {} }}o--o| {} : {}\n", s.collection, target, rel.field),
                RelationKind::ParentRef => format!("    {} ||--o{{ {} : {}\n", target, s.collection, rel.field),
                _ => continue,
            };
            out.push_str(&line);
        }
        for rel in s.relations {
            if let Some(sub) = &rel.subset {
                out.push_str(&format!("    {} ||--o{{ {} : \"{} (subset)\"\n", s.collection, sub.child, rel.field));
            }
        }
    }
    out.push_str("```\n");
    out
}

/// The Markdown schema report of every document type linked into the program.
pub fn schema_report() -> String {
    report_of(&sorted())
}
