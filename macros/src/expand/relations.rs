//! Generation of the typed relation handles (`Product::rels().parts`), which
//! the loaders, link/unlink and the fan-outs work through.
//!
//! Each handle holds its entry of the schema, found by the stored name of its
//! field when the program is compiled (`__docrel_relation("parts")` in a
//! `const` block): the handles do not depend on the order of the entries.

use crate::internals::model::{Element, Model, ModelRelation, RelationKind};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

/// The handles struct (`ProductRels`), and the `rels()` that builds it, which
/// goes inside the derive's `const _` block, beside the schema it reads.
pub fn expand(m: &Model) -> (TokenStream, TokenStream) {
    let ident = m.ident;
    let vis = m.vis;
    let handles: Vec<_> = m.relations.iter().filter_map(|rel| handle(m, rel)).collect();
    if handles.is_empty() {
        return (TokenStream::new(), TokenStream::new());
    }
    let decls = handles.iter().map(|(decl, _)| decl);
    let inits = handles.iter().map(|(_, init)| init);
    let rels_ty = format_ident!("{}Rels", ident);
    let doc = format!("Typed handles of the relationships of [`{ident}`], from [`{ident}::rels`].");
    let rels_struct = quote! {
        #[doc = #doc]
        #[allow(dead_code)]
        #[derive(Clone, Copy)]
        #vis struct #rels_ty {
            #(#decls)*
        }
    };
    let subset_checks = subset_checks(m);
    let carries = m.relations.iter().filter(|rel| rel.kind.is_reference()).map(|rel| {
        let (name, ty) = (rel.ident, rel.ty);
        let key = field_key(name);
        quote! {
            #[automatically_derived]
            impl ::docrel::__private::Carries<#ident, #key> for #ident {
                type Value = #ty;
                #[inline]
                fn carried(&self) -> &#ty {
                    &self.#name
                }
            }
        }
    });
    let rels_impl = quote! {
        #(#carries)*

        #[allow(dead_code)]
        impl #ident {
            /// Typed handles of the relationships: loaders, link/unlink and
            /// reverse lookups.
            pub fn rels() -> #rels_ty {
                #rels_ty { #(#inits)* }
            }
        }

        /// The schema entry of the relationship stored as `field`. Evaluated
        /// at compile time: a handle without its entry would stop the build.
        const fn __docrel_relation(field: &str) -> &'static ::docrel::__private::Relation {
            let relations = __DOCREL_SCHEMA.relations;
            let mut i = 0;
            while i < relations.len() {
                if ::docrel::__private::contains(&[relations[i].field], field) {
                    return &relations[i];
                }
                i += 1;
            }
            ::core::panic!("docrel: a relation handle has no schema entry")
        }

        #subset_checks
    };
    (rels_struct, rels_impl)
}

/// The const argument naming a field in `Carries`: its key, computed by the
/// runtime's `field_key` from the Rust name.
pub fn field_key(name: &syn::Ident) -> TokenStream {
    let name = name.to_string();
    quote!({ ::docrel::__private::field_key(#name) })
}

/// The declaration and the initializer of one handle; `None` for an embed,
/// which has no handle.
fn handle(m: &Model, rel: &ModelRelation) -> Option<(TokenStream, TokenStream)> {
    let ident = m.ident;
    let name = rel.ident;
    let stored = &rel.stored;
    let entry = quote!(const { __docrel_relation(#stored) });
    let (doc, handle_ty, init) = match &rel.kind {
        RelationKind::Embed { subset: None, .. } => return None,
        RelationKind::Embed { subset: Some(subset), .. } => {
            let child = &subset.child.path;
            let doc = format!("The subset kept in `{name}`.");
            (doc, quote!(::docrel::Subset<#ident, #child>), quote!(::docrel::Subset::new(#entry)))
        }
        RelationKind::Bucket(bucket) => {
            let (parent, elem) = (&bucket.parent, bucket.elem);
            let time = match bucket.by {
                Some(by) => quote_spanned! {by.span()=>
                    ::core::option::Option::Some(|__e: &#elem| -> ::docrel::bson::DateTime { __e.#by })
                },
                None => quote!(::core::option::Option::None),
            };
            let doc = format!("The buckets of `{name}`.");
            (doc, quote!(::docrel::Bucket<#ident, #parent, #elem>), quote!(::docrel::Bucket::new(#entry, #time)))
        }
        RelationKind::RefMany { to, element, .. } => {
            let to = &to.path;
            let visit = many_visit(rel, &quote!(<#to as ::docrel::Document>::Id), element);
            let (ty, key) = (rel.ty, field_key(name));
            let doc = format!("The relationship declared on `{name}`.");
            (doc, quote!(::docrel::RefMany<#ident, #to, #ty, #key>), quote!(::docrel::RefMany::new(#entry, #visit)))
        }
        RelationKind::RefOne { to, .. } | RelationKind::ParentRef { to, .. } => {
            let to = &to.path;
            let visit = single_visit(rel, &quote!(<#to as ::docrel::Document>::Id));
            let handle = match rel.kind {
                RelationKind::RefOne { .. } => quote!(::docrel::RefOne),
                _ => quote!(::docrel::ParentRef),
            };
            let (ty, key) = (rel.ty, field_key(name));
            let doc = format!("The relationship declared on `{name}`.");
            (doc, quote!(#handle<#ident, #to, #ty, #key>), quote!(#handle::new(#entry, #visit)))
        }
    };
    Some((quote! { #[doc = #doc] pub #name: #handle_ty, }, quote! { #name: #init, }))
}

/// The visit of a reference array (given the field's value, so that any
/// type carrying the field can be a parent): the ids themselves, or each
/// element's key.
fn many_visit(rel: &ModelRelation, id: &TokenStream, element: &Element) -> TokenStream {
    let ty = rel.ty;
    let access = match element {
        Element::Structs { key, .. } => quote!(&__e.#key),
        Element::Ids => quote!(__e),
    };
    quote_spanned! {ty.span()=>
        |__v: &#ty, __f: &mut dyn ::core::ops::FnMut(&#id)| {
            for __e in __v { __f(#access) }
        }
    }
}

/// The visit of a single reference (`Id` or `Option<Id>`), spanned at the
/// field's type so a wrong id type is reported there.
fn single_visit(rel: &ModelRelation, id: &TokenStream) -> TokenStream {
    let ty = rel.ty;
    if rel.kind.optional() {
        quote_spanned! {ty.span()=>
            |__v: &#ty, __f: &mut dyn ::core::ops::FnMut(&#id)| {
                if let ::core::option::Option::Some(__x) = __v { __f(__x) }
            }
        }
    } else {
        quote_spanned! {ty.span()=>
            |__v: &#ty, __f: &mut dyn ::core::ops::FnMut(&#id)| { __f(__v) }
        }
    }
}

/// The summaries of a subset are a view of its child.
fn subset_checks(m: &Model) -> TokenStream {
    let checks: Vec<_> = m
        .relations
        .iter()
        .filter_map(|rel| match &rel.kind {
            RelationKind::Embed { subset: Some(subset), .. } => {
                let (child, elem) = (&subset.child.path, subset.elem);
                Some(quote_spanned! {elem.span()=>
                    let _: ::core::marker::PhantomData<<#elem as ::docrel::View>::Of> =
                        ::core::marker::PhantomData::<#child>;
                })
            }
            _ => None,
        })
        .collect();
    if checks.is_empty() {
        return TokenStream::new();
    }
    quote! {
        #[allow(dead_code)]
        fn __docrel_subsets_are_views_of_their_child() { #(#checks)* }
    }
}
