//! Generation for `#[derive(View)]`: the projection of a partial view, each
//! field checked at compile time to exist, with the same type, in the
//! document it views.

use crate::internals::ast::Container;
use crate::internals::attr::ViewAttr;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

pub fn expand(c: &Container, of: &ViewAttr) -> TokenStream {
    let ident = c.ident;
    let of = &of.of;
    let stored: Vec<_> = c.fields.iter().filter(|f| f.stored.is_some()).collect();
    let names = stored.iter().map(|f| f.stored_name());
    let checks = stored.iter().map(|f| {
        let name = f.ident;
        let ty = f.ty;
        // A view field must be a field of the document, of the same type:
        // the handle's type says so, or this line does not compile.
        quote_spanned! {f.ident.span()=>
            let _: ::docrel::Field<#of, #ty> = #of::fields().#name;
        }
    });
    let _ = ident.span();
    quote! {
        const _: () = {
            #[allow(dead_code)]
            fn __docrel_view_fields_exist() {
                #(#checks)*
            }

            #[automatically_derived]
            impl ::docrel::View for #ident {
                type Of = #of;
                const PROJECTION: ::core::option::Option<&'static [&'static str]> =
                    ::core::option::Option::Some(&[#(#names),*]);
            }
        };
    }
}
