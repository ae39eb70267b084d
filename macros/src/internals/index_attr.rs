//! `index(..)` as written, on the struct (`#[document(index(fields(tenant,
//! -created), unique))]`) or on a field (`#[document(index(desc, sparse))]`),
//! and a field's `text` / `text(weight = 10)`. The options are parsed here
//! by hand rather than by darling: a key may be descending (`-created`) or
//! a path (`address.city`), and `partial = doc! {..}` is an expression.
//! Every mistake is one error at its own tokens; the rules across options
//! and fields are `index_check`'s.

use super::index_values::{collation, drained, expire_after, partial, value, CollationDecl, PartialDecl};
use super::suggest::did_you_mean;
use darling::FromMeta;
use proc_macro2::Span;
use syn::parse::{ParseStream, Parser};
use syn::spanned::Spanned;
use syn::{Ident, LitInt, LitStr, Meta, Token};

/// Where an `index(..)` is written: the options differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Struct,
    Field,
}

/// One index as declared, every option with its span.
#[derive(Debug, Clone)]
pub struct IndexDecl {
    /// The `index` (or `unique`) word.
    pub span: Span,
    /// `fields(..)`: the keys in order (struct level).
    pub keys: Vec<KeyDecl>,
    /// `text(..)`: the text fields and their weights (struct level).
    pub text: Vec<TextKeyDecl>,
    pub text_span: Option<Span>,
    pub name: Option<LitStr>,
    pub unique: Option<Span>,
    pub sparse: Option<Span>,
    /// `desc` (field level): the field's key is descending.
    pub desc: Option<Span>,
    /// `expire_after`: seconds, and the span of the key.
    pub expire_after: Option<(u64, Span)>,
    pub partial: Option<PartialDecl>,
    pub collation: Option<CollationDecl>,
    pub default_language: Option<LitStr>,
    pub language_override: Option<LitStr>,
}

/// A key: `-created` is descending; `address.city` a path into the field.
#[derive(Debug, Clone)]
pub struct KeyDecl {
    pub path: Vec<Ident>,
    pub descending: bool,
}

/// A text field and its weight (`title = 10`; 1 when not given).
#[derive(Debug, Clone)]
pub struct TextKeyDecl {
    pub path: Vec<Ident>,
    pub weight: u32,
}

const STRUCT_OPTIONS: &[&str] = &[
    "fields",
    "text",
    "name",
    "unique",
    "sparse",
    "expire_after",
    "partial",
    "collation",
    "default_language",
    "language_override",
];
const FIELD_OPTIONS: &[&str] = &["desc", "name", "unique", "sparse", "expire_after", "partial", "collation"];

/// `index(..)` on the struct.
#[derive(Debug, Clone)]
pub struct StructIndex(pub IndexDecl);

/// `index` or `index(..)` on a field.
#[derive(Debug, Clone)]
pub struct FieldIndex(pub IndexDecl);

/// `text` or `text(weight = 10)` on a field.
#[derive(Debug, Clone)]
pub struct FieldText {
    pub span: Span,
    pub weight: u32,
}

impl FromMeta for StructIndex {
    fn from_meta(item: &Meta) -> darling::Result<Self> {
        match item {
            Meta::List(list) => parse_options(list, Level::Struct).map(StructIndex),
            _ => Err(darling::Error::custom(
                "an index on the struct names its fields: write `index(fields(tenant, -created))`, `-` for \
                 descending (or `#[document(index)]` on a field for a one-field index)",
            )
            .with_span(item)),
        }
    }
}

impl FromMeta for FieldIndex {
    fn from_meta(item: &Meta) -> darling::Result<Self> {
        match item {
            Meta::Path(p) => Ok(FieldIndex(IndexDecl::new(p.span()))),
            Meta::List(list) => parse_options(list, Level::Field).map(FieldIndex),
            Meta::NameValue(_) => Err(darling::Error::custom(
                "write `index` for an ascending index on this field, or `index(desc, unique, ..)` with options",
            )
            .with_span(item)),
        }
    }
}

impl FromMeta for FieldText {
    fn from_meta(item: &Meta) -> darling::Result<Self> {
        let span = item.path().span();
        let list = match item {
            Meta::Path(_) => return Ok(FieldText { span, weight: 1 }),
            Meta::List(list) => list,
            Meta::NameValue(_) => {
                return Err(darling::Error::custom("write `text`, or `text(weight = 10)`").with_span(item))
            }
        };
        let weight = (|input: ParseStream| {
            let key: Ident = input.parse()?;
            if key != "weight" {
                return Err(syn::Error::new(
                    key.span(),
                    format!("unknown text option `{key}`: a field's text key takes `weight = N` only"),
                ));
            }
            input.parse::<Token![=]>()?;
            let weight = parse_weight(input)?;
            let _ = input.parse::<Option<Token![,]>>()?;
            Ok(weight)
        })
        .parse2(list.tokens.clone())?;
        Ok(FieldText { span, weight })
    }
}

impl IndexDecl {
    /// No option yet: an ascending index (on a field, or of the fields
    /// marked `#[document(text)]`).
    pub fn new(span: Span) -> Self {
        IndexDecl {
            span,
            keys: Vec::new(),
            text: Vec::new(),
            text_span: None,
            name: None,
            unique: None,
            sparse: None,
            desc: None,
            expire_after: None,
            partial: None,
            collation: None,
            default_language: None,
            language_override: None,
        }
    }
}

