//! The compile-time checks of a subset: its summary (a `View` of the
//! child) holds every field the subset is ordered by and its `key`, since
//! a push sorts and guards the summaries by them in the parent's array.

use super::{stored_name, Checked};
use crate::internals::model::{Model, RelationKind, StoredName, Subset};
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

/// One check per sort key and `key` of each subset of `m`, reported at
/// the name as written in the attribute: the child has a field of that
/// name (stored or Rust), and the summary holds it.
pub fn checks(m: &Model, checked: &mut Checked) -> TokenStream {
    let mut out = TokenStream::new();
    for rel in &m.relations {
        let RelationKind::Embed { subset: Some(subset), .. } = &rel.kind else { continue };
        let view = &subset.elem_name;
        let (field, child) = (rel.ident.to_string(), &subset.child.name);
        let names = "write its stored or Rust field names, comma-separated, `-` for descending";
        for key in &subset.sort {
            let why = "a push orders the summaries by it";
            out.extend(check(subset, &key.name, checked, |name| {
                (
                    format!("the subset `{field}` is sorted by `{name}`, which is not a field of `{child}`: {names}"),
                    format!("the subset `{field}` is sorted by `{name}`, which its summary `{view}` does not hold: add `{name}` to `{view}` ({why})"),
                )
            }));
        }
        if subset.key.is_none() {
            out.extend(identified(subset, &field, checked));
        }
        if let Some(key) = &subset.key {
            let why = "a push and a move find a child's summary by it";
            out.extend(check(subset, key, checked, |name| {
                (
                    format!("the subset `{field}` identifies a summary by `key = {name}`, which is not a field of `{child}`: name one of its fields"),
                    format!("the subset `{field}` identifies a summary by `key = {name}`, which its summary `{view}` does not hold: add `{name}` to `{view}` ({why})"),
                )
            }));
        }
    }
    out
}

/// A subset with no `key` identifies a summary by the child's `_id`, so
/// its summary must hold `_id`: without an identity a child moved with no
/// image of its former parent in view (a change event with no pre-image)
/// would stay in that parent's subset, and a push could not be guarded.
fn identified(subset: &Subset, field: &str, checked: &mut Checked) -> TokenStream {
    let span = syn::spanned::Spanned::span(&subset.child.path);
    let (view, child) = (&subset.elem_name, &subset.child.name);
    let message = format!(
        "the subset `{field}` has no `key`, and its summary `{view}` does not hold `_id`: a moved or repeated \
         child's summary could not be found. Add the child's `_id` to `{view}`, or `key = ..` naming a field of \
         `{child}` that `{view}` holds"
    );
    let label = format!("no `key`, and `{view}` does not hold `_id`");
    let view = checked.view_of(subset.elem, &subset.child.path);
    let held = quote_spanned!(span=> __docrel::view_holds(<#view as __docrel::View>::PROJECTION, "_id"));
    super::holds(span, &message, &label, held)
}

/// `name` names a field of the child, and is among the fields the summary
/// reads (`PROJECTION`; `None` reads them all). `messages` gives the error
/// of each.
fn check(
    subset: &Subset,
    name: &StoredName,
    checked: &mut Checked,
    messages: impl FnOnce(&str) -> (String, String),
) -> TokenStream {
    let StoredName::OfDocument { doc, name: written, span } = name else { return TokenStream::new() };
    let (unknown, missing) = messages(written);
    let child = checked.doc(doc);
    let view = checked.view_of(subset.elem, &subset.child.path);
    let stored = stored_name(name, checked);
    let links = quote_spanned!(*span=> <#child>::__DOCREL_LINKS);
    let named = quote_spanned!(*span=> __docrel::names_field(#links, #written));
    let label = format!("not a field of `{}`", subset.child.name);
    let known = super::holds(*span, &unknown, &label, named.clone());
    // An unknown name is the error above, not this one too.
    let held = quote_spanned!(*span=> !#named || __docrel::view_holds(<#view as __docrel::View>::PROJECTION, #stored));
    let held = super::holds(*span, &missing, &format!("not held by `{}`", subset.elem_name), held);
    quote!(#known #held)
}
