//! Generation for `#[derive(Document)]`: the trait impls, the static schema
//! (registered at link time), the typed field handles and relation handles.

use crate::internals::ast::{option_inner, vec_element, Container, Field, Role};
use crate::internals::attr::OnDeleteAttr;
use crate::internals::check::Checked;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};

pub fn expand(c: &Container, checked: &Checked) -> TokenStream {
    let ident = c.ident;
    let vis = c.vis;
    let collection = &checked.collection;
    let id_field = &c.fields[checked.id];
    let id_ident = id_field.ident;
    let id_ty = id_field.ty;
    let rust_name = ident.to_string();
    let stored: Vec<&Field> = c.fields.iter().filter(|f| f.stored.is_some()).collect();

    let field_infos = stored.iter().map(|f| {
        let rust = f.ident.to_string();
        let bson = f.stored_name();
        let ty = f.ty;
        let ty = quote!(#ty).to_string();
        quote! { ::docrel::__private::FieldInfo { rust: #rust, bson: #bson, rust_type: #ty } }
    });
    let relations = c.fields.iter().filter_map(|f| relation_info(c, f));
    let indexes = c.fields.iter().filter_map(|f| {
        let name = f.stored.as_deref()?;
        let unique = f.doc.unique.is_present();
        (unique || f.doc.index.is_present())
            .then(|| quote! { ::docrel::__private::IndexSpec { keys: &[(#name, 1)], unique: #unique } })
    });
    let bound_checks = c.fields.iter().filter_map(|f| {
        let max = bound(f)?;
        let name = f.ident;
        let stored = f.stored_name();
        Some(quote! {
            ::docrel::__private::check_len(#collection, &self.#id_ident, #stored, #max, self.#name.len())?;
        })
    });

    let fields_ty = format_ident!("{}Fields", ident);
    let handle_decls = stored.iter().map(|f| {
        let name = f.ident;
        let ty = f.ty;
        let doc = format!("`{}` (stored as `{}`).", name, f.stored_name());
        quote! { #[doc = #doc] pub #name: ::docrel::Field<#ident, #ty>, }
    });
    let handle_inits = stored.iter().map(|f| {
        let name = f.ident;
        let path = f.stored_name();
        let max = match bound(f) {
            Some(m) => quote!(::core::option::Option::Some(#m)),
            None => quote!(::core::option::Option::None),
        };
        quote! { #name: ::docrel::Field::new(#path, #max), }
    });
    let fields_doc = format!("Typed handles of the stored fields of [`{ident}`], from [`{ident}::fields`].");
    let rels = crate::expand::relations::expand(c);
    let advice = crate::internals::advice::advise(c);
    let warnings = crate::expand::warn::warnings(&advice);
    let advice = crate::expand::warn::descriptors(&advice);
    let write_heavy = c.fields.iter().filter(|f| f.doc.write_heavy.is_present()).map(|f| f.ident.to_string());
    let (copies, copy_checks) = crate::expand::copies::document_copies(c);
    let element_checks = c.fields.iter().filter_map(|f| {
        let Role::Reference { attr, .. } = &f.role else { return None };
        let (Some(to), Some(elem)) = (attr.to.as_ref(), vec_element(f.ty)) else { return None };
        if !attr.many.is_present() || crate::internals::ast::is_id_type(elem) {
            return None;
        }
        let message = format!(
            "`{}` of `{ident}`: its elements copy fields from another document than `{}`, which the array refers to",
            f.ident,
            quote!(#to).to_string().replace(' ', "")
        );
        Some(quote! {
            const _: () = ::core::assert!(
                ::docrel::__private::copies_come_from(<#elem as ::docrel::Embedded>::COPIES, <#to as ::docrel::Document>::COLLECTION),
                #message
            );
        })
    });

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

        #rels

        const _: () = {
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
            #(#element_checks)*

            ::docrel::__private::inventory::submit! {
                ::docrel::__private::Registered(&__DOCREL_SCHEMA)
            }

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
        };
    }
}

/// The declared bound of an array field.
fn bound(f: &Field) -> Option<u32> {
    match &f.role {
        Role::Embed { attr, .. } if vec_element(f.ty).is_some() => attr.max.as_ref().map(|m| m.0),
        Role::Reference { attr, .. } if attr.many.is_present() => attr.max.as_ref().map(|m| m.0),
        _ => None,
    }
}

fn on_delete(rule: Option<OnDeleteAttr>) -> TokenStream {
    match rule {
        None => quote!(::docrel::__private::OnDelete::Nothing),
        Some(OnDeleteAttr::Pull) => quote!(::docrel::__private::OnDelete::Pull),
        Some(OnDeleteAttr::Cascade) => quote!(::docrel::__private::OnDelete::Cascade),
        Some(OnDeleteAttr::Restrict) => quote!(::docrel::__private::OnDelete::Restrict),
    }
}

fn opt_u32(v: Option<u32>) -> TokenStream {
    match v {
        Some(v) => quote!(::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    }
}

fn relation_info(c: &Container, f: &Field) -> Option<TokenStream> {
    let field = f.stored.as_deref()?;
    let rust_field = f.ident.to_string();
    let none = quote!(::core::option::Option::None);
    let (kind, target, target_type, inverse, rule, order) = match &f.role {
        Role::Plain => return None,
        Role::Embed { attr, .. } => {
            let many = vec_element(f.ty).is_some();
            let max = opt_u32(attr.max.as_ref().map(|m| m.0));
            (
                quote!(::docrel::__private::RelationKind::Embed { many: #many, max: #max }),
                none.clone(),
                none.clone(),
                none.clone(),
                None,
                quote!(&[]),
            )
        }
        Role::Reference { attr, .. } => {
            let to = attr.to.as_ref()?;
            let kind = if attr.many.is_present() {
                let max = opt_u32(attr.max.as_ref().map(|m| m.0));
                let key = match (&attr.key, vec_element(f.ty)) {
                    (Some(k), _) => {
                        let k = k.to_string();
                        quote!(::core::option::Option::Some(#k))
                    }
                    (None, Some(elem)) if !crate::internals::ast::is_id_type(elem) => {
                        quote!(::core::option::Option::Some("id"))
                    }
                    _ => none.clone(),
                };
                quote!(::docrel::__private::RelationKind::RefMany { max: #max, key: #key })
            } else {
                let optional = option_inner(f.ty).is_some();
                quote!(::docrel::__private::RelationKind::RefOne { optional: #optional })
            };
            let target_name = quote!(#to).to_string().replace(' ', "");
            let inverse = match &attr.inverse {
                Some(inv) => quote_spanned!(inv.span()=> ::core::option::Option::Some(#to::fields().#inv.path())),
                None => none.clone(),
            };
            (
                kind,
                quote!(::core::option::Option::Some(<#to as ::docrel::Document>::COLLECTION)),
                quote!(::core::option::Option::Some(#target_name)),
                inverse,
                attr.on_delete.as_ref().map(|r| **r),
                quote!(&[]),
            )
        }
        Role::ParentRef { attr, .. } => {
            let to = attr.to.as_ref()?;
            let target_name = quote!(#to).to_string().replace(' ', "");
            let pairs = attr.sort.as_ref().map(sort_pairs).unwrap_or_default();
            (
                quote!(::docrel::__private::RelationKind::ParentRef),
                quote!(::core::option::Option::Some(<#to as ::docrel::Document>::COLLECTION)),
                quote!(::core::option::Option::Some(#target_name)),
                none.clone(),
                attr.on_delete.as_ref().map(|r| **r),
                quote!(&[#(#pairs),*]),
            )
        }
        Role::Bucket { .. } => (
            quote!(::docrel::__private::RelationKind::Bucket),
            none.clone(),
            none.clone(),
            none.clone(),
            None,
            quote!(&[]),
        ),
    };
    let rule = on_delete(rule);
    let subset = match &f.role {
        Role::Embed { attr, .. } => match (&attr.subset_of, vec_element(f.ty)) {
            (Some(child), Some(elem)) => {
                let child_name = quote!(#child).to_string().replace(' ', "");
                let pairs = attr.sort.as_ref().map(sort_pairs).unwrap_or_default();
                let keep_last = attr.keep.as_ref().is_some_and(|k| k == "last");
                let key = match &attr.key {
                    Some(k) => {
                        let k = k.to_string();
                        quote!(::core::option::Option::Some(#k))
                    }
                    None => none.clone(),
                };
                let max_bytes = opt_u32(attr.max_bytes.as_ref().map(|b| b.0));
                quote! {
                    ::core::option::Option::Some(::docrel::__private::SubsetSpec {
                        child: <#child as ::docrel::Document>::COLLECTION,
                        child_type: #child_name,
                        sort: &[#(#pairs),*],
                        keep_last: #keep_last,
                        key: #key,
                        fields: <#elem as ::docrel::View>::PROJECTION,
                        max_bytes: #max_bytes,
                    })
                }
            }
            _ => none.clone(),
        },
        _ => none.clone(),
    };
    let bucket = match &f.role {
        Role::Bucket { attr, .. } => {
            let stored = |named: Option<&syn::Ident>, default: &str| {
                let name = named.map(ToString::to_string).unwrap_or_else(|| default.to_owned());
                c.fields.iter().find(|g| g.ident == name.as_str()).map(|g| g.stored_name().to_owned()).unwrap_or(name)
            };
            let parent = c
                .fields
                .iter()
                .find(|g| matches!(g.role, Role::ParentRef { .. }))
                .map(|g| g.stored_name().to_owned())
                .unwrap_or_default();
            let count = stored(attr.count.as_ref(), "count");
            let page = stored(attr.page.as_ref(), "page");
            let start = stored(attr.start.as_ref(), "start");
            let size = opt_u32(attr.size.as_ref().map(|b| b.0));
            let window = match attr.window.as_ref().and_then(|w| crate::internals::check::window_ms(&w.value())) {
                Some(ms) => quote!(::core::option::Option::Some(#ms)),
                None => none.clone(),
            };
            let max_bytes = opt_u32(attr.max_bytes.as_ref().map(|b| b.0));
            quote! {
                ::core::option::Option::Some(::docrel::__private::BucketSpec {
                    parent: #parent,
                    count: #count,
                    page: #page,
                    start: #start,
                    size: #size,
                    window_ms: #window,
                    max_bytes: #max_bytes,
                })
            }
        }
        _ => none.clone(),
    };
    let copies = match (&f.role, vec_element(f.ty)) {
        (Role::Reference { attr, .. }, Some(elem))
            if attr.many.is_present() && !crate::internals::ast::is_id_type(elem) =>
        {
            quote!(<#elem as ::docrel::Embedded>::COPIES)
        }
        _ => quote!(&[]),
    };
    Some(quote! {
        ::docrel::__private::Relation {
            field: #field,
            rust_field: #rust_field,
            kind: #kind,
            target: #target,
            target_type: #target_type,
            inverse: #inverse,
            on_delete: #rule,
            order: #order,
            copies: #copies,
            subset: #subset,
            bucket: #bucket,
        }
    })
}

/// `"-time, name"` as `[("time", -1), ("name", 1)]`.
fn sort_pairs(sort: &syn::LitStr) -> Vec<TokenStream> {
    sort.value()
        .split(',')
        .map(|p| {
            let p = p.trim();
            let (name, dir) = match p.strip_prefix('-') {
                Some(n) => (n.to_owned(), -1i32),
                None => (p.trim_start_matches('+').to_owned(), 1i32),
            };
            quote!((#name, #dir))
        })
        .collect()
}
