//! Generation for `#[derive(Document)]`: the trait impls, the static schema
//! (registered at link time), the typed field handles and relation handles,
//! and the checks against the other types the attributes name.

use super::{stored_name, Checked, CollectionOf, Opt};
use crate::internals::model::{
    Bucket, Element, IdField, Model, ModelRelation, OnDelete, RelationKind, SortKey, Subset,
};
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;

pub fn expand(m: &Model) -> TokenStream {
    let mut checked = Checked::default();
    let ident = m.ident;
    let collection = &m.collection;
    let rust_name = ident.to_string();
    let relations: Vec<_> = m.relations.iter().map(|rel| relation(m, rel, &mut checked)).collect();
    let indexes = super::indexes::specs(&m.indexes);
    let fields = fields(m, &mut checked);
    let rels = super::relations::expand(m, &mut checked);
    let (advice_methods, warnings) = super::warn::warnings(ident, &m.advice, &mut checked);
    let advice = super::warn::descriptors(&m.advice, &mut checked);
    let (copies, copy_checks) = super::copies::document_copies(&m.copies, &mut checked);
    let element_checks = element_checks(m, &mut checked);
    let inverse_checks = inverse_checks(m, &mut checked);
    let subset_checks = super::subset::checks(m, &mut checked);
    let moved = super::moved::expand(m, &mut checked);
    let impls = trait_impls(m);
    let shard_key = &m.shard_key;
    let aliases = checked.decls();
    let stored_self = super::stored_self(ident);

    let items = quote! {
        #[allow(unused_imports)]
        use __docrel::NoElements as _;
        #stored_self
        #aliases

        #fields

        #rels

        static __DOCREL_SCHEMA: __docrel::Schema = __docrel::Schema {
            rust_name: #rust_name,
            module: ::core::module_path!(),
            collection: #collection,
            fields: <#ident>::__DOCREL_LINKS,
            relations: &[#(#relations),*],
            indexes: &[#(#indexes),*],
            copies: &[#(#copies),*],
            advice: &[#(#advice),*],
            shard_key: &[#(#shard_key),*],
        };

        #warnings

        #copy_checks
        #element_checks
        #inverse_checks
        #subset_checks

        __docrel::inventory::submit! {
            __docrel::Registered(&__DOCREL_SCHEMA)
        }
        #moved

        #impls
    };
    let out = super::wrap_in_const(m.krate.as_ref(), items);
    quote!(#advice_methods #out)
}

/// `View` (of itself, unprojected) and `Document`.
fn trait_impls(m: &Model) -> TokenStream {
    let (ident, collection, id_ty) = (m.ident, &m.collection, m.id.ty);
    let bound_checks = m.fields.iter().filter_map(|f| {
        let (max, name, stored) = (f.bound?, f.ident, &f.stored);
        let len = if f.optional_array {
            quote!(self.#name.as_ref().map_or(0, ::std::vec::Vec::len))
        } else {
            quote!(self.#name.len())
        };
        Some(quote! {
            __docrel::check_len(#collection, __docrel::Document::id(self), #stored, #max, #len)?;
        })
    });
    let stored = super::stored_bounds();
    let (id_value, generate_id) = id_items(&m.id);
    let key = &m.shard_key;
    let shard_key = (!key.is_empty()).then(|| quote! { const SHARD_KEY: &'static [&'static str] = &[#(#key),*]; });
    let two_way: Vec<String> =
        m.relations.iter().filter(|r| r.kind.inverse().is_some()).map(|r| rust_name(r.ident)).collect();
    let two_way = (!two_way.is_empty()).then(|| quote! { const TWO_WAY: &'static [&'static str] = &[#(#two_way),*]; });
    let routed = (key.is_empty() || *key == ["_id"]).then(|| {
        quote! {
            #[automatically_derived]
            impl __docrel::RoutedById for #ident #stored {}
        }
    });
    quote! {
        #routed

        #[automatically_derived]
        impl __docrel::View for #ident #stored {
            type Of = #ident;
            const PROJECTION: ::core::option::Option<&'static [&'static str]> = __docrel::None;
        }

        #[automatically_derived]
        impl __docrel::Document for #ident #stored {
            type Id = #id_ty;
            const COLLECTION: &'static str = #collection;
            #shard_key
            #two_way

            fn id(&self) -> ::core::option::Option<&Self::Id> {
                #id_value
            }
            #generate_id

            fn schema() -> &'static __docrel::Schema {
                &__DOCREL_SCHEMA
            }

            fn check_bounds(&self) -> __docrel::Result<()> {
                #(#bound_checks)*
                ::core::result::Result::Ok(())
            }

            // `docrel::Hooks` when the type implements it: the probe's
            // method is found on `&HookProbe` only then, else one `&` further.
            fn __hooks() -> ::core::option::Option<&'static (dyn ::core::any::Any + ::core::marker::Send + ::core::marker::Sync)> {
                #[allow(unused_imports)]
                use __docrel::{FoundHooks as _, NoHooks as _};
                (&__docrel::HookProbe::<Self>::new()).hooks()
            }
        }
    }
}

/// The body of `Document::id`, and for an `Option` id the generator of a
/// new one (whose `GeneratedId` bound, at the field's type, is the error
/// for an id docrel cannot make).
fn id_items(id: &IdField) -> (TokenStream, Option<TokenStream>) {
    let (name, ty) = (id.ident, id.ty);
    if !id.optional {
        return (quote!(::core::option::Option::Some(&self.#name)), None);
    }
    let generate = quote_spanned! {ty.span()=>
        #[doc(hidden)]
        fn generate_id() -> ::core::option::Option<Self::Id> {
            ::core::option::Option::Some(<#ty as __docrel::GeneratedId>::generate())
        }
    };
    (quote!(self.#name.as_ref()), Some(generate))
}

/// The typed field handles (`Part::fields().name`), `repo()`, and the
/// hidden facts other derives read: `__DOCREL_WRITE_HEAVY` and
/// `__DOCREL_LINKS` (what each stored field refers to).
fn fields(m: &Model, checked: &mut Checked) -> TokenStream {
    let ident = m.ident;
    let stored = super::stored_bounds();
    let vis = m.vis;
    let fields_ty = &m.names.fields;
    // Parallel lists, one repetition each: a stream per field (a closure's
    // `quote!`) would cost calls into the compiler for each (see `Opt`).
    let names: Vec<&syn::Ident> = m.fields.iter().map(|f| f.ident).collect();
    let vises = m.fields.iter().map(|f| f.vis);
    let tys = m.fields.iter().map(|f| f.ty);
    let docs = m.fields.iter().map(|f| format!("`{}` (stored as `{}`).", f.ident, f.stored));
    let paths: Vec<&String> = m.fields.iter().map(|f| &f.stored).collect();
    let maxes = m.fields.iter().map(|f| Opt(f.bound));
    let fields_doc = format!("Typed handles of the stored fields of [`{ident}`], from [`{ident}::fields`].");
    let write_heavy = m.fields.iter().filter(|f| f.write_heavy).map(|f| rust_name(f.ident));
    let mut links = Vec::new();
    for f in &m.fields {
        let rel = m.relations.iter().find(|r| r.ident == f.ident);
        let kind = match rel.map(|r| &r.kind) {
            Some(RelationKind::RefMany { element: Element::Ids { .. }, .. }) => "Ids",
            Some(RelationKind::RefMany { element: Element::Structs { .. }, .. }) => "Structs",
            Some(RelationKind::RefOne { .. }) => "One",
            Some(RelationKind::ParentRef { .. }) => "Parent",
            _ => "Plain",
        };
        let target = rel.and_then(|r| r.kind.target()).map(|t| CollectionOf(checked.doc(&t.path)));
        links.push(Link { rust: rust_name(f.ident), bson: &f.stored, type_name: &f.type_name, kind, target });
    }
    quote! {
        #[doc = #fields_doc]
        #[allow(dead_code)]
        #vis struct #fields_ty {
            #(#[doc = #docs] #vises #names: __docrel::Field<#ident, #tys>,)*
        }

        #[allow(dead_code)]
        impl #ident {
            /// Typed handles of the stored fields: their paths, and filters,
            /// updates and sorts built on them.
            pub const fn fields() -> __docrel::Handles<#fields_ty> {
                __docrel::Handles::new(&Self::__DOCREL_FIELDS)
            }

            #[doc(hidden)]
            pub const __DOCREL_FIELDS: #fields_ty = #fields_ty { #(#names: __docrel::Field::new(#paths, #maxes),)* };

            #[doc(hidden)]
            pub const __DOCREL_WRITE_HEAVY: &'static [&'static str] = &[#(#write_heavy),*];

            #[doc(hidden)]
            pub const __DOCREL_LINKS: &'static [__docrel::FieldInfo] = &[#(#links),*];

            /// The typed repository of this document type in `db`.
            pub fn repo(db: &__docrel::mongodb::Database) -> __docrel::Repository<#ident> #stored {
                __docrel::Repository::new(db)
            }
        }
    }
}

/// One entry of `__DOCREL_LINKS`, appended token by token (see `Opt`):
/// `__docrel::plain_field(rust, bson, type)` for a field that refers to
/// nothing, else `__docrel::link_field(rust, bson, type, kind, target)`.
struct Link<'a> {
    rust: String,
    bson: &'a String,
    type_name: &'a String,
    kind: &'static str,
    target: Option<CollectionOf>,
}

impl ToTokens for Link<'_> {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        use proc_macro2::{Delimiter, Group, Ident, Punct, Spacing, Span};
        use quote::TokenStreamExt;
        let span = Span::call_site();
        let plain = self.kind == "Plain" && self.target.is_none();
        tokens.append(Ident::new("__docrel", span));
        tokens.append(Punct::new(':', Spacing::Joint));
        tokens.append(Punct::new(':', Spacing::Alone));
        tokens.append(Ident::new(if plain { "plain_field" } else { "link_field" }, span));
        let mut args = TokenStream::new();
        args.append_separated([self.rust.as_str(), self.bson, self.type_name], Punct::new(',', Spacing::Alone));
        if !plain {
            let (kind, target) = (Ident::new(self.kind, span), Opt(self.target.as_ref()));
            args.extend(quote!(, __docrel::LinkKind::#kind, #target));
        }
        tokens.append(Group::new(Delimiter::Parenthesis, args));
    }
}

/// A field's name without `r#`.
fn rust_name(ident: &syn::Ident) -> String {
    ident.to_string().trim_start_matches("r#").to_owned()
}

/// Reference arrays of `{id, ..}` structs: every copy an element holds comes
/// from the document the array refers to; and the element's key, when its
/// struct has no such field (reported once, at the visit of the handle),
/// reads as written rather than failing again.
/// The references an element struct holds are kept in the elements of
/// arrays; one embedded struct holding one is refused, not left unkept.
fn one_embed_holds_no_reference(ident: &syn::Ident, rel: &ModelRelation) -> TokenStream {
    let ty = crate::internals::ty::option_inner(rel.ty).unwrap_or(rel.ty);
    let message = format!(
        "`{}` of `{ident}` embeds one `{}` whose fields hold references (`#[reference]`), which docrel keeps in the \
         elements of embedded arrays only: make it a `Vec` with `#[embed(max = 1)]`, or move the reference onto a \
         field of `{ident}`",
        rel.ident,
        quote!(#ty)
    );
    let condition = quote!(<__docrel::ElementsOf<#ty>>::REFS.is_empty());
    super::holds(ty.span(), &message, "holds references", condition)
}

fn element_checks(m: &Model, checked: &mut Checked) -> TokenStream {
    let ident = m.ident;
    let mut checks = Vec::new();
    let mut keys: Vec<&syn::Ident> = Vec::new();
    for rel in &m.relations {
        if let RelationKind::Embed { many: false, .. } = rel.kind {
            checks.push(one_embed_holds_no_reference(ident, rel));
            continue;
        }
        let RelationKind::RefMany { to, element: Element::Structs { ty: elem, key }, .. } = &rel.kind else { continue };
        let message = format!(
            "`{}` of `{ident}`: its elements copy fields from another document than `{}`, which the array refers to",
            rel.ident, to.name
        );
        let span = elem.span();
        let (elem, to) = (checked.embedded(elem), checked.doc(&to.path));
        let condition = quote_spanned! {span=>
            __docrel::copies_come_from(<#elem as __docrel::Embedded>::COPIES, <#to as __docrel::Document>::COLLECTION)
        };
        checks.push(super::holds(span, &message, "copies from another document", condition));
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    if keys.is_empty() {
        return quote!(#(#checks)*);
    }
    let fallbacks = keys.iter().map(|key| {
        let constant = super::element_stored_const(key);
        let written = rust_name(key);
        quote!(const #constant: &'static str = #written;)
    });
    quote! {
        #(#checks)*

        #[allow(non_upper_case_globals)]
        trait __DocrelElementKeys { #(#fallbacks)* }
        #[automatically_derived]
        impl<T: ?::core::marker::Sized> __DocrelElementKeys for T {}
    }
}

/// `inverse = x` names a reference of the other type back to this one,
/// holding ids: checked when the program is compiled, against the other
/// type's `__DOCREL_LINKS`, each verdict an error in words at the key (an
/// unknown name is `with_field`'s error there).
fn inverse_checks(m: &Model, checked: &mut Checked) -> TokenStream {
    let (ident, collection) = (m.ident, &m.collection);
    let checks = m.relations.iter().filter_map(|rel| {
        let (to, inverse) = rel.kind.inverse()?;
        let (name, other, span) = (rel.ident, &to.name, inverse.span());
        let links = checked.with_field(&to.path, inverse);
        let rust = rust_name(inverse);
        let shape = "the other side of a two-way reference is a `#[reference(..)]` (ids, or one id) or a \
                     `#[parent_ref(..)]`";
        let plain = format!(
            "`inverse = {rust}` on `{name}`: `{rust}` of `{other}` is not a reference, so it cannot keep the other \
             side of `{name}`: {shape} to `{ident}`; add `#[reference(.., to = {ident}, inverse = {name})]` to it, \
             or name the field that has it"
        );
        let elsewhere = format!(
            "`inverse = {rust}` on `{name}`: `{rust}` of `{other}` refers to another collection than `{ident}`'s \
             (`{collection}`), so docrel would write ids of `{ident}` into it: name the reference of `{other}` back \
             to `{ident}`"
        );
        let structs = format!(
            "`inverse = {rust}` on `{name}`: `{rust}` of `{other}` holds `{{id, ..}}` structs, whose other fields \
             link/unlink cannot make: {shape}"
        );
        let target = checked.doc(&to.path);
        let sharded = format!(
            "`{name}` is a two-way reference into `{other}`, which is sharded on more than `_id`: link/unlink write \
             `{other}` by `_id` alone, which cannot be routed to one shard; shard `{other}` on `_id` (a hashed `_id` \
             key spreads the writes), or make `{name}` one-way (drop `inverse`)"
        );
        // `inverse_check`'s codes: 1 no such stored field (a skipped one),
        // 2 not a reference, 3 one to another collection, 4 `{id, ..}` structs.
        let found = quote_spanned!(span=> __docrel::inverse_check(<#links>::__DOCREL_LINKS, #rust, #collection));
        // A sharded other side that declares the inverse too reports it at
        // its own derive: one mistake, one error.
        let routed = quote_spanned! {span=>
            __docrel::routes_by_id(<#target as __docrel::Document>::SHARD_KEY)
                || __docrel::contains(<#target as __docrel::Document>::TWO_WAY, #rust)
        };
        let checks = [
            super::holds(span, &plain, "not a reference", quote!(!::core::matches!(#found, 1 | 2))),
            super::holds(span, &elsewhere, "refers to another collection", quote!(#found != 3)),
            super::holds(span, &structs, "holds `{id, ..}` structs", quote!(#found != 4)),
            super::holds(span, &sharded, "cannot be routed to one shard", routed),
        ];
        Some(quote!(#(#checks)*))
    });
    quote!(#(#checks)*)
}

/// The schema entry of one relationship: a call of the runtime's
/// `ref_relation` or `embed_relation` when every field they leave at its
/// default is (the usual reference or embed), else the whole literal.
fn relation(m: &Model, rel: &ModelRelation, checked: &mut Checked) -> TokenStream {
    let field = &rel.stored;
    let rust_field = rel.ident.to_string();
    let warn_above = Opt(m.fields.iter().find(|f| f.ident == rel.ident).and_then(|f| f.warn_above));
    let defaults = matches!(rel.on_delete, OnDelete::Nothing) && rel.kind.inverse().is_none();
    match &rel.kind {
        RelationKind::Embed { many, max, subset: None } if defaults => {
            let (max, elements) = (Opt(*max), elements(rel, checked));
            return quote!(__docrel::embed_relation(#field, #rust_field, #many, #max, #elements, #warn_above));
        }
        RelationKind::RefOne { to, .. }
        | RelationKind::RefMany { to, element: Element::Ids { .. }, .. }
        | RelationKind::ParentRef { to, .. }
            if defaults && rel.embedded_element().is_none() && !has_order(&rel.kind) =>
        {
            let kind = relation_kind(&rel.kind, checked);
            let (target, target_type) = (CollectionOf(checked.doc(&to.path)), &to.name);
            return quote!(__docrel::ref_relation(#field, #rust_field, #kind, #target, #target_type, #warn_above));
        }
        _ => {}
    }
    relation_literal(rel, checked, (field, &rust_field), warn_above)
}

/// The references the elements of a relationship's field hold, when the
/// element struct derives `Embedded` (`NoElements` answers none for any other).
fn elements(rel: &ModelRelation, checked: &mut Checked) -> TokenStream {
    match (&rel.kind, rel.embedded_element()) {
        (_, Some(elem)) => quote!(<__docrel::ElementsOf<#elem>>::REFS),
        (RelationKind::RefMany { element: Element::Structs { ty, .. }, .. }, None) => {
            let elem = checked.embedded(ty);
            quote!(<#elem as __docrel::Embedded>::REFS)
        }
        _ => quote!(&[]),
    }
}

/// A parent reference with a declared order (which `ref_relation` has not).
fn has_order(kind: &RelationKind) -> bool {
    matches!(kind, RelationKind::ParentRef { order, .. } if !order.is_empty())
}

/// The schema entry of a relationship with fields off their defaults, as a
/// literal of every field.
fn relation_literal(
    rel: &ModelRelation,
    checked: &mut Checked,
    (field, rust_field): (&String, &String),
    warn_above: Opt<u32>,
) -> TokenStream {
    let kind = relation_kind(&rel.kind, checked);
    let target = Opt(rel.kind.target().map(|t| CollectionOf(checked.doc(&t.path))));
    let target_type = Opt(rel.kind.target().map(|t| &t.name));
    let inverse = Opt(rel.kind.inverse().map(|(to, inverse)| {
        let links = checked.with_field(&to.path, inverse);
        let rust = rust_name(inverse);
        quote!(__docrel::link_path(<#links>::__DOCREL_LINKS, #rust))
    }));
    let on_delete = syn::Ident::new(
        match rel.on_delete {
            OnDelete::Nothing => "Nothing",
            OnDelete::Pull => "Pull",
            OnDelete::Cascade => "Cascade",
            OnDelete::Restrict => "Restrict",
        },
        proc_macro2::Span::call_site(),
    );
    let order = match &rel.kind {
        RelationKind::ParentRef { order, .. } => sort_pairs(order, checked),
        _ => quote!(&[]),
    };
    let copies = match &rel.kind {
        RelationKind::RefMany { element: Element::Structs { ty, .. }, .. } => {
            let elem = checked.embedded(ty);
            quote!(<#elem as __docrel::Embedded>::COPIES)
        }
        _ => quote!(&[]),
    };
    let subset = Opt(match &rel.kind {
        RelationKind::Embed { subset: Some(subset), .. } => Some(subset_spec(subset, checked)),
        _ => None,
    });
    let elements = elements(rel, checked);
    let bucket = Opt(match &rel.kind {
        RelationKind::Bucket(bucket) => Some(bucket_spec(bucket)),
        _ => None,
    });
    quote! {
        __docrel::Relation {
            field: #field,
            rust_field: #rust_field,
            kind: #kind,
            target: #target,
            target_type: #target_type,
            inverse: #inverse,
            on_delete: __docrel::OnDelete::#on_delete,
            order: #order,
            copies: #copies,
            elements: #elements,
            subset: #subset,
            bucket: #bucket,
            warn_above: #warn_above,
        }
    }
}

fn relation_kind(kind: &RelationKind, checked: &mut Checked) -> TokenStream {
    match kind {
        RelationKind::Embed { many, max, .. } => {
            let max = Opt(*max);
            quote!(__docrel::RelationKind::Embed { many: #many, max: #max })
        }
        RelationKind::RefMany { max, element, .. } => {
            let max = Opt(*max);
            let key = Opt(element.key().as_ref().map(|k| stored_name(k, checked)));
            quote!(__docrel::RelationKind::RefMany { max: #max, key: #key })
        }
        RelationKind::RefOne { optional, .. } => {
            quote!(__docrel::RelationKind::RefOne { optional: #optional })
        }
        RelationKind::ParentRef { .. } => quote!(__docrel::RelationKind::ParentRef),
        RelationKind::Bucket(_) => quote!(__docrel::RelationKind::Bucket),
    }
}

/// `[("time", -1), ("name", 1)]`.
fn sort_pairs(keys: &[SortKey], checked: &mut Checked) -> TokenStream {
    let pairs = keys.iter().map(|k| {
        let (name, direction) = (stored_name(&k.name, checked), k.direction);
        quote!((#name, #direction))
    });
    let pairs: Vec<_> = pairs.collect();
    quote!(&[#(#pairs),*])
}

fn subset_spec(s: &Subset, checked: &mut Checked) -> TokenStream {
    let child = checked.doc(&s.child.path);
    let child_name = &s.child.name;
    let elem = checked.view_of(s.elem, &s.child.path);
    let sort = sort_pairs(&s.sort, checked);
    let keep_last = s.keep_last;
    let key = Opt(s.key.as_ref().map(|k| stored_name(k, checked)));
    let max_bytes = Opt(s.max_bytes);
    quote! {
        __docrel::SubsetSpec {
            child: <#child as __docrel::Document>::COLLECTION,
            child_type: #child_name,
            sort: #sort,
            keep_last: #keep_last,
            key: #key,
            fields: <#elem as __docrel::View>::PROJECTION,
            max_bytes: #max_bytes,
        }
    }
}

fn bucket_spec(b: &Bucket) -> TokenStream {
    let (parent, count, page, start) = (&b.parent_field, &b.count, &b.page, &b.start);
    let (size, window, max_bytes) = (Opt(b.size), Opt(b.window_ms), Opt(b.max_bytes));
    let counter = b.counter.is_some();
    let sum = Opt(b.counter.as_ref().and_then(|c| c.sum.as_ref()).map(|(stored, _)| stored));
    quote! {
        __docrel::BucketSpec {
            parent: #parent,
            count: #count,
            page: #page,
            start: #start,
            size: #size,
            window_ms: #window,
            max_bytes: #max_bytes,
            counter: #counter,
            sum: #sum,
        }
    }
}
