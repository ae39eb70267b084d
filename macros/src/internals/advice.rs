//! The rules of thumb of the reference texts, as advice on a checked model:
//! what each warning says, where it points, and whether the user has
//! acknowledged it in the attribute.

use super::ast::{Container, Copy, Field, Role};
use super::attr::{EmbedAttr, ReferenceAttr};
use super::ty::{array_element, is_id_type, is_plain_value, last_ident, option_inner, path_name};
use proc_macro2::Span;
use syn::{Ident, Path, Type};

/// Where docrel draws the line unless `warn_above` says otherwise. Twins of
/// the runtime's `EMBED_WARN_ABOVE`, `REFERENCE_WARN_ABOVE` and
/// `TWO_WAY_WARN_FROM` (this crate cannot depend on the runtime):
/// `tests/thresholds.rs` checks that the schema a derive writes carries
/// the runtime's numbers.
pub const EMBED_WARN_ABOVE: u32 = 200;
pub const REFERENCE_WARN_ABOVE: u32 = 5000;
pub const TWO_WAY_WARN_FROM: u32 = 1000;

/// Rule 3's threshold on an array field: its `warn_above`, or the default
/// of its kind; `None` on anything but an array of embeds or references.
/// The warnings compare the bound with it, and the schema carries it for
/// the doctor, which compares the measured lengths.
pub fn threshold(f: &Field) -> Option<u32> {
    match &f.role {
        Role::Embed { attr, .. } if array_element(f.ty).is_some() => Some(embed_threshold(attr)),
        Role::Reference { attr, .. } if attr.many.is_present() => Some(reference_threshold(attr)),
        _ => None,
    }
}

fn embed_threshold(attr: &EmbedAttr) -> u32 {
    attr.warn_above.map_or(EMBED_WARN_ABOVE, |b| b.0)
}

fn reference_threshold(attr: &ReferenceAttr) -> u32 {
    attr.warn_above.map_or(REFERENCE_WARN_ABOVE, |b| b.0)
}

/// One piece of advice on one field.
pub struct Advice {
    /// A short name, which is also the name rustc prints (`docrel_rule_3_unbounded_embed`).
    pub name: &'static str,
    pub field: String,
    pub span: Span,
    pub note: String,
    pub acknowledged: bool,
    /// When the advice holds only if some type has a property the macro
    /// cannot see, the generated code probes for it.
    pub when: When,
}

pub enum When {
    Always,
    /// The type is a `Document` of its own.
    IsDocument(Type),
    /// `to::fields().inverse` is an array (the relationship is N:M).
    InverseIsArray {
        to: Path,
        inverse: Ident,
    },
    /// `src` marks `field` `write_heavy`.
    WriteHeavy {
        src: Path,
        field: Ident,
    },
}

pub fn advise(c: &Container) -> Vec<Advice> {
    let mut out = Vec::new();
    for f in &c.fields {
        match &f.role {
            Role::Embed { attr, span } => embed(f, attr, *span, &mut out),
            Role::Reference { attr, span } if attr.many.is_present() => references(f, attr, *span, &mut out),
            _ => {}
        }
        if let Some(copy) = &f.copy {
            write_heavy_copy(f, copy, &mut out);
        }
    }
    out
}

/// Rules 2 and 3 on an embed.
fn embed(f: &Field, attr: &EmbedAttr, span: Span, out: &mut Vec<Advice>) {
    let field = f.ident.to_string();
    let many = array_element(f.ty).is_some();
    let threshold = embed_threshold(attr);
    match &attr.max {
        None if many => out.push(Advice {
            name: "docrel_rule_3_unbounded_embed",
            field: field.clone(),
            span,
            note: format!(
                "rule 3, arrays should not grow without bound: `#[embed]` on `{field}` has no `max`. Add \
                 `max = N` (a couple of hundred at most), or keep the elements in their own collection \
                 with `#[reference(many, ..)]` or `#[parent_ref(..)]`; acknowledge with \
                 `#[embed(allow_unbounded)]`"
            ),
            acknowledged: attr.allow_unbounded.is_present(),
            when: When::Always,
        }),
        Some(max) if max.0 > threshold => out.push(Advice {
            name: "docrel_rule_3_large_embed",
            field: field.clone(),
            span: max.span(),
            note: format!(
                "rule 3, more than a couple of hundred elements should not be embedded: `max = {}` on \
                 `{field}` is above {threshold}. Keep the elements in their own collection \
                 (`#[parent_ref(..)]` on them), or acknowledge with `allow_large` (or raise `warn_above`)",
                max.0
            ),
            acknowledged: attr.allow_large.is_present(),
            when: When::Always,
        }),
        _ => {}
    }
    let inner = array_element(f.ty).map(|(elem, _)| elem).or_else(|| option_inner(f.ty)).unwrap_or(f.ty);
    if is_plain_value(inner) {
        return;
    }
    out.push(Advice {
        name: "docrel_rule_2_embedded_document",
        field: field.clone(),
        span,
        note: format!(
            "rule 2, needing to access an object on its own is a compelling reason not to embed it: \
             `{field}` embeds a type that is a document of its own collection. Reference it with \
             `#[reference(..)]` instead, or acknowledge with `allow_document`"
        ),
        acknowledged: attr.allow_document.is_present(),
        when: When::IsDocument(inner.clone()),
    });
}

