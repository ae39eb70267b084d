//! The link-time registry of every derived document type of the program.
//!
//! Each `#[derive(Document)]` submits its [`Schema`] with `inventory`, so a
//! source finds the documents that refer to it wherever they are declared,
//! in any module or crate linked into the program.

use crate::schema::document::{Relation, Schema};

/// One registered schema (generated code submits these; users read them).
#[derive(Debug)]
pub struct Registered(pub &'static Schema);

inventory::collect!(Registered);

/// Every document type linked into the program.
///
/// ```
/// #[derive(docrel::Document, serde::Serialize, serde::Deserialize)]
/// #[document(collection = "hosts")]
/// struct Host { #[serde(rename = "_id")] id: i64, name: String }
///
/// assert!(docrel::schema::registry::schemas().any(|s| s.collection == "hosts"));
/// ```
pub fn schemas() -> impl Iterator<Item = &'static Schema> {
    #[cfg(feature = "testing")]
    READ.store(true, std::sync::atomic::Ordering::SeqCst);
    inventory::iter::<Registered>.into_iter().map(|r| r.0).filter(|s| linked(s.module))
}

// Both for `docrel::testing::link_only` alone: a program built without
// the `testing` feature holds no such state.

/// Whether the registry was read: from then on, what the program links is
/// fixed (graphs, exports and publishes were made of it).
#[cfg(feature = "testing")]
static READ: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The module prefixes a test program links, when it plays one version of
/// a program of several in one binary (`docrel::testing::link_only`).
#[cfg(feature = "testing")]
static LINKED_MODULES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

/// Whether the type declared in `module` is part of the program.
#[cfg(not(feature = "testing"))]
pub(crate) fn linked(_module: &str) -> bool {
    true
}

/// Whether the type declared in `module` is part of the program.
#[cfg(feature = "testing")]
pub(crate) fn linked(module: &str) -> bool {
    LINKED_MODULES.get().is_none_or(|prefixes| {
        prefixes
            .iter()
            .any(|p| module == p || module.strip_prefix(p.as_str()).is_some_and(|rest| rest.starts_with("::")))
    })
}

/// Makes the program the types declared in `modules` (and their
/// submodules) alone; `Err` with what happened when the registry was
/// already read or restricted.
#[cfg(feature = "testing")]
pub(crate) fn link_only(modules: &[&str]) -> std::result::Result<(), String> {
    if READ.load(std::sync::atomic::Ordering::SeqCst) {
        return Err("the registry was already read: call `link_only` before any docrel call".to_owned());
    }
    LINKED_MODULES
        .set(modules.iter().map(|m| (*m).to_owned()).collect())
        .map_err(|_| "`link_only` was already called in this process".to_owned())
}

/// Every document type, ordered by collection then type name.
pub fn sorted() -> Vec<&'static Schema> {
    let mut all: Vec<&'static Schema> = schemas().collect();
    all.sort_by_key(|s| (s.collection, s.rust_name));
    all
}

/// A line describing a relationship: pattern, bound, target, rules.
pub fn describe(rel: &Relation) -> String {
    use crate::schema::document::{OnDelete, RelationKind};
    let bound = |max: Option<u32>| max.map_or_else(|| "unbounded".to_owned(), |m| format!("max {m}"));
    let mut out = match rel.kind {
        RelationKind::Embed { many: true, max } => format!("embed, {}", bound(max)),
        RelationKind::Embed { many: false, .. } => "embed one".to_owned(),
        RelationKind::RefMany { max, key } => format!(
            "references to {}, {}{}",
            rel.target_type.unwrap_or("?"),
            bound(max),
            key.map(|k| format!(", by `{k}`")).unwrap_or_default()
        ),
        RelationKind::RefOne { optional } => {
            format!("reference to {}{}", rel.target_type.unwrap_or("?"), if optional { ", optional" } else { "" })
        }
        RelationKind::ParentRef => format!("parent reference to {}", rel.target_type.unwrap_or("?")),
        RelationKind::Bucket => match &rel.bucket {
            Some(b) if b.counter => format!(
                "counts per {} ms window per `{}`{}",
                b.window_ms.unwrap_or_default(),
                b.parent,
                b.sum.map(|s| format!(", summing `{s}`")).unwrap_or_default()
            ),
            Some(b) => match (b.size, b.window_ms) {
                (Some(size), _) => format!("buckets of {size} per `{}`", b.parent),
                (None, Some(ms)) => format!("buckets of {ms} ms windows per `{}`", b.parent),
                _ => "buckets".to_owned(),
            },
            None => "buckets".to_owned(),
        },
    };
    if let Some(s) = &rel.subset {
        out.push_str(&format!(", subset of {} ({})", s.child_type, s.child));
    }
    if let Some(inverse) = rel.inverse {
        out.push_str(&format!(", two-way with `{inverse}`"));
    }
    match rel.on_delete {
        OnDelete::Nothing => {}
        OnDelete::Pull => out.push_str(", on_delete pull"),
        OnDelete::Cascade => out.push_str(", on_delete cascade"),
        OnDelete::Restrict => out.push_str(", on_delete restrict"),
    }
    if !rel.copies.is_empty() {
        let copies: Vec<String> =
            rel.copies.iter().map(|c| format!("{} <- {}::{}", c.field, c.source_type, c.source_field)).collect();
        out.push_str(&format!(", copies {}", copies.join(", ")));
    }
    out
}

/// The schema advice of the whole program: per document type, its
/// relationships and bounds, the rules of thumb its attributes break, and
/// whether each one was acknowledged.
///
/// ```
/// use docrel::{Document, bson::oid::ObjectId};
/// # use serde::{Deserialize, Serialize};
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "patrons")]
/// struct Patron {
///     #[serde(rename = "_id")] id: String,
///     #[embed(allow_unbounded)] addresses: Vec<String>,
/// }
/// let report = docrel::schema::registry::advice_report();
/// assert!(report.contains("Patron (`patrons`)"));
/// assert!(report.contains("addresses: embed, unbounded"));
/// assert!(report.contains("docrel_rule_3_unbounded_embed on `addresses`: acknowledged"));
/// ```
pub fn advice_report() -> String {
    let mut out = String::new();
    for s in sorted() {
        out.push_str(&format!("{} (`{}`)\n", s.rust_name, s.collection));
        for rel in s.relations {
            out.push_str(&format!("  {}: {}\n", rel.field, describe(rel)));
        }
        // The references inside the elements, as the arrays keyed by them.
        for rel in crate::schema::elements::element_relations(s) {
            out.push_str(&format!("  {}: {}\n", rel.field, describe(rel)));
        }
        for copy in s.copies {
            out.push_str(&format!(
                "  {}: copy of {}::{} via `{}`\n",
                copy.field, copy.source_type, copy.source_field, copy.via
            ));
        }
        for advice in s.advice.iter().filter(|a| (a.applies)()) {
            let state = if advice.acknowledged { "acknowledged" } else { "WARNED" };
            out.push_str(&format!("  ! {} on `{}`: {state}\n", advice.rule, advice.field));
        }
    }
    out
}
