//! Generation for `#[derive(Document)]`: the trait impls, the static schema
//! (registered at link time), the typed field handles and relation handles.

use super::{option, stored_name};
use crate::internals::model::{Bucket, Element, Index, Model, ModelRelation, OnDelete, RelationKind, SortKey, Subset};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};

pub fn expand(m: &Model) -> TokenStream {
    let ident = m.ident;
    let collection = &m.collection;
    let rust_name = ident.to_string();
    let field_infos = m.fields.iter().map(|f| {
        let (rust, bson, ty) = (f.ident.to_string(), &f.stored, &f.type_name);
        quote! { ::docrel::__private::FieldInfo { rust: #rust, bson: #bson, rust_type: #ty } }
    });
    let relations = m.relations.iter().map(relation);
    let indexes = m.fields.iter().filter(|f| f.index != Index::None).map(|f| {
        let (name, unique) = (&f.stored, f.index == Index::Unique);
        quote! { ::docrel::__private::IndexSpec { keys: &[(#name, 1)], unique: #unique } }
    });
    let fields = fields(m);
    let (rels_ty, rels_impl) = super::relations::expand(m);
    let warnings = super::warn::warnings(&m.advice);
    let advice = super::warn::descriptors(&m.advice);
    let (copies, copy_checks) = super::copies::document_copies(&m.copies);
    let element_checks = element_checks(m);
    let impls = trait_impls(m);

    quote! {
        #fields

        #rels_ty

        const _: () = {
            #rels_impl

            static __DOCREL_SCHEMA: ::docrel::__private::Schema = ::docrel::__private::Schema {
                rust_name: #rust_name,
                module: ::core::module_path!(),
                collection: #collection,
                fields: &[#(#field_infos),*],
                relations: &[#(#relations),*],
                indexes: &[#(#indexes),*],
                copies: &[#(#copies),*],
                advice: &[#(#advice),*],
            };

            #warnings

            #copy_checks
            #element_checks

            ::docrel::__private::inventory::submit! {
                ::docrel::__private::Registered(&__DOCREL_SCHEMA)
            }

            #impls
        };
    }
}

/// `View` (of itself, unprojected) and `Document`.
fn trait_impls(m: &Model) -> TokenStream {
    let (ident, collection, id_ident, id_ty) = (m.ident, &m.collection, m.id.ident, m.id.ty);
    let bound_checks = m.fields.iter().filter_map(|f| {
        let (max, name, stored) = (f.bound?, f.ident, &f.stored);
        Some(quote! {
            ::docrel::__private::check_len(#collection, &self.#id_ident, #stored, #max, self.#name.len())?;
        })
    });
    quote! {
        #[automatically_derived]
        impl ::docrel::View for #ident {
            type Of = #ident;
            const PROJECTION: ::core::option::Option<&'static [&'static str]> = ::core::option::Option::None;
        }

        #[automatically_derived]
        impl ::docrel::Document for #ident {
            type Id = #id_ty;
            const COLLECTION: &'static str = #collection;

            fn id(&self) -> &Self::Id {
                &self.#id_ident
            }

            fn schema() -> &'static ::docrel::__private::Schema {
                &__DOCREL_SCHEMA
            }

            fn check_bounds(&self) -> ::docrel::__private::Result<()> {
                #(#bound_checks)*
                ::core::result::Result::Ok(())
            }
        }
    }
}

/// The typed field handles (`Part::fields().name`), `__DOCREL_WRITE_HEAVY`
/// and `repo()`.
fn fields(m: &Model) -> TokenStream {
    let ident = m.ident;
    let vis = m.vis;
    let fields_ty = format_ident!("{}Fields", ident);
    let handle_decls = m.fields.iter().map(|f| {
        let (name, ty) = (f.ident, f.ty);
        let doc = format!("`{}` (stored as `{}`).", name, f.stored);
        quote! { #[doc = #doc] pub #name: ::docrel::Field<#ident, #ty>, }
    });
    let handle_inits = m.fields.iter().map(|f| {
        let (name, path, max) = (f.ident, &f.stored, option(f.bound));
        quote! { #name: ::docrel::Field::new(#path, #max), }
    });
    let fields_doc = format!("Typed handles of the stored fields of [`{ident}`], from [`{ident}::fields`].");
    let write_heavy = m.fields.iter().filter(|f| f.write_heavy).map(|f| f.ident.to_string());
    quote! {
        #[doc = #fields_doc]
        #[allow(dead_code)]
        #[derive(Clone, Copy, Debug)]
        #vis struct #fields_ty {
            #(#handle_decls)*
        }

        #[allow(dead_code)]
        impl #ident {
            /// Typed handles of the stored fields: their paths, and filters,
            /// updates and sorts built on them.
            pub const fn fields() -> #fields_ty {
                #fields_ty { #(#handle_inits)* }
            }

            #[doc(hidden)]
            pub const __DOCREL_WRITE_HEAVY: &'static [&'static str] = &[#(#write_heavy),*];

            /// The typed repository of this document type in `db`.
            pub fn repo(db: &::docrel::__private::mongodb::Database) -> ::docrel::Repository<#ident> {
                ::docrel::Repository::new(db)
            }
        }
    }
}

/// Reference arrays of `{id, ..}` structs: every copy an element holds comes
/// from the document the array refers to; and the element's key, when its
/// struct lacks `#[derive(Embedded)]` (reported once, at the array's
/// `Embedded` bound), reads as written rather than failing again.
fn element_checks(m: &Model) -> TokenStream {
    let ident = m.ident;
    let mut checks = Vec::new();
    let mut keys: Vec<&syn::Ident> = Vec::new();
    for rel in &m.relations {
        let RelationKind::RefMany { to, element: Element::Structs { ty: elem, key }, .. } = &rel.kind else { continue };
        let message = format!(
            "`{}` of `{ident}`: its elements copy fields from another document than `{}`, which the array refers to",
            rel.ident, to.name
        );
        let to = &to.path;
        checks.push(quote! {
            const _: () = ::core::assert!(
                ::docrel::__private::copies_come_from(<#elem as ::docrel::Embedded>::COPIES, <#to as ::docrel::Document>::COLLECTION),
                #message
            );
        });
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    if keys.is_empty() {
        return quote!(#(#checks)*);
    }
    let fallbacks = keys.iter().map(|key| {
        let constant = super::element_stored_const(key);
        let written = key.to_string();
        let written = written.trim_start_matches("r#");
        quote!(const #constant: &'static str = #written;)
    });
    quote! {
        #(#checks)*

        #[allow(non_upper_case_globals)]
        trait __DocrelElementKeys { #(#fallbacks)* }
        impl<T: ?::core::marker::Sized> __DocrelElementKeys for T {}
    }
}

/// The schema entry of one relationship.
fn relation(rel: &ModelRelation) -> TokenStream {
    let field = &rel.stored;
    let rust_field = rel.ident.to_string();
    let kind = relation_kind(&rel.kind);
    let target = option(rel.kind.target().map(|t| {
        let to = &t.path;
        quote!(<#to as ::docrel::Document>::COLLECTION)
    }));
    let target_type = option(rel.kind.target().map(|t| &t.name));
    let inverse = match rel.kind.inverse() {
        Some((to, inverse)) => {
            let to = &to.path;
            quote_spanned!(inverse.span()=> ::core::option::Option::Some(#to::fields().#inverse.path()))
        }
        None => option(None::<TokenStream>),
    };
    let on_delete = match rel.on_delete {
        OnDelete::Nothing => quote!(::docrel::__private::OnDelete::Nothing),
        OnDelete::Pull => quote!(::docrel::__private::OnDelete::Pull),
        OnDelete::Cascade => quote!(::docrel::__private::OnDelete::Cascade),
        OnDelete::Restrict => quote!(::docrel::__private::OnDelete::Restrict),
    };
    let order = match &rel.kind {
        RelationKind::ParentRef { order, .. } => sort_pairs(order),
        _ => quote!(&[]),
    };
    let copies = match &rel.kind {
        RelationKind::RefMany { element: Element::Structs { ty, .. }, .. } => {
            quote!(<#ty as ::docrel::Embedded>::COPIES)
        }
        _ => quote!(&[]),
    };
    let subset = option(match &rel.kind {
        RelationKind::Embed { subset: Some(subset), .. } => Some(subset_spec(subset)),
        _ => None,
    });
    let bucket = option(match &rel.kind {
        RelationKind::Bucket(bucket) => Some(bucket_spec(bucket)),
        _ => None,
    });
    quote! {
        ::docrel::__private::Relation {
            field: #field,
            rust_field: #rust_field,
            kind: #kind,
            target: #target,
            target_type: #target_type,
            inverse: #inverse,
            on_delete: #on_delete,
            order: #order,
            copies: #copies,
            subset: #subset,
            bucket: #bucket,
        }
    }
}

fn relation_kind(kind: &RelationKind) -> TokenStream {
    match kind {
        RelationKind::Embed { many, max, .. } => {
            let max = option(*max);
            quote!(::docrel::__private::RelationKind::Embed { many: #many, max: #max })
        }
        RelationKind::RefMany { max, element, .. } => {
            let max = option(*max);
            let key = option(element.key().as_ref().map(stored_name));
            quote!(::docrel::__private::RelationKind::RefMany { max: #max, key: #key })
        }
        RelationKind::RefOne { optional, .. } => {
            quote!(::docrel::__private::RelationKind::RefOne { optional: #optional })
        }
        RelationKind::ParentRef { .. } => quote!(::docrel::__private::RelationKind::ParentRef),
        RelationKind::Bucket(_) => quote!(::docrel::__private::RelationKind::Bucket),
    }
}

/// `[("time", -1), ("name", 1)]`.
fn sort_pairs(keys: &[SortKey]) -> TokenStream {
    let pairs = keys.iter().map(|k| {
        let (name, direction) = (stored_name(&k.name), k.direction);
        quote!((#name, #direction))
    });
    quote!(&[#(#pairs),*])
}

fn subset_spec(s: &Subset) -> TokenStream {
    let child = &s.child.path;
    let child_name = &s.child.name;
    let elem = s.elem;
    let sort = sort_pairs(&s.sort);
    let keep_last = s.keep_last;
    let key = option(s.key.as_ref().map(stored_name));
    let max_bytes = option(s.max_bytes);
    quote! {
        ::docrel::__private::SubsetSpec {
            child: <#child as ::docrel::Document>::COLLECTION,
            child_type: #child_name,
            sort: #sort,
            keep_last: #keep_last,
            key: #key,
            fields: <#elem as ::docrel::View>::PROJECTION,
            max_bytes: #max_bytes,
        }
    }
}

fn bucket_spec(b: &Bucket) -> TokenStream {
    let (parent, count, page, start) = (&b.parent_field, &b.count, &b.page, &b.start);
    let (size, window, max_bytes) = (option(b.size), option(b.window_ms), option(b.max_bytes));
    quote! {
        ::docrel::__private::BucketSpec {
            parent: #parent,
            count: #count,
            page: #page,
            start: #start,
            size: #size,
            window_ms: #window,
            max_bytes: #max_bytes,
        }
    }
}
