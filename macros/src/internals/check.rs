//! The rules across fields and attributes: what cannot work is an error at
//! the offending span, saying how to fix it. All are reported in one build.
//! What passes becomes the model (`model.rs`) the generation reads.

use super::ast::{Container, Role};
use super::model::{Copied, EmbeddedModel, IdField, Model, ModelCopy, ModelField, Stub, Target, Via, ViewModel};
use darling::error::Accumulator;
use proc_macro2::Span;

pub(super) fn err(span: Span, message: impl std::fmt::Display) -> darling::Error {
    darling::Error::custom(message).with_span(&span)
}

/// Checks a document struct into its model; `None` when it cannot be one
/// (the reasons are in `errors`).
pub fn document<'a>(c: &'a Container<'a>, errors: &mut Accumulator) -> Option<Model<'a>> {
    let collection = check_collection(c, errors);
    check_stored_names(c, errors);
    let id = find_id(c, errors);
    let relations = super::relation::relations(c, errors);
    let copies = check_copies(c, errors, true);
    check_sizes(c, errors);
    let copies: Option<Vec<_>> =
        copies.into_iter().map(|(copied, via)| Some(ModelCopy { copied, via: via? })).collect();
    let id = &c.fields[id?];
    Some(Model {
        ident: c.ident,
        vis: c.vis,
        collection: collection?,
        id: IdField { ident: id.ident, ty: id.ty },
        fields: c.fields.iter().filter_map(ModelField::new).collect(),
        relations: relations?,
        copies: copies?,
        advice: super::advice::advise(c),
    })
}

/// Checks an element struct of a reference array (`#[derive(Embedded)]`).
pub fn embedded<'a>(c: &'a Container<'a>, errors: &mut Accumulator) -> EmbeddedModel<'a> {
    let copies = check_copies(c, errors, false);
    EmbeddedModel {
        ident: c.ident,
        fields: c.fields.iter().filter_map(ModelField::new).collect(),
        copies: copies.into_iter().map(|(copied, _)| copied).collect(),
    }
}

/// A `#[derive(View)]` struct of the document `of`.
pub fn view<'a>(c: &'a Container<'a>, of: syn::Path) -> ViewModel<'a> {
    ViewModel { ident: c.ident, of, fields: c.fields.iter().filter_map(ModelField::new).collect() }
}

/// What the fallback emits for a struct that failed its checks.
pub fn stub<'a>(c: &'a Container<'a>) -> Stub<'a> {
    Stub {
        ident: c.ident,
        vis: c.vis,
        id_ty: c.id_candidates().first().map(|&i| c.fields[i].ty),
        fields: c.fields.iter().filter_map(ModelField::new).collect(),
    }
}

fn check_collection(c: &Container, errors: &mut Accumulator) -> Option<String> {
    let Some(name) = &c.attr.collection else {
        errors.push(err(
            c.ident.span(),
            format!(
                "missing collection name: add `#[document(collection = \"{}\")]` to `{}`",
                default_collection(&c.ident.to_string()),
                c.ident
            ),
        ));
        return None;
    };
    let span = name.span();
    let value = name.as_str();
    let problem = if value.is_empty() {
        Some("the collection name is empty: name the collection, e.g. `#[document(collection = \"parts\")]`".to_owned())
    } else if value.contains('$') || value.contains('.') || value.contains('\0') {
        Some(format!(
            "collection name `{value}` contains `$`, `.` or a NUL, which MongoDB clients and tools mishandle: use \
             letters, digits and `_`, e.g. `{}`",
            value.replace(['$', '.', '\0'], "_").trim_matches('_')
        ))
    } else if value.starts_with("system") {
        Some(format!("collection name `{value}` starts with `system`, which MongoDB reserves: choose another name"))
    } else {
        None
    };
    match problem {
        Some(p) => {
            errors.push(err(span, p));
            None
        }
        None => Some(value.to_owned()),
    }
}

/// `PartRef` -> `part_refs`, for the suggestion only.
fn default_collection(ident: &str) -> String {
    let mut out = String::new();
    for (i, ch) in ident.chars().enumerate() {
        if ch.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.extend(ch.to_lowercase());
    }
    out + "s"
}

fn check_stored_names(c: &Container, errors: &mut Accumulator) {
    let mut seen: Vec<(&str, &syn::Ident)> = Vec::new();
    for f in &c.fields {
        let Some(name) = f.stored.as_deref() else { continue };
        if name.contains('$') || name.contains('.') || name.is_empty() {
            errors.push(err(
                f.ident.span(),
                format!(
                    "field `{}` would be stored as `{name}`: a stored field name must not be empty or contain `$` or \
                     `.` (MongoDB reads them as operators and paths); rename it with `#[serde(rename = \"{}\")]`",
                    f.ident,
                    name.replace(['$', '.'], "_").trim_matches('_')
                ),
            ));
        }
        if let Some((_, first)) = seen.iter().find(|(n, _)| *n == name) {
            errors.push(err(
                f.ident.span(),
                format!("fields `{first}` and `{}` are both stored as `{name}`: rename one with `#[serde(rename = \"...\")]`", f.ident),
            ));
        }
        seen.push((name, f.ident));
    }
}

