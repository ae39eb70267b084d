//! Generation of the typed relation handles (`Product::rels().parts`), which
//! the loaders, link/unlink and the fan-outs work through.

use crate::internals::ast::{is_id_type, option_inner, vec_element, Container, Role};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

pub fn expand(c: &Container) -> TokenStream {
    let ident = c.ident;
    let vis = c.vis;
    let mut decls = Vec::new();
    let mut inits = Vec::new();
    // The index into `Schema::relations`, in the order `relation_info` emits them.
    let mut index = 0usize;
    for f in c.fields.iter().filter(|f| f.stored.is_some()) {
        let (to, handle, visit) = match &f.role {
            Role::Plain => continue,
            Role::Embed { attr, .. } => match (&attr.subset_of, vec_element(f.ty)) {
                (Some(child), Some(elem)) => {
                    // The summaries are a view of the child, and `sort` names its fields.
                    let checks = attr.sort.iter().flat_map(|s| {
                        s.value()
                            .split(',')
                            .map(|p| p.trim().trim_start_matches(['-', '+']).to_owned())
                            .collect::<Vec<_>>()
                    });
                    let sort_span = attr.sort.as_ref().map(|s| s.span()).unwrap_or_else(|| f.ident.span());
                    let sort_checks = checks.map(|name| {
                        let name = syn::Ident::new(&name, sort_span);
                        quote_spanned!(sort_span=> let _ = #child::fields().#name;)
                    });
                    // The summaries are a view of the child (the schema's
                    // `<#elem as View>::PROJECTION` checks that they are a view).
                    let view_check = quote_spanned! {elem.span()=>
                        let _: ::core::marker::PhantomData<<#elem as ::docrel::View>::Of> =
                            ::core::marker::PhantomData::<#child>;
                    };
                    let name = f.ident;
                    let doc = format!("The subset kept in `{name}`.");
                    decls.push(quote! { #[doc = #doc] pub #name: ::docrel::Subset<#ident, #child>, });
                    inits.push(quote! {
                        #name: {
                            #[allow(dead_code)]
                            fn __docrel_subset_checks() { #view_check #(#sort_checks)* }
                            ::docrel::Subset::new(&<#ident as ::docrel::Document>::schema().relations[#index])
                        },
                    });
                    index += 1;
                    continue;
                }
                _ => {
                    index += 1;
                    continue;
                }
            },
            Role::Bucket { attr, .. } => {
                let parent = c.fields.iter().find_map(|g| match &g.role {
                    Role::ParentRef { attr, .. } => attr.to.clone(),
                    _ => None,
                });
                let (Some(parent), Some(elem)) = (parent, vec_element(f.ty)) else {
                    index += 1;
                    continue;
                };
                let time = match &attr.by {
                    Some(by) => quote_spanned! {by.span()=>
                        ::core::option::Option::Some(|__e: &#elem| -> ::docrel::bson::DateTime { __e.#by })
                    },
                    None => quote!(::core::option::Option::None),
                };
                let name = f.ident;
                let doc = format!("The buckets of `{name}`.");
                decls.push(quote! { #[doc = #doc] pub #name: ::docrel::Bucket<#ident, #parent, #elem>, });
                inits.push(quote! {
                    #name: ::docrel::Bucket::new(&<#ident as ::docrel::Document>::schema().relations[#index], #time),
                });
                index += 1;
                continue;
            }
            Role::Reference { attr, .. } => {
                let Some(to) = &attr.to else { continue };
                let name = f.ident;
                let ty = f.ty;
                let id = quote!(<#to as ::docrel::Document>::Id);
                if attr.many.is_present() {
                    let elem = vec_element(ty);
                    let access = match (&attr.key, elem) {
                        (Some(k), _) => quote!(&__e.#k),
                        (None, Some(e)) if !is_id_type(e) => quote!(&__e.id),
                        _ => quote!(__e),
                    };
                    let visit = quote_spanned! {ty.span()=>
                        |__p: &#ident, __f: &mut dyn ::core::ops::FnMut(&#id)| {
                            for __e in &__p.#name { __f(#access) }
                        }
                    };
                    (to, quote!(::docrel::RefMany), visit)
                } else {
                    (to, quote!(::docrel::RefOne), single_visit(ident, name, ty, &id))
                }
            }
            Role::ParentRef { attr, .. } => {
                let Some(to) = &attr.to else { continue };
                let name = f.ident;
                let ty = f.ty;
                let id = quote!(<#to as ::docrel::Document>::Id);
                (to, quote!(::docrel::ParentRef), single_visit(ident, name, ty, &id))
            }
        };
        let name = f.ident;
        let doc = format!("The relationship declared on `{name}`.");
        decls.push(quote! { #[doc = #doc] pub #name: #handle<#ident, #to>, });
        inits.push(quote! {
            #name: #handle::new(&<#ident as ::docrel::Document>::schema().relations[#index], #visit),
        });
        index += 1;
    }
    if decls.is_empty() {
        return TokenStream::new();
    }
    let rels_ty = format_ident!("{}Rels", ident);
    let doc = format!("Typed handles of the relationships of [`{ident}`], from [`{ident}::rels`].");
    quote! {
        #[doc = #doc]
        #[allow(dead_code)]
        #[derive(Clone, Copy)]
        #vis struct #rels_ty {
            #(#decls)*
        }

        #[allow(dead_code)]
        impl #ident {
            /// Typed handles of the relationships: loaders, link/unlink and
            /// reverse lookups.
            pub fn rels() -> #rels_ty {
                #rels_ty { #(#inits)* }
            }
        }
    }
}

/// The visit of a single reference (`Id` or `Option<Id>`), spanned at the
/// field's type so a wrong id type is reported there.
fn single_visit(ident: &syn::Ident, name: &syn::Ident, ty: &syn::Type, id: &TokenStream) -> TokenStream {
    if option_inner(ty).is_some() {
        quote_spanned! {ty.span()=>
            |__p: &#ident, __f: &mut dyn ::core::ops::FnMut(&#id)| {
                if let ::core::option::Option::Some(__x) = &__p.#name { __f(__x) }
            }
        }
    } else {
        quote_spanned! {ty.span()=>
            |__p: &#ident, __f: &mut dyn ::core::ops::FnMut(&#id)| { __f(&__p.#name) }
        }
    }
}
