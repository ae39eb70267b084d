//! The fields of a bucket document every kind of bucket reads: its
//! parent, its named fields, and the window lengths it may have.

use super::ast::{Container, Role};
use super::ctxt::Ctxt;
use proc_macro2::Span;
use syn::Ident;

/// The window lengths a time bucket may have, in milliseconds.
pub fn window_ms(name: &str) -> Option<i64> {
    match name {
        "minute" => Some(60_000),
        "hour" => Some(3_600_000),
        "day" => Some(86_400_000),
        _ => None,
    }
}

/// The bucket document's parent: its type and the stored name of its
/// `#[parent_ref]` field; an error at `span` when it has none.
pub fn bucket_parent(c: &Container, span: Span, cx: &Ctxt) -> Option<(syn::Path, String)> {
    let parent = c.fields.iter().find(|g| matches!(g.role, Role::ParentRef { .. }));
    let Some(parent) = parent else {
        cx.error_at(
            span,
            format!(
                "a bucket belongs to a parent: `{}` needs a field with `#[parent_ref(to = ..)]` (e.g. `blog_entry_id`)",
                c.ident
            ),
        );
        return None;
    };
    let Role::ParentRef { attr, .. } = &parent.role else { return None };
    Some((attr.to.clone()?, parent.stored.clone()?))
}

/// The stored name of a bucket document's field, `named` or `default`; an
/// error when a `used` one is missing (at the key, or at `span`).
pub fn bucket_field(c: &Container, named: Option<&Ident>, default: &str, used: bool, span: Span, cx: &Ctxt) -> String {
    let name = named.map(ToString::to_string).unwrap_or_else(|| default.to_owned());
    let field = c.fields.iter().find(|g| g.ident == name.as_str());
    if used && field.is_none() {
        cx.error_at(
            named.map(|n| n.span()).unwrap_or(span),
            format!(
                "the bucket document `{}` needs a `{name}` field (or name yours with `{default} = my_field`)",
                c.ident
            ),
        );
    }
    field.map(|g| g.stored.clone().unwrap_or_default()).unwrap_or(name)
}
