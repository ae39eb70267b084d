//! Generate: the code for checked models. Nothing here reports user errors,
//! and nothing reads the attributes: every fact comes from the model.
//!
//! Hygiene: everything a derive generates sits inside one `const _: () =
//! { .. };` block (its handle types too, so they never clash with the
//! user's), except the advice methods, which are inherent methods of the
//! user's type so that rustc prints their shortest path (see `warn.rs`):
//! the alias does not reach them, so they name nothing of docrel. Local
//! names start with `__docrel`/`__Docrel`.
//! docrel is reached through one alias, `__docrel`, of its hidden module
//! (`__private`), which [`wrap_in_const`] declares at the head of the block:
//! short paths are fewer tokens to emit and parse, for every document, and
//! `#[document(crate = "..")]` changes that one path rather than every
//! token. `::core`, there whatever the user names their dependencies, is
//! the one crate named by absolute path. The block allows
//! `unused_qualifications`, which a library may deny: its paths stay
//! qualified where the user's module imports the same name (`Serialize`,
//! `Document`), and the checks spanned at the user's tokens would otherwise
//! be reported there.

pub mod copies;
pub mod document;
pub mod elements;
pub mod embedded;
pub mod fallback;
pub mod indexes;
pub mod moved;
pub mod relations;
pub mod subset;
pub mod view;
pub mod warn;

use crate::internals::model::StoredName;
use proc_macro2::{Spacing, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{Ident, Path, Type};

/// `items` in the derive's one `const _: () = { .. };` block, under the
/// alias `__docrel` of docrel's hidden module, reached from the root
/// `::docrel` or from the path of `crate = ".."`: the one place that names
/// the crate, as serde_derive's `wrap_in_const` does.
pub fn wrap_in_const(krate: Option<&Path>, items: TokenStream) -> TokenStream {
    let krate = match krate {
        Some(krate) => krate.to_token_stream(),
        None => quote!(::docrel),
    };
    quote! {
        #[allow(unused_qualifications)]
        const _: () = {
            use #krate::__private as __docrel;
            #items
        };
    }
}

/// `__docrel::Some(v)` or `__docrel::None`, appended to the stream it is
/// interpolated in token by token: building it as a stream of its own
/// (`quote!`) and interpolating that costs calls into the compiler per
/// stream, which a crate of documents pays for every field.
pub struct Opt<T>(pub Option<T>);

impl<T: ToTokens> ToTokens for Opt<T> {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        use proc_macro2::{Delimiter, Group, Span};
        use quote::TokenStreamExt;
        let span = Span::call_site();
        tokens.append(Ident::new("__docrel", span));
        append_colons(tokens);
        match &self.0 {
            Some(value) => {
                tokens.append(Ident::new("Some", span));
                tokens.append(Group::new(Delimiter::Parenthesis, value.to_token_stream()));
            }
            None => tokens.append(Ident::new("None", span)),
        }
    }
}

/// `<alias as __docrel::Document>::COLLECTION`, appended token by token
/// (see [`Opt`]).
pub struct CollectionOf(pub Ident);

impl ToTokens for CollectionOf {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        use proc_macro2::{Punct, Span};
        use quote::TokenStreamExt;
        let span = Span::call_site();
        tokens.append(Punct::new('<', Spacing::Alone));
        tokens.append(self.0.clone());
        tokens.append(Ident::new("as", span));
        tokens.append(Ident::new("__docrel", span));
        append_colons(tokens);
        tokens.append(Ident::new("Document", span));
        tokens.append(Punct::new('>', Spacing::Alone));
        append_colons(tokens);
        tokens.append(Ident::new("COLLECTION", span));
    }
}

/// `::`, as two joined punctuation tokens.
fn append_colons(tokens: &mut TokenStream) {
    use quote::TokenStreamExt;
    tokens.append(proc_macro2::Punct::new(':', Spacing::Joint));
    tokens.append(proc_macro2::Punct::new(':', Spacing::Alone));
}

