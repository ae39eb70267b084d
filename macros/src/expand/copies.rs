//! Generation for `#[denormalize]`: the copy descriptors the fan-out
//! updaters find through the registry, and the compile-time checks that a
//! copy has its source field's type and that `via` leads to the source.

use crate::internals::ast::{Container, Role};
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

/// The `Copy` descriptors of a document's top-level copies, and their checks.
pub fn document_copies(c: &Container) -> (Vec<TokenStream>, TokenStream) {
    let mut descriptors = Vec::new();
    let mut checks = Vec::new();
    for f in &c.fields {
        let (Some(copy), Some(stored)) = (&f.copy, f.stored.as_deref()) else { continue };
        let (Some((src, src_field)), Some(via)) = (copy.source(), copy.attr.via.as_ref()) else { continue };
        let Some(via_field) = c.fields.iter().find(|g| g.ident == via) else { continue };
        let via_to = match &via_field.role {
            Role::Reference { attr, .. } => attr.to.as_ref(),
            Role::ParentRef { attr, .. } => attr.to.as_ref(),
            _ => None,
        };
        let Some(via_to) = via_to else { continue };
        let via_stored = via_field.stored_name();
        let ty = f.ty;
        let src_name = quote!(#src).to_string().replace(' ', "");
        descriptors.push(quote! {
            ::docrel::__private::Copy {
                field: #stored,
                source: <#src as ::docrel::Document>::COLLECTION,
                source_type: #src_name,
                source_field: #src::fields().#src_field.path(),
                via: #via_stored,
            }
        });
        checks.push(quote_spanned! {src_field.span()=>
            let _: ::docrel::Field<#src, #ty> = #src::fields().#src_field;
        });
        checks.push(quote_spanned! {via.span()=>
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

/// `#[derive(Embedded)]`: the copies an element struct of a reference array
/// holds (`{id, name}` with `name` copied from `Part::name`).
pub fn embedded(c: &Container) -> TokenStream {
    let ident = c.ident;
    let mut descriptors = Vec::new();
    let mut checks = Vec::new();
    for f in &c.fields {
        let (Some(copy), Some(stored)) = (&f.copy, f.stored.as_deref()) else { continue };
        let Some((src, src_field)) = copy.source() else { continue };
        let ty = f.ty;
        let src_name = quote!(#src).to_string().replace(' ', "");
        descriptors.push(quote! {
            ::docrel::__private::ElemCopy {
                field: #stored,
                source: <#src as ::docrel::Document>::COLLECTION,
                source_type: #src_name,
                source_field: #src::fields().#src_field.path(),
            }
        });
        checks.push(quote_spanned! {src_field.span()=>
            let _: ::docrel::Field<#src, #ty> = #src::fields().#src_field;
        });
    }
    quote! {
        const _: () = {
            #[allow(dead_code)]
            fn __docrel_copies_match_their_sources() { #(#checks)* }

            #[automatically_derived]
            impl ::docrel::Embedded for #ident {
                const COPIES: &'static [::docrel::__private::ElemCopy] = &[#(#descriptors),*];
            }
        };
    }
}
