//! Generation of the typed relation handles (`Product::rels().parts`), which
//! the loaders, link/unlink and the fan-outs work through.
//!
//! Each handle holds its entry of the schema, found by the stored name of its
//! field when the program is compiled (`relation_index(.., "parts")` in a
//! `const` block, its index) and read from the schema's static when the
//! handle is built: the handles do not depend on the order of the entries,
//! and each entry has one address.

use super::Checked;
use crate::internals::model::{Element, Model, ModelRelation, RelationKind};
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

/// The handles struct (`ProductRels`) and the `rels()` that builds it,
/// inside the derive's `const _` block, beside the schema it reads.
pub fn expand(m: &Model, checked: &mut Checked) -> TokenStream {
    let ident = m.ident;
    let vis = m.vis;
    let handles: Vec<_> = m.relations.iter().filter_map(|rel| handle(m, rel, checked)).collect();
    if handles.is_empty() {
        return TokenStream::new();
    }
    let decls = handles.iter().map(|(decl, _)| decl);
    let inits = handles.iter().map(|(_, init)| init);
    let rels_ty = &m.names.rels;
    let stored = super::stored_bounds(ident);
    let doc = format!("Typed handles of the relationships of [`{ident}`], from [`{ident}::rels`].");
    // Every type that carries a reference field can be a loader's parent:
    // the document itself here, its views in the `View` derive.
    let carries = m.relations.iter().filter(|rel| rel.kind.is_reference()).map(|rel| {
        let (name, ty) = (rel.ident, rel.ty);
        let key = field_key(name);
        quote! {
            #[automatically_derived]
            impl __docrel::Carries<#ident, #key> for #ident {
                type Value = #ty;
                #[inline]
                fn carried(&self) -> &#ty {
                    &self.#name
                }
            }
        }
    });
    let handle_impls = crate::expand::handle_struct_impls(rels_ty);
    quote! {
        #[doc = #doc]
        #[allow(dead_code)]
        #vis struct #rels_ty {
            #(#decls)*
        }

        #handle_impls

        #(#carries)*

        #[allow(dead_code)]
        impl #ident {
            /// Typed handles of the relationships: loaders, link/unlink and
            /// reverse lookups.
            pub fn rels() -> #rels_ty #stored {
                #rels_ty { #(#inits)* }
            }
        }
    }
}

