//! After an error, the derive still emits the items other code refers to
//! (the trait impls, `fields()`, `repo()`), with bodies that never run, so
//! the user sees the one real error and not a cascade of "trait not
//! implemented" in every struct that refers to this one.

use crate::internals::model::Stub;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

pub fn document(s: &Stub) -> TokenStream {
    let ident = s.ident;
    let vis = s.vis;
    let id_ty = match s.id_ty {
        Some(ty) => quote!(#ty),
        None => quote!(::docrel::bson::oid::ObjectId),
    };
    let fields_ty = format_ident!("{}Fields", ident);
    let decls = s.fields.iter().map(|f| {
        let (name, ty) = (f.ident, f.ty);
        quote!(pub #name: ::docrel::Field<#ident, #ty>,)
    });
    let inits = s.fields.iter().map(|f| {
        let (name, path) = (f.ident, &f.stored);
        quote!(#name: ::docrel::Field::new(#path, ::core::option::Option::None),)
    });
    quote! {
        #[allow(dead_code)]
        #vis struct #fields_ty { #(#decls)* }

        #[allow(dead_code)]
        impl #ident {
            pub const fn fields() -> #fields_ty { #fields_ty { #(#inits)* } }
            pub fn repo(db: &::docrel::__private::mongodb::Database) -> ::docrel::Repository<#ident> {
                ::docrel::Repository::new(db)
            }
            #[doc(hidden)]
            pub const __DOCREL_WRITE_HEAVY: &'static [&'static str] = &[];
        }

        const _: () = {
            impl ::docrel::View for #ident {
                type Of = #ident;
                const PROJECTION: ::core::option::Option<&'static [&'static str]> = ::core::option::Option::None;
            }
            impl ::docrel::Document for #ident {
                type Id = #id_ty;
                const COLLECTION: &'static str = "";
                fn id(&self) -> &Self::Id {
                    ::core::unreachable!("docrel: this type failed to derive Document")
                }
                fn schema() -> &'static ::docrel::__private::Schema {
                    ::core::unreachable!("docrel: this type failed to derive Document")
                }
                fn check_bounds(&self) -> ::docrel::__private::Result<()> {
                    ::core::unreachable!("docrel: this type failed to derive Document")
                }
            }
        };
    }
}