/// Rule 3 and relationship balance on a reference array.
fn references(f: &Field, attr: &ReferenceAttr, span: Span, out: &mut Vec<Advice>) {
    let field = f.ident.to_string();
    let threshold = reference_threshold(attr);
    match &attr.max {
        None => out.push(Advice {
            name: "docrel_rule_3_unbounded_references",
            field: field.clone(),
            span,
            note: format!(
                "rule 3, arrays should not grow without bound: `#[reference(many, ..)]` on `{field}` has \
                 no `max`. Add `max = N` (a few thousand at most), or reference the parent from the other \
                 side with `#[parent_ref(..)]` (one-to-squillions); acknowledge with `allow_unbounded`"
            ),
            acknowledged: attr.allow_unbounded.is_present(),
            when: When::Always,
        }),
        Some(max) if max.0 > threshold => out.push(Advice {
            name: "docrel_rule_3_large_references",
            field: field.clone(),
            span: max.span(),
            note: format!(
                "rule 3, more than a few thousand ids should not be kept in an array: `max = {}` on \
                 `{field}` is above {threshold}. Reference the parent from the other side with \
                 `#[parent_ref(..)]`, or acknowledge with `allow_large` (or raise `warn_above`)",
                max.0
            ),
            acknowledged: attr.allow_large.is_present(),
            when: When::Always,
        }),
        _ => {}
    }
    if let (Some(inverse), Some(to)) = (&attr.inverse, &attr.to) {
        let large = attr.max.as_ref().is_none_or(|m| m.0 >= TWO_WAY_WARN_FROM);
        if large {
            let bound = attr.max.as_ref().map_or("an unbounded number of".to_owned(), |m| format!("up to {}", m.0));
            out.push(Advice {
                name: "docrel_relationship_balance",
                field: field.clone(),
                span,
                note: format!(
                    "establish relationship balance: `{field}` keeps an N:M relationship two-way while \
                     this side holds {bound} ids. Keep the ids on the small side only (drop `inverse` \
                     here and there) and find this side through the multikey index with `referrers`, \
                     or acknowledge with `allow_two_way`"
                ),
                acknowledged: attr.allow_two_way.is_present(),
                when: When::InverseIsArray { to: to.clone(), inverse: inverse.clone() },
            });
        }
    }
}

/// Rule 5 on a copy.
fn write_heavy_copy(f: &Field, copy: &Copy, out: &mut Vec<Advice>) {
    let field = f.ident.to_string();
    if let Some((src, src_field)) = copy.source() {
        let src_name = path_name(&src);
        out.push(Advice {
            name: "docrel_rule_5_write_heavy_copy",
            field: field.clone(),
            span: copy.span,
            note: format!(
                "rule 5, consider the write/read ratio when denormalizing: `{field}` copies \
                 `{src_name}::{src_field}`, which its source marks `write_heavy`, so every write of it \
                 rewrites all the copies. Read it through a loader instead, or acknowledge with \
                 `allow_write_heavy`"
            ),
            acknowledged: copy.attr.allow_write_heavy.is_present(),
            when: When::WriteHeavy { src, field: src_field.clone() },
        });
    }
}

/// The largest a field can be, in bytes, from its bound and element size:
/// the declared `max_bytes`, or the exact size of an id element.
pub fn worst_case_bytes(f: &Field) -> Option<(u64, Span)> {
    let (max, max_bytes, span) = match &f.role {
        Role::Embed { attr, span } => (attr.max.as_ref()?.0, attr.max_bytes.as_ref().map(|b| b.0), *span),
        Role::Reference { attr, span } if attr.many.is_present() => {
            (attr.max.as_ref()?.0, attr.max_bytes.as_ref().map(|b| b.0), *span)
        }
        _ => return None,
    };
    let element = match max_bytes {
        Some(b) => u64::from(b),
        None => {
            let (elem, _) = array_element(f.ty)?;
            if !is_id_type(elem) {
                return None;
            }
            // type byte + the index as a key ("1234\0") + the value.
            let value = match last_ident(elem)?.as_str() {
                "ObjectId" => 12,
                "i32" => 4,
                "i64" => 8,
                _ => return None,
            };
            1 + (max.max(1).ilog10() as u64 + 2) + value
        }
    };
    Some((u64::from(max) * element, span))
}

/// `max_bytes` makes sense only with a bound.
pub fn max_bytes_span(f: &Field) -> Option<(Span, bool)> {
    match &f.role {
        Role::Embed { attr, .. } => attr.max_bytes.as_ref().map(|b| (b.span(), attr.max.is_some())),
        Role::Reference { attr, .. } => attr.max_bytes.as_ref().map(|b| (b.span(), attr.max.is_some())),
        _ => None,
    }
}
