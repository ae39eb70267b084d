//! Generation for `#[denormalize]`: the copy descriptors the fan-out
//! updaters find through the registry, and the compile-time checks that a
//! copy has its source field's type and that `via` leads to the source.

use crate::internals::model::{Copied, EmbeddedModel, ModelCopy};
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

/// The `Copy` descriptors of a document's top-level copies, and their checks.
pub fn document_copies(copies: &[ModelCopy]) -> (Vec<TokenStream>, TokenStream) {
    let mut descriptors = Vec::new();
    let mut checks = Vec::new();
    for ModelCopy { copied, via } in copies {
        let (src, src_name, src_field) = (&copied.source.path, &copied.source.name, &copied.source_field);
        let (stored, via_stored, via_to) = (&copied.stored, &via.stored, &via.to);
        descriptors.push(quote! {
            ::docrel::__private::Copy {
                field: #stored,
                source: <#src as ::docrel::Document>::COLLECTION,
                source_type: #src_name,
                source_field: #src::fields().#src_field.path(),
                via: #via_stored,
            }
        });
        checks.push(type_check(copied));
        checks.push(quote_spanned! {via.ident.span()=>
            let _: ::core::marker::PhantomData<#via_to> = ::core::marker::PhantomData::<#src>;
        });
    }
    let checks = if checks.is_empty() {
        TokenStream::new()
    } else {
        quote! {
            // A copy has its source field's type, and `via` leads to the source.
            #[allow(dead_code)]
            fn __docrel_copies_match_their_sources() { #(#checks)* }
        }
    };
    (descriptors, checks)
}

/// A copy has its source field's type: the source's field handle says so.
fn type_check(copied: &Copied) -> TokenStream {
    let (src, src_field, ty) = (&copied.source.path, &copied.source_field, copied.ty);
    quote_spanned! {src_field.span()=>
        let _: ::docrel::Field<#src, #ty> = #src::fields().#src_field;
    }
}

/// `#[derive(Embedded)]`: the copies an element struct of a reference array
/// holds (`{id, name}` with `name` copied from `Part::name`), and the stored
/// name of each field, which the array's schema entry reads for its key.
pub fn embedded(m: &EmbeddedModel) -> TokenStream {
    let ident = m.ident;
    let descriptors = m.copies.iter().map(|c| {
        let (stored, src, src_name, src_field) = (&c.stored, &c.source.path, &c.source.name, &c.source_field);
        quote! {
            ::docrel::__private::ElemCopy {
                field: #stored,
                source: <#src as ::docrel::Document>::COLLECTION,
                source_type: #src_name,
                source_field: #src::fields().#src_field.path(),
            }
        }
    });
    let checks = m.copies.iter().map(type_check);
    let stored_names = m.fields.iter().map(|f| {
        let (constant, stored) = (super::element_stored_const(f.ident), &f.stored);
        let doc = format!("The stored name of `{}`.", f.ident);
        quote! { #[doc = #doc] pub const #constant: &'static str = #stored; }
    });
    quote! {
        const _: () = {
            #[allow(dead_code)]
            fn __docrel_copies_match_their_sources() { #(#checks)* }

            #[automatically_derived]
            impl ::docrel::Embedded for #ident {
                const COPIES: &'static [::docrel::__private::ElemCopy] = &[#(#descriptors),*];
            }

            #[automatically_derived]
            #[allow(non_upper_case_globals)]
            #[doc(hidden)]
            impl #ident {
                #(#stored_names)*
            }
        };
    }
}