/// A stored name as a `&'static str` constant expression. Another type's
/// is read from its derive, spanned at the name as written, so a name that
/// is not a field of that type is reported there.
fn stored_name(name: &StoredName, checked: &mut Checked) -> TokenStream {
    match name {
        StoredName::Here(name) => quote!(#name),
        StoredName::OfDocument { doc, name, span } => {
            let doc = checked.doc(doc);
            quote_spanned!(*span=> __docrel::field_named(<#doc>::__DOCREL_LINKS, #name))
        }
        StoredName::OfElement { elem, field } => {
            let elem = checked.embedded(elem);
            let constant = element_stored_const(field);
            quote_spanned!(field.span()=> <#elem>::#constant)
        }
    }
}

/// `condition` (a `const` expression of type `bool`) holds, or this is one
/// error at `span` saying `message`: a trait bound declared here with the
/// message, which only `Verdict<true>` meets, rather than a panic of
/// `const` evaluation, whose error does not read as the user's mistake.
fn holds(span: proc_macro2::Span, message: &str, label: &str, condition: TokenStream) -> TokenStream {
    // The attribute reads `{..}` as a parameter of the trait: `{{` is a brace.
    let escape = |text: &str| text.replace('{', "{{").replace('}', "}}");
    let (message, label) = (escape(message), escape(label));
    let check = quote_spanned!(span=> __docrel_holds::<__docrel::Verdict<{ #condition }>>());
    quote! {
        const _: () = {
            #[diagnostic::on_unimplemented(message = #message, label = #label)]
            trait __DocrelHolds {}
            #[automatically_derived]
            impl __DocrelHolds for __docrel::Verdict<true> {}
            const fn __docrel_holds<T: __DocrelHolds>() {}
            #check
        };
    }
}

/// The hidden constant of `#[derive(Embedded)]` holding a field's stored name
/// (`__docrel_stored_part_id`).
fn element_stored_const(field: &Ident) -> Ident {
    let name = field.to_string();
    format_ident!("__docrel_stored_{}", name.trim_start_matches("r#"), span = field.span())
}

/// The name of a document's own alias: the struct once it is stored with
/// serde, an error type otherwise (see [`stored_self`]).
const STORED_SELF: &str = "__DocrelStored";

/// `type __DocrelStored = ..;`: `ident`, once it derives `Serialize` and
/// `Deserialize`. A missing derive is the one error, at the struct's name;
/// the alias is then an error type, and the bound `__DocrelStored: Sized`
/// of every generated item that needs serde, the `DerivesDocument::Doc` other
/// derives read, are satisfied without a word: a bound written on the struct
/// itself would be reported once more at each derive naming it.
fn stored_self(ident: &Ident) -> TokenStream {
    let alias = Ident::new(STORED_SELF, proc_macro2::Span::call_site());
    let check = quote_spanned!(ident.span()=> __docrel::is_stored::<#ident>());
    quote! {
        #[allow(dead_code)]
        type #alias = <__docrel::Pick<#ident, { #check }> as __docrel::Resolve>::Out;

        #[automatically_derived]
        impl __docrel::DerivesDocument for #ident {
            type Doc = #alias;
        }
    }
}

/// `where __DocrelStored: Sized`, on every generated item that needs the
/// document stored with serde (see [`stored_self`]). What silences the
/// item's errors when serde's derive is missing is the error type the alias
/// then is, whatever the bound: `Sized`, which rustc proves without looking
/// at an impl, rather than `Stored` (`Serialize + DeserializeOwned`, proved
/// again wherever the item is used) costs a crate of documents less to check.
fn stored_bounds() -> TokenStream {
    let alias = Ident::new(STORED_SELF, proc_macro2::Span::call_site());
    quote!(where #alias: ::core::marker::Sized)
}

/// The types a derive uses as documents, element structs or views, and the
/// checks across types, each written once as a type alias:
/// `type __DocrelDoc0 = <Pick<Part, { is_document::<Part>() }> as Resolve>::Out;`.
/// The generated code names the alias everywhere else. When a check fails,
/// its one error is reported at the attribute and the alias is an error
/// type, about which rustc reports nothing more: one mistake, one error.
#[derive(Default)]
pub struct Checked {
    decls: Vec<TokenStream>,
    seen: Vec<(String, Ident)>,
}

impl Checked {
    /// `path` as a document (`to = Part`, `from = Part::name`, `of = Part`):
    /// what its derive made of it, an error type when that derive reported
    /// one (a missing `Serialize`), about which nothing more is said here.
    pub fn doc(&mut self, path: &Path) -> Ident {
        let key = format!("doc {}", path.to_token_stream());
        self.declare(key, "Doc", || {
            let check = quote_spanned!(path.span()=> __docrel::is_document::<#path>());
            let picked = picked(quote!(#path), check);
            quote!(<#picked as __docrel::DerivesDocument>::Doc)
        })
    }

    /// `ty` as the element struct of a reference array.
    pub fn embedded(&mut self, ty: &Type) -> Ident {
        let key = format!("elem {}", ty.to_token_stream());
        self.alias(key, "Elem", || (quote!(#ty), quote_spanned!(ty.span()=> __docrel::is_embedded::<#ty>())))
    }

    /// `ty` as a view of the document `of` (the summaries of a subset).
    pub fn view_of(&mut self, ty: &Type, of: &Path) -> Ident {
        let key = format!("view {} of {}", ty.to_token_stream(), of.to_token_stream());
        let of = self.doc(of);
        self.alias(key, "View", || (quote!(#ty), quote_spanned!(ty.span()=> __docrel::is_view_of::<#ty, #of>())))
    }

    /// The document `to`, once it has the field `field` (`inverse = field`).
    pub fn with_field(&mut self, to: &Path, field: &Ident) -> Ident {
        let key = format!("field {} {}", to.to_token_stream(), field);
        let to = self.doc(to);
        self.alias(key, "Field", || {
            (to.to_token_stream(), quote_spanned!(field.span()=> __docrel::has_field(<#to>::__DOCREL_FIELDS.#field)))
        })
    }

    /// `base`, once `check` (a `const` expression of type `bool`, `true`
    /// when it compiles) compiles; `parts` builds the two, only for a new
    /// `key`.
    pub fn checked(&mut self, key: String, parts: impl FnOnce() -> (TokenStream, TokenStream)) -> Ident {
        self.alias(key, "Check", parts)
    }

    fn alias(&mut self, key: String, kind: &str, parts: impl FnOnce() -> (TokenStream, TokenStream)) -> Ident {
        self.declare(key, kind, || {
            let (base, check) = parts();
            picked(base, check)
        })
    }

    /// The alias of `ty`, declared once per `key`. `ty` is built only the
    /// first time: a document named by several attributes (`to`, `from`,
    /// the links table) costs one alias and one set of tokens.
    fn declare(&mut self, key: String, kind: &str, ty: impl FnOnce() -> TokenStream) -> Ident {
        if let Some((_, alias)) = self.seen.iter().find(|(k, _)| *k == key) {
            return alias.clone();
        }
        let ty = ty();
        let alias = format_ident!("__Docrel{}{}", kind, self.seen.len());
        self.decls.push(quote! {
            #[allow(dead_code, non_camel_case_types)]
            type #alias = #ty;
        });
        self.seen.push((key, alias.clone()));
        alias
    }

    /// The alias declarations (inside the derive's `const _` block).
    pub fn decls(&self) -> TokenStream {
        let decls = &self.decls;
        quote!(#(#decls)*)
    }
}

/// `base` once `check` compiles: `<Pick<base, { check }> as Resolve>::Out`.
fn picked(base: TokenStream, check: TokenStream) -> TokenStream {
    quote!(<__docrel::Pick<#base, { #check }> as __docrel::Resolve>::Out)
}

/// `tokens`, every one spanned at `span`.
fn respan(tokens: TokenStream, span: proc_macro2::Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tt| {
            if let TokenTree::Group(g) = &tt {
                let mut group = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                tt = TokenTree::Group(group);
            } else {
                tt.set_span(span);
            }
            tt
        })
        .collect()
}