/// Parses the options of `index(..)`; every unknown or repeated option is
/// reported, the others still parsed.
fn parse_options(list: &syn::MetaList, level: Level) -> darling::Result<IndexDecl> {
    let mut decl = IndexDecl::new(list.path.span());
    let mut errors = Vec::new();
    let parser = |input: ParseStream| {
        let mut seen: Vec<String> = Vec::new();
        while !input.is_empty() {
            let key: Ident = input.call(syn::ext::IdentExt::parse_any)?;
            let name = key.to_string();
            if seen.contains(&name) {
                errors.push(syn::Error::new(key.span(), format!("`{name}` is given twice in this index: keep one")));
            }
            seen.push(name);
            if let Err(e) = option(&mut decl, &key, input, level) {
                errors.push(e);
                skip_to_comma(input);
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(())
    };
    if let Err(e) = parser.parse2(list.tokens.clone()) {
        errors.push(e);
    }
    if errors.is_empty() {
        Ok(decl)
    } else {
        Err(darling::Error::multiple(errors.into_iter().map(darling::Error::from).collect()))
    }
}

/// One option; its value is parsed from `input`.
fn option(decl: &mut IndexDecl, key: &Ident, input: ParseStream, level: Level) -> syn::Result<()> {
    let span = key.span();
    match (key.to_string().as_str(), level) {
        ("fields", Level::Struct) => decl.keys = parenthesized(input, parse_key)?,
        ("text", Level::Struct) => {
            decl.text_span = Some(span);
            decl.text = parenthesized(input, parse_text_key)?;
        }
        ("name", _) => decl.name = Some(value(input)?),
        ("unique", _) => decl.unique = Some(span),
        ("sparse", _) => decl.sparse = Some(span),
        ("desc", Level::Field) => decl.desc = Some(span),
        ("expire_after", _) => decl.expire_after = Some((expire_after(input)?, span)),
        ("partial", _) => decl.partial = Some(partial(input)?),
        ("collation", _) => decl.collation = Some(collation(input, span)?),
        ("default_language", Level::Struct) => decl.default_language = Some(value(input)?),
        ("language_override", Level::Struct) => decl.language_override = Some(value(input)?),
        ("fields", Level::Field) => {
            return Err(syn::Error::new(
                span,
                "a field's index is on that field: declare a compound index on the struct, \
                 `#[document(index(fields(a, b)))]`",
            ))
        }
        ("text" | "default_language" | "language_override", Level::Field) => {
            return Err(syn::Error::new(
                span,
                "a text index is declared with `#[document(text)]` on each of its fields, or with \
                 `#[document(index(text(title = 10, body), ..))]` on the struct",
            ))
        }
        ("desc", Level::Struct) => {
            return Err(syn::Error::new(span, "on the struct, a descending key is written `fields(-created)`"))
        }
        (other, _) => {
            let options = if level == Level::Struct { STRUCT_OPTIONS } else { FIELD_OPTIONS };
            let hint = match did_you_mean(other, options.iter().copied()) {
                Some(best) => format!("did you mean `{best}`? "),
                None => String::new(),
            };
            return Err(syn::Error::new(
                span,
                format!("unknown index option `{other}`: {hint}an index takes {}", options.join(", ")),
            ));
        }
    }
    Ok(())
}

/// Skips what is left of a broken option, up to the next comma.
fn skip_to_comma(input: ParseStream) {
    let _ = input.step(|cursor| {
        let mut rest = *cursor;
        while let Some((tt, next)) = rest.token_tree() {
            if matches!(&tt, proc_macro2::TokenTree::Punct(p) if p.as_char() == ',') {
                return Ok(((), rest));
            }
            rest = next;
        }
        Ok(((), rest))
    });
}

fn parenthesized<T>(input: ParseStream, item: fn(ParseStream) -> syn::Result<T>) -> syn::Result<Vec<T>> {
    let content;
    syn::parenthesized!(content in input);
    let items = drained(&content, |content| content.parse_terminated(item, Token![,]))?;
    if items.is_empty() {
        return Err(content.error("name at least one field"));
    }
    Ok(items.into_iter().collect())
}

/// `address.city`: a field, then names inside it.
fn parse_path(input: ParseStream) -> syn::Result<Vec<Ident>> {
    if input.peek(LitStr) {
        let lit: LitStr = input.parse()?;
        return Err(syn::Error::new(
            lit.span(),
            format!("name the field as the struct does, without quotes: `{}`", lit.value()),
        ));
    }
    let mut path = vec![input.call(syn::ext::IdentExt::parse_any)?];
    while input.peek(Token![.]) {
        input.parse::<Token![.]>()?;
        path.push(input.call(syn::ext::IdentExt::parse_any)?);
    }
    Ok(path)
}

fn parse_key(input: ParseStream) -> syn::Result<KeyDecl> {
    let descending = input.parse::<Option<Token![-]>>()?.is_some();
    Ok(KeyDecl { path: parse_path(input)?, descending })
}

fn parse_text_key(input: ParseStream) -> syn::Result<TextKeyDecl> {
    if input.peek(Token![-]) {
        return Err(input.error("a text key has no direction: name the field, with `= weight` if it weighs more"));
    }
    let path = parse_path(input)?;
    let weight = if input.parse::<Option<Token![=]>>()?.is_some() { parse_weight(input)? } else { 1 };
    Ok(TextKeyDecl { path, weight })
}

fn parse_weight(input: ParseStream) -> syn::Result<u32> {
    let lit: LitInt = input.parse()?;
    match lit.base10_parse::<u32>() {
        Ok(w @ 1..=99_999) => Ok(w),
        _ => Err(syn::Error::new(lit.span(), "a text weight is a whole number from 1 to 99999")),
    }
}
