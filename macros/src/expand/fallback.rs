//! After an error, the derive still emits the items other code refers to
//! (the trait impls, `fields()`, `repo()`, the hidden facts other derives
//! read), with bodies that never run, so the user sees the one real error
//! and not a cascade of "trait not implemented" in every struct that refers
//! to this one. Every shape gets them: a struct whose attributes are wrong,
//! and an enum, a tuple or unit struct, or a union derived by mistake.

use super::Opt;
use crate::internals::model::Stub;
use proc_macro2::TokenStream;
use quote::quote;
use syn::{Ident, Path};

pub fn document(s: &Stub) -> TokenStream {
    let ident = s.ident;
    let vis = s.vis;
    let id_ty = match s.id_ty {
        Some(ty) => quote!(#ty),
        None => quote!(__docrel::bson::oid::ObjectId),
    };
    let fields_ty = &s.names.fields;
    let decls = s.fields.iter().map(|f| {
        let (name, ty, vis) = (f.ident, f.ty, f.vis);
        quote!(#vis #name: __docrel::Field<#ident, #ty>,)
    });
    let inits = s.fields.iter().map(|f| {
        let (name, path, max) = (f.ident, &f.stored, Opt(f.bound));
        quote!(#name: __docrel::Field::new(#path, #max),)
    });
    let items = quote! {
        #[allow(dead_code)]
        #vis struct #fields_ty { #(#decls)* }

        #[allow(dead_code)]
        impl #ident {
            pub const fn fields() -> __docrel::Handles<#fields_ty> { __docrel::Handles::new(&Self::__DOCREL_FIELDS) }
            #[doc(hidden)]
            pub const __DOCREL_FIELDS: #fields_ty = #fields_ty { #(#inits)* };
            pub fn repo(db: &__docrel::mongodb::Database) -> __docrel::Repository<#ident> {
                __docrel::Repository::new(db)
            }
            #[doc(hidden)]
            pub const __DOCREL_WRITE_HEAVY: &'static [&'static str] = &[];
            #[doc(hidden)]
            pub const __DOCREL_LINKS: &'static [__docrel::FieldInfo] = __docrel::STUB_LINKS;
        }

        #[automatically_derived]
        impl __docrel::View for #ident {
            type Of = #ident;
            const PROJECTION: ::core::option::Option<&'static [&'static str]> = __docrel::None;
        }

        #[automatically_derived]
        impl __docrel::RoutedById for #ident {}

        #[automatically_derived]
        impl __docrel::DerivesDocument for #ident {
            type Doc = #ident;
        }

        #[automatically_derived]
        impl __docrel::Document for #ident {
            type Id = #id_ty;
            const COLLECTION: &'static str = "";
            fn id(&self) -> ::core::option::Option<&Self::Id> {
                ::core::unreachable!("docrel: this type failed to derive Document")
            }
            fn schema() -> &'static __docrel::Schema {
                ::core::unreachable!("docrel: this type failed to derive Document")
            }
            fn check_bounds(&self) -> __docrel::Result<()> {
                ::core::unreachable!("docrel: this type failed to derive Document")
            }
        }
    };
    super::wrap_in_const(s.krate.as_ref(), items)
}

/// A view whose fields failed their checks still views `of`.
pub fn view(ident: &Ident, of: &Path, krate: Option<&Path>) -> TokenStream {
    let items = quote! {
        #[automatically_derived]
        impl __docrel::View for #ident {
            type Of = #of;
            const PROJECTION: ::core::option::Option<&'static [&'static str]> = __docrel::None;
        }
    };
    super::wrap_in_const(krate, items)
}

/// An element struct that failed its checks is still `Embedded`, with its
/// fields' stored names (the arrays holding it read their key there).
pub fn embedded(s: &Stub) -> TokenStream {
    let ident = s.ident;
    let stored_names = s.fields.iter().map(|f| {
        let (constant, stored) = (super::element_stored_const(f.ident), &f.stored);
        quote! { pub const #constant: &'static str = #stored; }
    });
    let items = quote! {
        #[automatically_derived]
        impl __docrel::Embedded for #ident {
            const COPIES: &'static [__docrel::ElemCopy] = &[];
        }

        #[allow(non_upper_case_globals, dead_code)]
        #[doc(hidden)]
        impl #ident {
            #(#stored_names)*
        }
    };
    super::wrap_in_const(s.krate.as_ref(), items)
}
