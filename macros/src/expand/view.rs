//! Generation for `#[derive(View)]`: the projection of a partial view, each
//! field checked at compile time to exist, with the same type, in the
//! document it views.

use crate::internals::model::ViewModel;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

pub fn expand(m: &ViewModel) -> TokenStream {
    let ident = m.ident;
    let of = &m.of;
    let names = m.fields.iter().map(|f| &f.stored);
    let checks = m.fields.iter().map(|f| {
        let (name, ty) = (f.ident, f.ty);
        // A view field must be a field of the document, of the same type:
        // the handle's type says so, or this line does not compile.
        quote_spanned! {name.span()=>
            let _: ::docrel::Field<#of, #ty> = #of::fields().#name;
        }
    });
    // The view carries each of its fields, so a loader of a relation on one
    // of them takes the view as parents (and only such loaders do).
    let carries = m.fields.iter().map(|f| {
        let (name, ty) = (f.ident, f.ty);
        let key = super::relations::field_key(name);
        quote! {
            #[automatically_derived]
            impl ::docrel::__private::Carries<#of, #key> for #ident {
                type Value = #ty;
                #[inline]
                fn carried(&self) -> &#ty {
                    &self.#name
                }
            }
        }
    });
    quote! {
        const _: () = {
            #[allow(dead_code)]
            fn __docrel_view_fields_exist() {
                #(#checks)*
            }

            #(#carries)*

            #[automatically_derived]
            impl ::docrel::View for #ident {
                type Of = #of;
                const PROJECTION: ::core::option::Option<&'static [&'static str]> =
                    ::core::option::Option::Some(&[#(#names),*]);
            }
        };
    }
}
