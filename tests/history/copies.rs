//! I1: every denormalized copy equals the current value of its source, or
//! its source is gone (dangling: allowed), and the version record docrel
//! keeps beside it agrees with the source's version. The records follow
//! the contract at the head of docrel's `denormalize/fanout.rs`: a source
//! keeps `_docrel.v`; a holder keeps, per source document, the version it
//! copied in `_docrel.copies.<via or array>.<source id>`; a fan-out writes
//! only where the record is older than its version. So:
//!
//! - a record above its source's version is wrong for good (every later
//!   fan-out is skipped there);
//! - a record equal to the source's version vouches for the values: with
//!   different values, no fan-out of that version comes again;
//! - a copy of a source that exists has a record (every write of a holder
//!   through docrel fills its copies and records their version): reported
//!   as [`Inv::Unrecorded`], since a missing record is tolerated by the
//!   fan-out guard (it is rewritten) and left by a repair when the values
//!   are right.

use super::check::{array, by_id, is_set, key, show, v, Inv, Snapshot, Violation};
use docrel::bson::{Bson, Document};
use std::collections::HashMap;

/// The copies of a part in `products.parts[]`: (copy, source field).
const PART_COPIES: &[(&str, &str)] = &[("pname", "name"), ("qty", "qty"), ("label", "label")];
/// The copy of a product's name in `parts`.
const PRODUCT_COPIES: &[(&str, &str)] = &[("productName", "name")];
/// The copy of a person's name in `tasks`.
const OWNER_COPIES: &[(&str, &str)] = &[("owner_name", "name")];
/// The copy of a person's name in each element of `tasks.notes` (its
/// reference stored as `who`).
const NOTE_COPIES: &[(&str, &str)] = &[("by_name", "name")];
/// The copy of an item's name in `reviews`.
const ITEM_COPIES: &[(&str, &str)] = &[("item_name", "name")];
/// The copy of the reviewer's name in `reviews`.
const REVIEWER_COPIES: &[(&str, &str)] = &[("reviewer_name", "name")];

/// One holder's copies of one source document.
pub(super) struct Site<'a> {
    /// Where the copies are, in words.
    pub(super) what: String,
    /// The document or array element holding the copied values.
    pub(super) values: &'a Document,
    /// The document keeping `_docrel.copies`.
    pub(super) holder: &'a Document,
    /// The record's field under `_docrel.copies`: the reference or the array.
    pub(super) record: &'static str,
    pub(super) source: &'a Document,
    pub(super) fields: &'static [(&'static str, &'static str)],
}

/// `_docrel.v` of a source.
fn version(d: &Document) -> Option<&Bson> {
    d.get_document("_docrel").ok()?.get("v")
}

/// A source id as a record's key: an object id's hex, a number's digits.
fn id_key(id: &Bson) -> String {
    match id {
        Bson::ObjectId(o) => o.to_hex(),
        Bson::Int32(i) => i.to_string(),
        Bson::Int64(i) => i.to_string(),
        Bson::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `_docrel.copies.<field>.<source id>` of a holder.
fn record<'a>(holder: &'a Document, field: &str, source_id: &Bson) -> Option<&'a Bson> {
    let copies = holder.get_document("_docrel").ok()?.get_document("copies").ok()?;
    copies.get_document(field).ok()?.get(id_key(source_id))
}

fn number(b: Option<&Bson>) -> Option<i64> {
    super::check::int(b)
}

