//! Generate: the code for checked models. Nothing here reports user errors,
//! and nothing reads the attributes: every fact comes from the model.

pub mod copies;
pub mod document;
pub mod fallback;
pub mod relations;
pub mod view;
pub mod warn;

use crate::internals::model::StoredName;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::Ident;

/// `Some(v)` or `None`, by absolute path.
fn option(value: Option<impl ToTokens>) -> TokenStream {
    match value {
        Some(v) => quote!(::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    }
}

/// A stored name as a `&'static str` constant expression. Another type's
/// is read from its derive, spanned at the name as written, so a name that
/// is not a field of that type is reported there.
fn stored_name(name: &StoredName) -> TokenStream {
    match name {
        StoredName::Here(name) => quote!(#name),
        StoredName::OfDocument { doc, field } => quote_spanned!(field.span()=> #doc::fields().#field.path()),
        StoredName::OfElement { elem, field } => {
            let constant = element_stored_const(field);
            quote_spanned!(field.span()=> <#elem>::#constant)
        }
    }
}

/// The hidden constant of `#[derive(Embedded)]` holding a field's stored name
/// (`__docrel_stored_part_id`).
fn element_stored_const(field: &Ident) -> Ident {
    let name = field.to_string();
    format_ident!("__docrel_stored_{}", name.trim_start_matches("r#"), span = field.span())
}
