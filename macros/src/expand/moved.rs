//! Generation for `#[document(moved_from = Post::comments)]`: the move's
//! descriptor, registered at link time beside the schema, so that
//! `docrel::schema::export()` carries it. Nothing is emitted without a move.

use super::Checked;
use crate::internals::model::Model;
use proc_macro2::TokenStream;
use quote::quote;

pub fn expand(m: &Model, checked: &mut Checked) -> TokenStream {
    let back = embedded_from(m);
    let Some(mv) = &m.moved else { return back };
    // Naming the old owner through its derive checks it is a document.
    let from = checked.doc(&mv.from.path);
    let (from_type, from_field, parent_field) = (&mv.from.name, &mv.from_field, &mv.parent_field);
    let (to_collection, to_type) = (&m.collection, m.ident.to_string());
    let (kind, buckets) = match &mv.buckets {
        Some(b) => {
            let (field, page, count, size) = (&b.field, &b.page, &b.count, b.size);
            let (start, window, by) = match &b.time {
                Some((start, window, by)) => {
                    (start.as_str(), quote!(::core::option::Option::Some(#window)), by.as_str())
                }
                None => ("", quote!(::core::option::Option::None), ""),
            };
            let buckets = quote! {
                ::core::option::Option::Some(__docrel::MovedBuckets {
                    field: #field, page: #page, count: #count, size: #size, start: #start, window_ms: #window, by: #by,
                })
            };
            (quote!(EmbedToBuckets), buckets)
        }
        None => (quote!(EmbedToCollection), quote!(::core::option::Option::None)),
    };
    quote! {
        static __DOCREL_MOVE: __docrel::Move = __docrel::Move {
            kind: __docrel::MoveKind::#kind,
            from_collection: <#from as __docrel::Document>::COLLECTION,
            from_type: #from_type,
            from_rust_field: #from_field,
            to_collection: #to_collection,
            to_type: #to_type,
            parent_field: #parent_field,
            module: ::core::module_path!(),
            buckets: #buckets,
        };
        __docrel::inventory::submit! { __docrel::RegisteredMove(&__DOCREL_MOVE) }
        #back
    }
}

/// `#[embed(moved_from = "addresses")]`: the move back into this type, its
/// parent reference found in the stored schema when it is planned.
fn embedded_from(m: &Model) -> TokenStream {
    let Some(back) = &m.embedded_from else { return TokenStream::new() };
    let (from_collection, from_type, from_field) = (&m.collection, m.ident.to_string(), &back.rust_field);
    let to_collection = &back.collection;
    quote! {
        static __DOCREL_MOVE_BACK: __docrel::Move = __docrel::Move {
            kind: __docrel::MoveKind::ReferencedToEmbedded,
            from_collection: #from_collection,
            from_type: #from_type,
            from_rust_field: #from_field,
            to_collection: #to_collection,
            to_type: "",
            parent_field: "",
            module: ::core::module_path!(),
            buckets: ::core::option::Option::None,
        };
        __docrel::inventory::submit! { __docrel::RegisteredMove(&__DOCREL_MOVE_BACK) }
    }
}
