//! The declared indexes, resolved into the model: keys named by the Rust
//! fields become stored paths, and the rules MongoDB would enforce only
//! when `ensure_indexes` runs (a TTL index has one date field, a text
//! index has no collation, one text index per collection, ...) are errors
//! at the attribute.

use super::ast::{Container, Field};
use super::ctxt::Ctxt;
use super::index_attr::{IndexDecl, KeyDecl};
use super::model::ModelIndex;
use super::suggest::did_you_mean;
use proc_macro2::Span;
use syn::Ident;

/// Every index `c` declares; `None` when one of them is wrong (each
/// mistake is reported).
pub fn indexes<'a>(c: &'a Container<'a>, cx: &Ctxt) -> Option<Vec<ModelIndex<'a>>> {
    let mut out = Vec::new();
    let mut ok = true;
    let mut spans = Vec::new();
    for f in &c.fields {
        let decl = f.doc.index.as_ref().map(|i| &i.0);
        let unique = f.doc.unique.is_present();
        if decl.is_none() && !unique {
            continue;
        }
        let span = decl.map_or(f.ident.span(), |d| d.span);
        let Some(stored) = stored_or_report(f, span, cx) else {
            ok = false;
            continue;
        };
        let descending = decl.is_some_and(|d| d.desc.is_some());
        let keys = vec![(stored, if descending { -1 } else { 1 })];
        let plain = IndexDecl::new(span);
        let decl = decl.unwrap_or(&plain);
        match index(c, decl, keys, Vec::new(), Some(f.ident), cx) {
            Some(mut ix) => {
                ix.unique |= unique;
                out.push(ix);
                spans.push((span, None));
            }
            None => ok = false,
        }
    }
    for decl in c.attr.index.iter().map(|i| &i.0) {
        match struct_index(c, decl, cx) {
            Some(ix) => {
                spans.push((decl.span, decl.text_span));
                out.push(ix);
            }
            None => ok = false,
        }
    }
    match field_text(c, cx) {
        Some(Some((ix, span))) => {
            spans.push((span, Some(span)));
            out.push(ix);
        }
        Some(None) => {}
        None => ok = false,
    }
    ok &= distinct(&out, &spans, cx);
    ok.then_some(out)
}

/// The stored name of a field an index names, or the reason it has none.
fn stored_or_report(f: &Field, span: Span, cx: &Ctxt) -> Option<String> {
    if f.stored.is_none() {
        cx.error_at(
            span,
            format!("`{}` is not stored on its own (`#[serde(skip)]` or `flatten`): it cannot be indexed", f.ident),
        );
    }
    f.stored.clone()
}

/// `index(fields(..), text(..), ..)` on the struct.
fn struct_index<'a>(c: &'a Container<'a>, decl: &'a IndexDecl, cx: &Ctxt) -> Option<ModelIndex<'a>> {
    if decl.keys.is_empty() && decl.text.is_empty() {
        cx.error_at(
            decl.span,
            "an index needs its fields: `index(fields(tenant, -created), ..)`, `-` for descending, or \
             `index(text(title, body))` for a text index",
        );
        return None;
    }
    let keys: Option<Vec<(String, i32)>> =
        decl.keys.iter().map(|k| key_path(c, k, cx).map(|p| (p, if k.descending { -1 } else { 1 }))).collect();
    let text: Option<Vec<(String, u32)>> = decl
        .text
        .iter()
        .map(|t| key_path(c, &KeyDecl { path: t.path.clone(), descending: false }, cx).map(|p| (p, t.weight)))
        .collect();
    let (keys, text) = (keys?, text?);
    let spans = decl.keys.iter().map(|k| &k.path[0]).chain(decl.text.iter().map(|t| &t.path[0]));
    let names: Vec<&String> = keys.iter().map(|(k, _)| k).chain(text.iter().map(|(k, _)| k)).collect();
    for (i, ident) in spans.enumerate() {
        if names[..i].contains(&names[i]) {
            cx.error_at(ident.span(), format!("`{}` appears twice in this index: name each field once", names[i]));
            return None;
        }
    }
    index(c, decl, keys, text, None, cx)
}

