//! Derive macros of docrel. Use them through the `docrel` crate:
//! `#[derive(docrel::Document)]` and `#[derive(docrel::View)]`.
//!
//! Each derive follows parse -> validate -> generate: `internals` reads the
//! attributes into a model and checks the rules, collecting every error;
//! `expand` only generates, from a model that passed.

mod expand;
mod internals;
#[cfg(test)]
mod tests;

use darling::FromMeta;
use proc_macro::TokenStream;
use syn::{parse_macro_input, DeriveInput};

/// Derives `docrel::Document`: see the `docrel` crate for the attributes.
#[proc_macro_derive(Document, attributes(document, embed, reference, parent_ref, denormalize, bucket))]
pub fn derive_document(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    derive_document_inner(&input).into()
}

fn derive_document_inner(input: &DeriveInput) -> proc_macro2::TokenStream {
    let mut errors = darling::Error::accumulator();
    let container = internals::ast::Container::from_ast(input, "Document", &mut errors);
    let generated = container
        .as_ref()
        .and_then(|c| internals::check::document(c, &mut errors).map(|checked| expand::document::expand(c, &checked)));
    match errors.finish() {
        Ok(()) => generated.unwrap_or_default(),
        Err(e) => {
            let fallback = container.as_ref().map(expand::fallback::document).unwrap_or_default();
            let errors = e.write_errors();
            quote::quote!(#errors #fallback)
        }
    }
}

/// Derives `docrel::View`, a typed partial view of a document: `#[view(of = Part)]`.
#[proc_macro_derive(View, attributes(view))]
pub fn derive_view(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    derive_view_inner(&input).into()
}

fn derive_view_inner(input: &DeriveInput) -> proc_macro2::TokenStream {
    let mut errors = darling::Error::accumulator();
    let container = internals::ast::Container::from_ast(input, "View", &mut errors);
    let mut of = None;
    for a in input.attrs.iter().filter(|a| a.path().is_ident(internals::symbol::VIEW)) {
        of = errors.handle(internals::attr::ViewAttr::from_meta(&a.meta));
    }
    if of.is_none() && !input.attrs.iter().any(|a| a.path().is_ident(internals::symbol::VIEW)) {
        errors.push(
            darling::Error::custom(format!(
                "missing the document this is a view of: add `#[view(of = Part)]` to `{}`",
                input.ident
            ))
            .with_span(&input.ident),
        );
    }
    let generated = match (&container, &of) {
        (Some(c), Some(of)) => Some(expand::view::expand(c, of)),
        _ => None,
    };
    match errors.finish() {
        Ok(()) => generated.unwrap_or_default(),
        Err(e) => e.write_errors(),
    }
}

/// Derives `docrel::Embedded` for the element struct of a reference array
/// (`{id, name}`), whose fields may be copies: `#[denormalize(from = Part::name)]`.
#[proc_macro_derive(Embedded, attributes(denormalize))]
pub fn derive_embedded(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    derive_embedded_inner(&input).into()
}

fn derive_embedded_inner(input: &DeriveInput) -> proc_macro2::TokenStream {
    let mut errors = darling::Error::accumulator();
    let generated = internals::ast::Container::from_ast(input, "Embedded", &mut errors).map(|c| {
        internals::check::check_copies(&c, &mut errors, false);
        expand::copies::embedded(&c)
    });
    match errors.finish() {
        Ok(()) => generated.unwrap_or_default(),
        Err(e) => e.write_errors(),
    }
}
