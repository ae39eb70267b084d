//! The rules of a counter bucket, `#[bucket(counter, window = "hour")]`
//! on the count field of a bucket document: one document per parent and
//! window, counting (and maybe summing) events that are not stored.

use super::ast::{Container, Field};
use super::attr::BucketAttr;
use super::bucket::{bucket_field, bucket_parent, window_ms};
use super::ctxt::Ctxt;
use super::model::{Bucket, Counter, RelationKind};
use super::ty::last_ident;
use proc_macro2::Span;
use syn::spanned::Spanned;

/// Why a key of `#[bucket(..)]` has no meaning on a counter.
const NOT_FOR_COUNTERS: [(&str, &str); 5] = [
    ("size", "a counter holds no elements, so it has no size; one document per window counts them all"),
    (
        "by",
        "a counter stores no elements to read a time from: `record(&db, &parent, at, amount)` takes each event's time",
    ),
    ("page", "a counter has one document per window, never a second page of it"),
    ("count", "the counter's count is the field it is declared on"),
    ("max_bytes", "a counter stores no elements to measure"),
];

/// The counter bucket declared on `f`; `None` after an error.
pub fn counter<'a>(
    c: &'a Container<'a>,
    f: &'a Field<'a>,
    attr: &'a BucketAttr,
    span: Span,
    cx: &Ctxt,
) -> Option<RelationKind<'a>> {
    let misplaced = [
        attr.size.as_ref().map(|s| s.span()),
        attr.by.as_ref().map(|b| b.span()),
        attr.page.as_ref().map(|p| p.span()),
        attr.count.as_ref().map(|c| c.span()),
        attr.max_bytes.as_ref().map(|b| b.span()),
    ];
    let mut ok = true;
    for (at, (key, why)) in misplaced.iter().zip(NOT_FOR_COUNTERS) {
        if let Some(at) = at {
            cx.error_at(*at, format!("`{key}` does not apply to a counter bucket: {why}; drop `{key}`"));
            ok = false;
        }
    }
    let window = match &attr.window {
        None => {
            cx.error_at(
                attr.counter.span(),
                format!(
                    "a counter counts per time window: write `#[bucket(counter, window = \"hour\")]` on `{}` \
                     (`\"minute\"`, `\"hour\"` or `\"day\"`)",
                    f.ident
                ),
            );
            None
        }
        Some(w) => {
            let ms = window_ms(&w.value());
            if ms.is_none() {
                cx.error_at(
                    w.span(),
                    format!("unknown window `{}`: write `window = \"minute\"`, `\"hour\"` or `\"day\"`", w.value()),
                );
            }
            ms
        }
    };
    if !is_one_of(f.ty, &["i64", "u64"]) {
        cx.error_at(
            f.ty.span(),
            format!("a counter's field counts the events of a window: make `{}` an `i64` or a `u64`", f.ident),
        );
        ok = false;
    }
    let parent = bucket_parent(c, span, cx);
    let start = bucket_field(c, attr.start.as_ref(), "start", true, span, cx);
    let sum = attr.sum.as_ref().and_then(|named| sum_field(c, named, cx));
    if attr.sum.is_some() && sum.is_none() {
        ok = false;
    }
    let (parent, parent_field) = parent?;
    (ok && c.fields.iter().any(|g| *g.ident == start_ident(attr))).then_some(())?;
    Some(RelationKind::Bucket(Bucket {
        parent,
        elem: f.ty,
        parent_field,
        count: f.stored.clone()?,
        page: String::new(),
        start,
        size: None,
        window_ms: Some(window?),
        by: None,
        max_bytes: None,
        counter: Some(Counter { sum }),
    }))
}

/// The Rust name of the window start's field.
fn start_ident(attr: &BucketAttr) -> String {
    attr.start.as_ref().map_or_else(|| "start".to_owned(), ToString::to_string)
}

/// The stored name and type of the field `sum = ..` names, a number.
fn sum_field<'a>(c: &'a Container<'a>, named: &syn::Ident, cx: &Ctxt) -> Option<(String, &'a syn::Type)> {
    let Some(field) = c.fields.iter().find(|g| g.ident == named) else {
        cx.error_at(
            named.span(),
            format!("`sum = {named}` names no field of `{}`: add a number field `{named}` (an `f64`, say)", c.ident),
        );
        return None;
    };
    if !is_one_of(field.ty, &["i32", "i64", "u32", "u64", "f32", "f64"]) {
        cx.error_at(
            field.ty.span(),
            format!("`{named}` sums each event's amount with `$inc`: make it a number (`f64`, `i64`, ..)"),
        );
        return None;
    }
    Some((field.stored.clone()?, field.ty))
}

fn is_one_of(ty: &syn::Type, names: &[&str]) -> bool {
    last_ident(ty).is_some_and(|n| names.contains(&n.as_str()))
}