/// The stored path of a key: its field's stored name, then the names after
/// it as written (`address.city`).
fn key_path(c: &Container, key: &KeyDecl, cx: &Ctxt) -> Option<String> {
    let first = &key.path[0];
    let Some(f) = c.fields.iter().find(|f| f.ident == first) else {
        let names: Vec<String> = c.fields.iter().filter(|f| f.stored.is_some()).map(|f| f.ident.to_string()).collect();
        let hint = match did_you_mean(&first.to_string(), names.iter().map(String::as_str)) {
            Some(best) => format!("did you mean `{best}`?"),
            None => format!("its fields are {}", names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")),
        };
        cx.error_at(first.span(), format!("`{}` has no field `{first}`: {hint}", c.ident));
        return None;
    };
    let mut path = stored_or_report(f, first.span(), cx)?;
    for part in &key.path[1..] {
        path.push('.');
        path.push_str(&part.to_string());
    }
    Some(path)
}

/// The index of `decl` on `keys` and `text`, after the rules across its options.
fn index<'a>(
    c: &'a Container<'a>,
    decl: &IndexDecl,
    keys: Vec<(String, i32)>,
    text: Vec<(String, u32)>,
    field: Option<&'a Ident>,
    cx: &Ctxt,
) -> Option<ModelIndex<'a>> {
    let mut ok = true;
    let mut fail = |span: Span, message: String| {
        cx.error_at(span, message);
        ok = false;
    };
    if let Some(collation) = decl.collation.as_ref().filter(|_| !text.is_empty()) {
        fail(
            collation.span.unwrap_or(decl.span),
            "a text index compares strings as bytes and takes no collation: drop `collation(..)`, or declare the \
             collation on another index"
                .to_owned(),
        );
    }
    for lang in [&decl.default_language, &decl.language_override].into_iter().flatten() {
        if text.is_empty() {
            fail(
                lang.span(),
                "`default_language` and `language_override` are options of a text index: add `text(..)`".into(),
            );
        }
    }
    if let Some((_, span)) = decl.expire_after {
        if let Some(problem) = ttl_problem(c, &keys, &text) {
            fail(span, problem);
        }
    }
    if let (Some(sparse), Some(_)) = (decl.sparse, &decl.partial) {
        fail(
            sparse,
            "`sparse` and `partial` exclude each other: a partial filter such as `{\"field\": {\"$exists\": true}}` \
             does what `sparse` does; keep one"
                .into(),
        );
    }
    if keys.len() == 1 && keys[0].0 == "_id" && text.is_empty() {
        fail(decl.span, "`_id` is always indexed, and unique: remove this index".into());
    }
    if decl.name.as_ref().is_some_and(|n| n.value().is_empty()) {
        fail(decl.name.as_ref().map_or(decl.span, |n| n.span()), "an index name is not empty".into());
    }
    ok.then(|| ModelIndex {
        span: decl.span,
        field,
        keys,
        text,
        name: decl.name.as_ref().map(syn::LitStr::value),
        unique: decl.unique.is_some(),
        sparse: decl.sparse.is_some(),
        expire_after: decl.expire_after.map(|(s, _)| s),
        partial: decl.partial.clone(),
        collation: decl.collation.clone(),
        default_language: decl.default_language.as_ref().map(syn::LitStr::value),
        language_override: decl.language_override.as_ref().map(syn::LitStr::value),
    })
}

/// Why `expire_after` cannot work on these keys: a TTL index is on one
/// field, a date (a type that is clearly not one is refused; any other is
/// taken at its word).
fn ttl_problem(c: &Container, keys: &[(String, i32)], text: &[(String, u32)]) -> Option<String> {
    if !text.is_empty() {
        return Some("a text index cannot expire documents: put `expire_after` on an index of one date field".into());
    }
    if keys.len() != 1 {
        return Some(format!(
            "a TTL index is on one field, and MongoDB ignores `expire_after` on a compound index ({} fields here): \
             declare `index(fields(created), expire_after = ..)` on the date field alone",
            keys.len()
        ));
    }
    let f = c.fields.iter().find(|f| f.stored.as_deref() == Some(keys[0].0.as_str()))?;
    let ty = not_a_date(f.ty)?;
    Some(format!(
        "a TTL index deletes a document once the date in its field is older than `expire_after`, and `{}` is a \
         `{ty}`, not a date: index a `bson::DateTime` field (or a date stored as one)",
        f.ident
    ))
}

