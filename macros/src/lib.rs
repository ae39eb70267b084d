//! Derive macros of docrel. Use them through the `docrel` crate:
//! `#[derive(docrel::Document)]` and `#[derive(docrel::View)]`.
//!
//! Each derive follows parse -> validate -> generate: `internals` reads the
//! attributes (`ast`) and checks the rules into one model (`model`),
//! collecting every error in one context (`ctxt`); `expand` only generates,
//! from the model alone.
//! Each `derive_x` calls `derive_x_inner`, which the unit tests call too.

mod expand;
mod internals;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_moves;

use internals::ast::Container;
use internals::check;
use internals::ctxt::Ctxt;
use proc_macro::TokenStream;
use syn::{parse_macro_input, DeriveInput};

/// Derives `docrel::Document` for a struct stored in a collection of its
/// own: its repository (`T::repo(&db)`), field handles (`T::fields()`),
/// relationship handles (`T::rels()`) and schema.
///
/// The attributes it reads: `#[document(collection = "..", shard_key(..),
/// crate = "..")]` on the struct; `#[document(id, index, unique,
/// write_heavy)]` on fields; one of `#[embed(..)]`, `#[reference(..)]`,
/// `#[parent_ref(..)]` or `#[bucket(..)]` per field; `#[denormalize(..)]` on
/// a copy. The module `docrel::attributes` lists every key with its default
/// and an example, and the rules-of-thumb warnings: they are `deprecated`
/// warnings, acknowledged with the attribute's `allow_..` key, not with
/// `#[allow(..)]`.
#[proc_macro_derive(Document, attributes(document, embed, reference, parent_ref, denormalize, bucket))]
pub fn derive_document(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    derive_document_inner(&input).into()
}

fn derive_document_inner(input: &DeriveInput) -> proc_macro2::TokenStream {
    let cx = Ctxt::new();
    let container = Container::from_ast(input, "Document", &cx);
    let model = container.as_ref().and_then(|c| check::document(c, &cx));
    match cx.check() {
        Ok(()) => model.map(|m| expand::document::expand(&m)).unwrap_or_default(),
        Err(e) => {
            // The items other code refers to, for every shape, so the one
            // mistake is the one error.
            let stub = match &container {
                Some(c) => Some(check::stub(c)),
                None => check::stub_of_shape(input, internals::symbol::DOCUMENT),
            };
            let fallback = stub.map(|s| expand::fallback::document(&s)).unwrap_or_default();
            let errors = e.write_errors();
            quote::quote!(#errors #fallback)
        }
    }
}

/// Derives `docrel::View`, a typed partial view of a document read with a
/// projection: `#[view(of = Part)]`, and `crate = ".."` for a renamed
/// dependency. See `docrel::attributes`.
#[proc_macro_derive(View, attributes(view))]
pub fn derive_view(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    derive_view_inner(&input).into()
}

fn derive_view_inner(input: &DeriveInput) -> proc_macro2::TokenStream {
    let cx = Ctxt::new();
    let container = Container::from_ast(input, "View", &cx);
    let (of, krate) = internals::ast::view_of(input, &cx);
    let model = container.as_ref().zip(of.clone()).map(|(c, of)| check::view(c, of, krate.clone()));
    match cx.check() {
        Ok(()) => model.map(|m| expand::view::expand(&m)).unwrap_or_default(),
        Err(e) => {
            let errors = e.write_errors();
            let fallback = match (&of, input.generics.params.is_empty()) {
                (Some(of), true) => expand::fallback::view(&input.ident, of, krate.as_ref()),
                _ => proc_macro2::TokenStream::new(),
            };
            quote::quote!(#errors #fallback)
        }
    }
}

/// Derives `docrel::Embedded` for the element struct of a reference array
/// (`{id, name}`), whose fields may be copies: `#[denormalize(from =
/// Part::name)]`; or for the element of an embedded array that holds
/// references of its own: `#[reference(to = User)]` on a field, with copies
/// through it (`#[denormalize(from = User::name, via = author)]`), loaded
/// with `Post::rels().comments.each(Comment::refs().author)`.
/// `#[embedded(crate = "..")]` for a renamed dependency. See `docrel::attributes`.
#[proc_macro_derive(Embedded, attributes(denormalize, embedded, reference))]
pub fn derive_embedded(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    derive_embedded_inner(&input).into()
}

fn derive_embedded_inner(input: &DeriveInput) -> proc_macro2::TokenStream {
    let cx = Ctxt::new();
    let container = Container::from_ast(input, "Embedded", &cx);
    let model = container.as_ref().map(|c| check::embedded(c, &cx));
    match cx.check() {
        Ok(()) => model.map(|m| expand::embedded::expand(&m)).unwrap_or_default(),
        Err(e) => {
            let errors = e.write_errors();
            let fallback = match (&container, input.generics.params.is_empty()) {
                (Some(c), _) => expand::fallback::embedded(&check::stub(c)),
                (None, true) => check::stub_of_shape(input, internals::symbol::EMBEDDED)
                    .map(|s| expand::fallback::embedded(&s))
                    .unwrap_or_default(),
                (None, false) => proc_macro2::TokenStream::new(),
            };
            quote::quote!(#errors #fallback)
        }
    }
}
