//! Generation of the typed relation handles (`Product::rels().parts`), which
//! the loaders, link/unlink and the fan-outs work through.
//!
//! Each handle holds the index of its entry in the schema's relations, which
//! this derive writes in the model's order, and reads the entry from the
//! schema's static when used, so each entry has one address; the handles
//! struct is then a `const`, and `rels()` returns a reference to it.

use super::Checked;
use crate::internals::model::{Bucket, Element, Model, ModelRelation, RelationKind};
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;

/// The handles struct (`ProductRels`) and the `rels()` that builds it,
/// inside the derive's `const _` block, beside the schema it reads.
pub fn expand(m: &Model, checked: &mut Checked) -> TokenStream {
    let ident = m.ident;
    let vis = m.vis;
    let handles: Vec<_> =
        m.relations.iter().enumerate().filter_map(|(index, rel)| handle(m, index, rel, checked)).collect();
    if handles.is_empty() {
        return TokenStream::new();
    }
    let decls = handles.iter().map(|(decl, _)| decl);
    let inits = handles.iter().map(|(_, init)| init);
    let rels_ty = &m.names.rels;
    let doc = format!("Typed handles of the relationships of [`{ident}`], from [`{ident}::rels`].");
    // Every type that carries a reference field can be a loader's parent:
    // the document itself here, its views in the `View` derive.
    let carries =
        m.relations.iter().filter(|rel| rel.kind.is_reference() || rel.embedded_element().is_some()).map(|rel| {
            let (name, ty) = (rel.ident, rel.ty);
            let key = field_key(name);
            quote! {
                #[automatically_derived]
                impl __docrel::Carries<#ident, #key, #ty> for #ident {
                    #[inline]
                    fn carried(&self) -> &#ty {
                        &self.#name
                    }
                }
            }
        });
    quote! {
        #[doc = #doc]
        #[allow(dead_code)]
        #vis struct #rels_ty {
            #(#decls)*
        }

        #(#carries)*

        #[allow(dead_code)]
        impl #ident {
            /// Typed handles of the relationships: loaders, link/unlink and
            /// reverse lookups.
            pub const fn rels() -> __docrel::Handles<#rels_ty> {
                __docrel::Handles::new(&Self::__DOCREL_RELS)
            }

            #[doc(hidden)]
            pub const __DOCREL_RELS: #rels_ty = #rels_ty { #(#inits)* };
        }
    }
}

/// The const argument naming a field in `Carries`: its key, the runtime's
/// `field_key` (FNV-1a, 64 bits) of the Rust name, computed here and
/// written as a literal: a literal argument costs rustc no `const` item to
/// evaluate, of which a crate of documents would have two per reference.
/// The runtime's `Carries` doctest names a view's key with `field_key`, so
/// the two computations are checked to agree.
pub fn field_key(name: &syn::Ident) -> TokenStream {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in name.to_string().bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    proc_macro2::Literal::u64_suffixed(hash).into_token_stream()
}

/// The declaration and the initializer of one handle; `None` for an embed,
/// which has no handle.
fn handle(m: &Model, index: usize, rel: &ModelRelation, checked: &mut Checked) -> Option<(TokenStream, TokenStream)> {
    let ident = m.ident;
    let name = rel.ident;
    // The handle holds the entry's index (the schema's relations are
    // generated in the model's order) and reads the entry from the static
    // when used: the runtime keys relations by address, and a reference
    // computed in a `const` may point at a copy of the entry that a release
    // build emits per codegen unit (the history checker's release build
    // found its subset missing that way).
    let entry = proc_macro2::Literal::usize_unsuffixed(index);
    let (doc, handle_ty, init) = match &rel.kind {
        RelationKind::Embed { subset: None, .. } => {
            let elem = rel.embedded_element()?;
            let (ty, key) = (rel.ty, field_key(name));
            let doc = format!("The embedded array `{name}`: `each(..)` names a reference its elements hold.");
            (doc, quote!(__docrel::EmbedArray<#ident, #elem, #ty, #key>), quote!(__docrel::EmbedArray::new(#entry)))
        }
        RelationKind::Embed { subset: Some(subset), .. } => {
            let child = checked.doc(&subset.child.path);
            let doc = format!("The subset kept in `{name}`.");
            (doc, quote!(__docrel::Subset<#ident, #child>), quote!(__docrel::Subset::new(#entry)))
        }
        RelationKind::Bucket(Bucket { parent, counter: Some(counter), .. }) => {
            let parent = checked.doc(parent);
            let sum = counter.sum.as_ref().map_or_else(|| quote!(()), |(_, ty)| ty.to_token_stream());
            let doc = format!("The counts per window of `{name}`.");
            (doc, quote!(__docrel::Counter<#ident, #parent, #sum>), quote!(__docrel::Counter::new(#entry)))
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
    // No more visible than the field: its handle names the field's types.
    let vis = m.fields.iter().find(|f| f.ident == name).map(|f| f.vis);
    Some((quote! { #[doc = #doc] #vis #name: #handle_ty, }, quote! { #name: #init, }))
}

/// The id type of `to`, once the ids a field holds (`held`, as written) are
/// of that type: the one check of a reference's id type, at the field's type.
pub(super) fn checked_id(to: &syn::Ident, held: &syn::Type, checked: &mut Checked) -> syn::Ident {
    let key = format!("id {to} {}", quote!(#held));
    checked.checked(key, || {
        let id = quote!(<#to as __docrel::Document>::Id);
        let check = quote_spanned!(held.span()=> __docrel::holds_id::<#held, #id>());
        (id, check)
    })
}

/// The visit of a reference array, given the field's value (so that any
/// type carrying the field can be a parent): the ids themselves, through
/// the runtime's visit of the shape, or each element's key.
fn many_visit(
    rel: &ModelRelation,
    to: &syn::Ident,
    element: &Element,
    optional: bool,
    checked: &mut Checked,
) -> TokenStream {
    match element {
        Element::Ids { ty } => {
            let held = checked_id(to, ty, checked);
            if optional {
                quote!(__docrel::visit_option_vec::<#held>)
            } else {
                quote!(__docrel::visit_vec::<#held>)
            }
        }
        Element::Structs { key, .. } => {
            let (ty, id) = (rel.ty, quote!(<#to as __docrel::Document>::Id));
            let each = quote_spanned!(key.span()=> __f(&__e.#key));
            let elements = if optional { quote!(__v.iter().flatten()) } else { quote!(__v) };
            quote! {
                |__v: &#ty, __f: &mut dyn ::core::ops::FnMut(&#id)| {
                    for __e in #elements { #each }
                }
            }
        }
    }
}

/// The visit of a single reference (`Id` or `Option<Id>`), given the
/// field's value: the runtime's visit of the shape, at the checked id type.
fn single_visit(rel: &ModelRelation, to: &syn::Ident, held: &syn::Type, checked: &mut Checked) -> TokenStream {
    let held = checked_id(to, held, checked);
    if rel.kind.optional() {
        quote!(__docrel::visit_option::<#held>)
    } else {
        quote!(__docrel::visit_id::<#held>)
    }
}
