//! The compile-time checks of a subset: its summary (a `View` of the
//! child) holds every field the subset is ordered by and its `key`, since
//! a push sorts and guards the summaries by them in the parent's array.

use super::{stored_name, Checked};
use crate::internals::model::{Model, RelationKind, StoredName, Subset};
use proc_macro2::TokenStream;
use quote::{quote_spanned, ToTokens};

/// One check per sort key and `key` of each subset of `m`, reported at
/// the name as written in the attribute.
pub fn checks(m: &Model, checked: &mut Checked) -> TokenStream {
    let mut out = TokenStream::new();
    for rel in &m.relations {
        let RelationKind::Embed { subset: Some(subset), .. } = &rel.kind else { continue };
        let view = subset.elem.to_token_stream().to_string().replace(' ', "");
        let field = rel.ident.to_string();
        for key in &subset.sort {
            let why = "a push orders the summaries by it";
            out.extend(check(subset, &key.name, checked, |name| {
                format!("the subset `{field}` is sorted by `{name}`, which its summary `{view}` does not hold: add `{name}` to `{view}` ({why})")
            }));
        }
        if let Some(key) = &subset.key {
            let why = "a push and a move find a child's summary by it";
            out.extend(check(subset, key, checked, |name| {
                format!("the subset `{field}` identifies a summary by `key = {name}`, which its summary `{view}` does not hold: add `{name}` to `{view}` ({why})")
            }));
        }
    }
    out
}

/// `name` is among the fields the summary reads (`PROJECTION`; `None`
/// reads them all).
fn check(
    subset: &Subset,
    name: &StoredName,
    checked: &mut Checked,
    message: impl FnOnce(String) -> String,
) -> TokenStream {
    let StoredName::OfDocument { field, .. } = name else { return TokenStream::new() };
    let message = message(field.to_string().trim_start_matches("r#").to_owned());
    let view = checked.view_of(subset.elem, &subset.child.path);
    let stored = stored_name(name, checked);
    quote_spanned! {field.span()=>
        const _: () = ::core::assert!(
            __docrel::view_holds(<#view as __docrel::View>::PROJECTION, #stored),
            #message
        );
    }
}