/// The const argument naming a field in `Carries`: its key, computed by the
/// runtime's `field_key` from the Rust name.
pub fn field_key(name: &syn::Ident) -> TokenStream {
    let name = name.to_string();
    quote!({ __docrel::field_key(#name) })
}

/// The declaration and the initializer of one handle; `None` for an embed,
/// which has no handle.
fn handle(m: &Model, rel: &ModelRelation, checked: &mut Checked) -> Option<(TokenStream, TokenStream)> {
    let ident = m.ident;
    let name = rel.ident;
    let stored = &rel.stored;
    // The index is a constant, the entry is read from the static when the
    // handle is built: the runtime keys relations by address, and a
    // reference computed in a `const` may point at a copy of the entry that
    // a release build emits per codegen unit (the history checker's release
    // build found its subset missing that way).
    let entry =
        quote!(&__DOCREL_SCHEMA.relations[const { __docrel::relation_index(__DOCREL_SCHEMA.relations, #stored) }]);
    let (doc, handle_ty, init) = match &rel.kind {
        RelationKind::Embed { subset: None, .. } => return None,
        RelationKind::Embed { subset: Some(subset), .. } => {
            let child = checked.doc(&subset.child.path);
            let doc = format!("The subset kept in `{name}`.");
            (doc, quote!(__docrel::Subset<#ident, #child>), quote!(__docrel::Subset::new(#entry)))
        }
        RelationKind::Bucket(bucket) => {
            let (parent, elem) = (checked.doc(&bucket.parent), bucket.elem);
            let time = match bucket.by {
                Some(by) => quote_spanned! {by.span()=>
                    __docrel::Some(|__e: &#elem| -> __docrel::bson::DateTime { __e.#by })
                },
                None => quote!(__docrel::None),
            };
            let doc = format!("The buckets of `{name}`.");
            (doc, quote!(__docrel::Bucket<#ident, #parent, #elem>), quote!(__docrel::Bucket::new(#entry, #time)))
        }
        RelationKind::RefMany { to, element, optional, .. } => {
            let to = checked.doc(&to.path);
            let visit = many_visit(rel, &to, element, *optional, checked);
            let (ty, key) = (rel.ty, field_key(name));
            let doc = format!("The relationship declared on `{name}`.");
            (doc, quote!(__docrel::RefMany<#ident, #to, #ty, #key>), quote!(__docrel::RefMany::new(#entry, #visit)))
        }
        RelationKind::RefOne { to, id, .. } | RelationKind::ParentRef { to, id, .. } => {
            let to = checked.doc(&to.path);
            let visit = single_visit(rel, &to, id, checked);
            let handle = match rel.kind {
                RelationKind::RefOne { .. } => quote!(__docrel::RefOne),
                _ => quote!(__docrel::ParentRef),
            };
            let (ty, key) = (rel.ty, field_key(name));
            let doc = format!("The relationship declared on `{name}`.");
            (doc, quote!(#handle<#ident, #to, #ty, #key>), quote!(#handle::new(#entry, #visit)))
        }
    };
    Some((quote! { #[doc = #doc] pub #name: #handle_ty, }, quote! { #name: #init, }))
}

/// The id type of `to`, once the ids a field holds (`held`, as written) are
/// of that type: the one check of a reference's id type, at the field's type.
fn checked_id(to: &TokenStream, held: &syn::Type, checked: &mut Checked) -> TokenStream {
    let id = quote!(<#to as __docrel::Document>::Id);
    let key = format!("id {to} {}", quote!(#held));
    let check = quote_spanned!(held.span()=> __docrel::holds_id::<#held, #id>());
    checked.checked(key, id, check)
}

/// The visit of a reference array, given the field's value (so that any
/// type carrying the field can be a parent): the ids themselves, or each
/// element's key.
fn many_visit(
    rel: &ModelRelation,
    to: &TokenStream,
    element: &Element,
    optional: bool,
    checked: &mut Checked,
) -> TokenStream {
    let ty = rel.ty;
    let id = quote!(<#to as __docrel::Document>::Id);
    let each = match element {
        Element::Structs { key, .. } => quote_spanned!(key.span()=> __f(&__e.#key)),
        Element::Ids { ty } => {
            let held = checked_id(to, ty, checked);
            quote!({
                let __e: &#held = __e;
                __f(__e)
            })
        }
    };
    let elements = if optional { quote!(__v.iter().flatten()) } else { quote!(__v) };
    quote! {
        |__v: &#ty, __f: &mut dyn ::core::ops::FnMut(&#id)| {
            for __e in #elements { #each }
        }
    }
}

/// The visit of a single reference (`Id` or `Option<Id>`), given the
/// field's value.
fn single_visit(rel: &ModelRelation, to: &TokenStream, held: &syn::Type, checked: &mut Checked) -> TokenStream {
    let ty = rel.ty;
    let id = quote!(<#to as __docrel::Document>::Id);
    let held = checked_id(to, held, checked);
    if rel.kind.optional() {
        quote! {
            |__v: &#ty, __f: &mut dyn ::core::ops::FnMut(&#id)| {
                if let __docrel::Some(__x) = __v {
                    let __x: &#held = __x;
                    __f(__x)
                }
            }
        }
    } else {
        quote! {
            |__v: &#ty, __f: &mut dyn ::core::ops::FnMut(&#id)| {
                let __x: &#held = __v;
                __f(__x)
            }
        }
    }
}