pub(super) fn check_site(site: &Site<'_>, out: &mut Vec<Violation>) {
    let differing: Vec<String> = site
        .fields
        .iter()
        .filter(|(copy, source)| site.values.get(*copy) != site.source.get(*source))
        .map(|(copy, source)| {
            format!(
                "{copy} {} but the source's {source} is {}",
                show(site.values.get(*copy)),
                show(site.source.get(*source))
            )
        })
        .collect();
    let source_id = site.source.get("_id").cloned().unwrap_or(Bson::Null);
    let rec = record(site.holder, site.record, &source_id);
    let ver = version(site.source);
    let versions = format!("record {} source version {}", show(rec), show(ver));
    if !differing.is_empty() {
        out.push(v(Inv::I1, format!("{}: {} ({versions})", site.what, differing.join(", "))));
    }
    match (number(rec), number(ver)) {
        (Some(r), Some(sv)) if r > sv => out.push(v(
            Inv::I1,
            format!("{}: the version record is ahead of its source ({versions}): later fan-outs skip it", site.what),
        )),
        (Some(r), Some(sv)) if r == sv && !differing.is_empty() => out.push(v(
            Inv::I1,
            format!("{}: the record says the copies are of the current version, they are not ({versions})", site.what),
        )),
        (None, _) if rec.is_some() => {
            out.push(v(Inv::I1, format!("{}: the version record is not a number ({versions})", site.what)))
        }
        (None, _) => out.push(v(Inv::Unrecorded, format!("{}: copies with no version record ({versions})", site.what))),
        _ => {}
    }
}

/// I1 over the five kinds of copy of the schemas (see `schema.rs`).
pub fn copies(s: &Snapshot) -> Vec<Violation> {
    let mut out = Vec::new();
    let parts = by_id(&s.parts);
    let products = by_id(&s.products);
    let people = by_id(&s.people);
    for product in &s.products {
        for (k, e) in array(product, "parts").into_iter().enumerate() {
            let Some(e) = e.as_document() else {
                out.push(v(Inv::I1, format!("product {} parts[{k}] is not a document: {e}", show(product.get("_id")))));
                continue;
            };
            let Some(part) = e.get("id").and_then(|id| parts.get(&key(id))) else { continue };
            let what = format!("product {} parts[{k}] (part {})", show(product.get("_id")), show(e.get("id")));
            let site = Site { what, values: e, holder: product, record: "parts", source: part, fields: PART_COPIES };
            check_site(&site, &mut out);
        }
    }
    top_level(("part", &s.parts), ("product", "product", &products), PRODUCT_COPIES, &mut out);
    top_level(("task", &s.tasks), ("owner", "owner", &people), OWNER_COPIES, &mut out);
    for task in &s.tasks {
        notes(task, &people, &mut out);
    }
    top_level(("review", &s.reviews), ("item", "product_id", &by_id(&s.items)), ITEM_COPIES, &mut out);
    top_level(("review", &s.reviews), ("person", "reviewer", &people), REVIEWER_COPIES, &mut out);
    out
}

/// I1 over the copies each of `holders` (of kind `holder`) keeps at its top
/// level of the `source` document its single reference `field` names.
fn top_level(
    (holder, holders): (&str, &[Document]),
    (source, field, sources): (&str, &'static str, &HashMap<String, &Document>),
    fields: &'static [(&'static str, &'static str)],
    out: &mut Vec<Violation>,
) {
    for d in holders {
        let Some(src) = is_set(d.get(field)).and_then(|id| sources.get(&key(id))) else { continue };
        let what = format!("{holder} {} ({source} {})", show(d.get("_id")), show(d.get(field)));
        check_site(&Site { what, values: d, holder: d, record: field, source: src, fields }, out);
    }
}

/// The copies inside the notes of `task`: one site per note whose writer
/// (`who`) exists, its record kept per array (`_docrel.copies.notes`).
fn notes(task: &Document, people: &HashMap<String, &Document>, out: &mut Vec<Violation>) {
    for (k, e) in array(task, "notes").into_iter().enumerate() {
        let Some(e) = e.as_document() else {
            out.push(v(Inv::I1, format!("task {} notes[{k}] is not a document: {e}", show(task.get("_id")))));
            continue;
        };
        let Some(person) = e.get("who").and_then(|id| people.get(&key(id))) else { continue };
        let what = format!("task {} notes[{k}] (by person {})", show(task.get("_id")), show(e.get("who")));
        let site = Site { what, values: e, holder: task, record: "notes", source: person, fields: NOTE_COPIES };
        check_site(&site, out);
    }
}
