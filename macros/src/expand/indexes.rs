//! The declared indexes as `IndexSpec` constants of the schema. Options
//! left at their default are completed by `..IndexSpec::DEFAULT`, so a
//! plain index is a few tokens. A partial filter written as an expression
//! becomes a function, spanned at the expression: one that is not a
//! `bson::Document` is a type error there.

use super::Opt;
use crate::internals::index_values::{CollationDecl, PartialDecl};
use crate::internals::model::ModelIndex;
use proc_macro2::{Literal, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

/// One `__docrel::IndexSpec { .. }` per index.
pub fn specs(indexes: &[ModelIndex]) -> Vec<TokenStream> {
    indexes.iter().map(spec).collect()
}

fn spec(ix: &ModelIndex) -> TokenStream {
    let mut fields = Vec::new();
    let (names, dirs): (Vec<&String>, Vec<Literal>) =
        ix.keys.iter().map(|(k, d)| (k, Literal::i32_unsuffixed(*d))).unzip();
    fields.push(quote!(keys: &[#((#names, #dirs)),*],));
    if ix.unique {
        fields.push(quote!(unique: true,));
    }
    if !ix.text.is_empty() {
        let (names, weights): (Vec<&String>, Vec<Literal>) =
            ix.text.iter().map(|(k, w)| (k, Literal::u32_unsuffixed(*w))).unzip();
        fields.push(quote!(text: &[#((#names, #weights)),*],));
    }
    if let Some(name) = &ix.name {
        fields.push(quote!(name: __docrel::Some(#name),));
    }
    if ix.sparse {
        fields.push(quote!(sparse: true,));
    }
    if let Some(seconds) = ix.expire_after {
        let seconds = Literal::u64_unsuffixed(seconds);
        fields.push(quote!(expire_after: __docrel::Some(::core::time::Duration::from_secs(#seconds)),));
    }
    if let Some(partial) = &ix.partial {
        let partial = match partial {
            PartialDecl::Json(lit) => quote!(__docrel::PartialFilter::Json(#lit)),
            PartialDecl::Expr(expr) => {
                let build = quote_spanned! {expr.span()=>
                    fn __docrel_partial() -> __docrel::bson::Document { #expr }
                };
                quote!(__docrel::PartialFilter::Build({ #build __docrel_partial }))
            }
        };
        fields.push(quote!(partial: __docrel::Some(#partial),));
    }
    if let Some(c) = &ix.collation {
        let collation = collation(c);
        fields.push(quote!(collation: __docrel::Some(#collation),));
    }
    if let Some(language) = &ix.default_language {
        fields.push(quote!(default_language: __docrel::Some(#language),));
    }
    if let Some(field) = &ix.language_override {
        fields.push(quote!(language_override: __docrel::Some(#field),));
    }
    quote! { __docrel::IndexSpec { #(#fields)* ..__docrel::IndexSpec::DEFAULT } }
}

fn collation(c: &CollationDecl) -> TokenStream {
    let locale = &c.locale;
    let (strength, case_level, case_first) = (Opt(c.strength), Opt(c.case_level), Opt(c.case_first.as_ref()));
    let (numeric, alternate, max_variable) =
        (Opt(c.numeric_ordering), Opt(c.alternate.as_ref()), Opt(c.max_variable.as_ref()));
    let (normalization, backwards) = (Opt(c.normalization), Opt(c.backwards));
    quote! {
        __docrel::IndexCollation {
            locale: #locale,
            strength: #strength,
            case_level: #case_level,
            case_first: #case_first,
            numeric_ordering: #numeric,
            alternate: #alternate,
            max_variable: #max_variable,
            normalization: #normalization,
            backwards: #backwards,
        }
    }
}