fn find_id(c: &Container, errors: &mut Accumulator) -> Option<usize> {
    match c.id_candidates().as_slice() {
        [] => {
            errors.push(err(
                c.ident.span(),
                format!(
                    "`{}` has no `_id` field: add `#[serde(rename = \"_id\")] id: ObjectId` (or mark the id field \
                     with `#[document(id)]`)",
                    c.ident
                ),
            ));
            None
        }
        [one] => {
            let f = &c.fields[*one];
            if f.stored.as_deref() != Some("_id") {
                let fix = if f.stored.is_none() {
                    "remove `#[serde(skip)]`/`flatten` and add `#[serde(rename = \"_id\")]`"
                } else {
                    "add `#[serde(rename = \"_id\")]` to it"
                };
                errors.push(err(
                    f.ident.span(),
                    format!(
                        "the id field `{}` would be stored as `{}`, but MongoDB keys every document by `_id`: {fix}",
                        f.ident,
                        f.stored.as_deref().unwrap_or("nothing")
                    ),
                ));
                return None;
            }
            Some(*one)
        }
        [first, rest @ ..] => {
            for &i in rest {
                errors.push(err(
                    c.fields[i].ident.span(),
                    format!(
                        "two id fields: `{}` and `{}` both claim `_id`; keep one (mark it with `#[document(id)]`) and \
                         rename the other",
                        c.fields[*first].ident, c.fields[i].ident
                    ),
                ));
            }
            None
        }
    }
}

/// `#[denormalize]` on the fields of a document (`in_document`, with `via`)
/// or of an element struct of a reference array (without): each copy with
/// its source, and the reference `via` names when it leads somewhere.
fn check_copies<'a>(
    c: &'a Container<'a>,
    errors: &mut Accumulator,
    in_document: bool,
) -> Vec<(Copied<'a>, Option<Via<'a>>)> {
    let mut out = Vec::new();
    for f in &c.fields {
        let Some(copy) = &f.copy else { continue };
        let source = copy.source();
        if source.is_none() {
            errors.push(err(
                copy.span,
                format!(
                    "`#[denormalize]` on `{}` needs its source field: write `from = Part::name`, the source document \
                     type, then its field",
                    f.ident
                ),
            ));
        }
        if f.stored.is_none() {
            errors
                .push(err(copy.span, format!("`{}` is not stored (`#[serde(skip)]`): a copy must be stored", f.ident)));
        }
        if f.role.span().is_some() {
            errors.push(err(
                copy.span,
                format!(
                    "`{}` carries a relationship; a copy is a plain field: put `#[denormalize]` on another field",
                    f.ident
                ),
            ));
        }
        let via = check_via(c, f, copy, errors, in_document);
        if let (Some((src, src_field)), Some(stored)) = (source, &f.stored) {
            let copied =
                Copied { ty: f.ty, stored: stored.clone(), source: Target::new(&src), source_field: src_field.clone() };
            out.push((copied, via));
        }
    }
    out
}

/// The single reference a top-level copy names with `via`.
fn check_via<'a>(
    c: &'a Container<'a>,
    f: &super::ast::Field,
    copy: &'a super::ast::Copy,
    errors: &mut Accumulator,
    in_document: bool,
) -> Option<Via<'a>> {
    match (&copy.attr.via, in_document) {
        (Some(via), false) => errors.push(err(
            via.span(),
            "an element of a reference array copies from the document its id refers to: remove `via`",
        )),
        (None, true) => errors.push(err(
            copy.span,
            format!(
                "`{}` needs `via`: name the reference that leads to the source, e.g. \
                 `#[denormalize(from = Product::name, via = product)]` where `product` carries \
                 `#[reference(to = Product)]` or `#[parent_ref(to = Product)]`",
                f.ident
            ),
        )),
        (Some(via), true) => match c.fields.iter().find(|g| g.ident == via) {
            None => errors.push(err(via.span(), format!("`via = {via}`: `{}` has no field `{via}`", c.ident))),
            Some(g) => match &g.role {
                Role::ParentRef { attr, .. } => return via_to(via, g, attr.to.as_ref()),
                Role::Reference { attr, .. } if !attr.many.is_present() => return via_to(via, g, attr.to.as_ref()),
                _ => errors.push(err(
                    via.span(),
                    format!(
                        "`via = {via}` must name a single reference: `{via}` needs `#[reference(to = ..)]` or \
                         `#[parent_ref(to = ..)]` (copies into reference arrays go on the element struct)"
                    ),
                )),
            },
        },
        (None, false) => {}
    }
    None
}

fn via_to<'a>(ident: &'a syn::Ident, field: &super::ast::Field, to: Option<&syn::Path>) -> Option<Via<'a>> {
    Some(Via { ident, stored: field.stored.clone()?, to: to?.clone() })
}

/// A bound that can pass MongoDB's 16 MiB document limit is an error: per
/// field, and for the document as a whole.
fn check_sizes(c: &Container, errors: &mut Accumulator) {
    const LIMIT: u64 = 16 * 1024 * 1024;
    let mut total = 0u64;
    let mut reported = false;
    for f in &c.fields {
        if let Some((span, bounded)) = super::advice::max_bytes_span(f) {
            if !bounded {
                errors.push(err(span, "`max_bytes` is the size of one element: it needs `max = N` to bound the array"));
            }
        }
        let Some((bytes, span)) = super::advice::worst_case_bytes(f) else { continue };
        total = total.saturating_add(bytes);
        if bytes > LIMIT {
            errors.push(err(
                span,
                format!(
                    "`{}` can reach {bytes} bytes (its bound times its element size), above MongoDB's 16 MiB document \
                     limit ({LIMIT} bytes): lower `max`, or keep the elements in their own collection with \
                     `#[parent_ref(..)]`",
                    f.ident
                ),
            ));
            reported = true;
        }
    }
    if total > LIMIT && !reported {
        errors.push(err(
            c.ident.span(),
            format!(
                "`{}` can reach {total} bytes with every bounded array full, above MongoDB's 16 MiB document limit \
                 ({LIMIT} bytes): lower the bounds, or move an array into its own collection",
                c.ident
            ),
        ));
    }
}