/// The type's name when it is plainly not a date (`String`, an integer,
/// `ObjectId`, ...), through `Option<..>` and `Vec<..>`.
fn not_a_date(ty: &syn::Type) -> Option<String> {
    const NOT_DATES: &[&str] = &[
        "String",
        "str",
        "bool",
        "char",
        "i8",
        "i16",
        "i32",
        "i64",
        "i128",
        "isize",
        "u8",
        "u16",
        "u32",
        "u64",
        "u128",
        "usize",
        "f32",
        "f64",
        "ObjectId",
        "Uuid",
        "Decimal128",
        "Document",
        "Binary",
    ];
    match ty {
        syn::Type::Reference(r) => not_a_date(&r.elem),
        syn::Type::Path(p) => {
            let last = p.path.segments.last()?;
            let name = last.ident.to_string();
            if matches!(name.as_str(), "Option" | "Vec" | "Box") {
                if let syn::PathArguments::AngleBracketed(args) = &last.arguments {
                    if let Some(syn::GenericArgument::Type(inner)) = args.args.first() {
                        return not_a_date(inner);
                    }
                }
                return None;
            }
            NOT_DATES.contains(&name.as_str()).then_some(name)
        }
        _ => None,
    }
}

/// The text index of the fields marked `#[document(text)]`: `Some(None)`
/// when none is, `None` when one of them is not stored.
fn field_text<'a>(c: &'a Container<'a>, cx: &Ctxt) -> Option<Option<(ModelIndex<'a>, Span)>> {
    let marked: Vec<&Field> = c.fields.iter().filter(|f| f.doc.text.is_some()).collect();
    let Some(first) = marked.first() else { return Some(None) };
    let span = first.doc.text.as_ref().map_or(first.ident.span(), |t| t.span);
    let mut text = Vec::new();
    for f in &marked {
        let weight = f.doc.text.as_ref().map_or(1, |t| t.weight);
        text.push((stored_or_report(f, f.ident.span(), cx)?, weight));
    }
    let ix = index(c, &IndexDecl::new(span), Vec::new(), text, None, cx)?;
    Some(Some((ix, span)))
}

/// No two indexes on the same keys, at most one text index, no name twice.
fn distinct(indexes: &[ModelIndex], spans: &[(Span, Option<Span>)], cx: &Ctxt) -> bool {
    let mut ok = true;
    for (i, ix) in indexes.iter().enumerate() {
        let earlier = &indexes[..i];
        let (span, text_span) = spans[i];
        if earlier.iter().any(|e| e.keys == ix.keys && e.text == ix.text) {
            ok = false;
            cx.error_at(
                span,
                format!(
                    "an index on {} is declared twice: MongoDB keeps one index per key pattern, so merge their \
                     options into one declaration",
                    show(ix)
                ),
            );
        } else if !ix.text.is_empty() && earlier.iter().any(|e| !e.text.is_empty()) {
            ok = false;
            cx.error_at(
                text_span.unwrap_or(span),
                "a collection has at most one text index: put every text field in one `text(..)` (or mark each \
                 with `#[document(text)]`)",
            );
        } else if let Some(name) = ix.name.as_ref().filter(|n| earlier.iter().any(|e| e.name.as_ref() == Some(n))) {
            ok = false;
            cx.error_at(span, format!("two indexes are named `{name}`: name each one differently"));
        }
    }
    ok
}

/// `{tenant: 1, created: -1}`
pub fn show(ix: &ModelIndex) -> String {
    let keys = ix.keys.iter().map(|(k, d)| format!("{k}: {d}"));
    let text = ix.text.iter().map(|(k, _)| format!("{k}: \"text\""));
    format!("{{{}}}", keys.chain(text).collect::<Vec<_>>().join(", "))
}
