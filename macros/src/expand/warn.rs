//! Warnings on stable Rust: each unacknowledged piece of advice becomes a
//! use of a `#[deprecated]` item spanned at the attribute, so a plain
//! `cargo build` shows it there. Advice that depends on another type (is it
//! a document? is the other side an array? is the source field write-heavy?)
//! probes for it, and warns only when it holds.

use crate::internals::advice::{Advice, When};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};

/// The warning items (inside the derive's `const _` block).
pub fn warnings(advice: &[Advice]) -> TokenStream {
    let blocks = advice.iter().enumerate().filter(|(_, a)| !a.acknowledged).map(|(i, a)| {
        let fn_name = format_ident!("__docrel_advice_{}", i);
        let note = &a.note;
        let span = a.span;
        // The name is the token rustc reports at: it carries the user's span.
        let name = proc_macro2::Ident::new(a.name, span);
        // The items are the derive's own; only the use carries the user's
        // span, which is where rustc reports the deprecation.
        let body = match &a.when {
            When::Always => {
                let use_ = quote_spanned!(span=> #name);
                quote! {
                    #[deprecated(note = #note)]
                    #[allow(non_upper_case_globals)]
                    const #name: () = ();
                    #use_
                }
            }
            When::IsDocument(ty) => {
                let use_ = quote_spanned!(span=> (&Probe::<#ty>(::core::marker::PhantomData)).#name());
                quote! {
                    struct Probe<T>(::core::marker::PhantomData<T>);
                    trait Holds { #[deprecated(note = #note)] fn #name(&self) {} }
                    impl<T: ::docrel::Document> Holds for Probe<T> {}
                    trait Not { fn #name(&self) {} }
                    impl<T> Not for &Probe<T> {}
                    #use_
                }
            }
            When::InverseIsArray { to, inverse } => {
                let use_ = quote_spanned!(span=> (&Probe(#to::fields().#inverse)).#name());
                quote! {
                    struct Probe<F>(F);
                    trait Holds { #[deprecated(note = #note)] fn #name(&self) {} }
                    impl<D, E> Holds for Probe<::docrel::Field<D, ::std::vec::Vec<E>>> {}
                    trait Not { fn #name(&self) {} }
                    impl<F> Not for &Probe<F> {}
                    #use_
                }
            }
            When::WriteHeavy { src, field } => {
                let field = field.to_string();
                let use_ = quote_spanned!(span=> Select::<{ ::docrel::__private::contains(#src::__DOCREL_WRITE_HEAVY, #field) }>::#name());
                quote! {
                    struct Select<const HOLDS: bool>;
                    impl Select<true> { #[deprecated(note = #note)] fn #name() {} }
                    impl Select<false> { fn #name() {} }
                    #use_
                }
            }
        };
        quote! {
            #[allow(dead_code, clippy::all)]
            fn #fn_name() { #body }
        }
    });
    quote! { #(#blocks)* }
}

/// The advice descriptors of the schema, for the runtime report.
pub fn descriptors(advice: &[Advice]) -> Vec<TokenStream> {
    advice
        .iter()
        .map(|a| {
            let rule = a.name;
            let field = &a.field;
            let note = &a.note;
            let acknowledged = a.acknowledged;
            let applies = match &a.when {
                When::Always => quote!(|| true),
                When::IsDocument(ty) => quote! {
                    || {
                        struct Probe<T>(::core::marker::PhantomData<T>);
                        trait Holds { fn holds(&self) -> bool { true } }
                        impl<T: ::docrel::Document> Holds for Probe<T> {}
                        trait Not { fn holds(&self) -> bool { false } }
                        impl<T> Not for &Probe<T> {}
                        (&Probe::<#ty>(::core::marker::PhantomData)).holds()
                    }
                },
                When::InverseIsArray { to, inverse } => quote! {
                    || {
                        struct Probe<F>(F);
                        trait Holds { fn holds(&self) -> bool { true } }
                        impl<D, E> Holds for Probe<::docrel::Field<D, ::std::vec::Vec<E>>> {}
                        trait Not { fn holds(&self) -> bool { false } }
                        impl<F> Not for &Probe<F> {}
                        (&Probe(#to::fields().#inverse)).holds()
                    }
                },
                When::WriteHeavy { src, field } => {
                    let field = field.to_string();
                    quote!(|| ::docrel::__private::contains(#src::__DOCREL_WRITE_HEAVY, #field))
                }
            };
            quote! {
                ::docrel::__private::Advice {
                    rule: #rule,
                    field: #field,
                    note: #note,
                    acknowledged: #acknowledged,
                    applies: #applies,
                }
            }
        })
        .collect()
}
