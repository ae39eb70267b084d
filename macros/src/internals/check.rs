//! The rules across fields and attributes: what cannot work is an error at
//! the offending span, saying how to fix it. All are reported in one build.

use super::ast::{option_inner, vec_element, Container, Role};
use super::attr::OnDeleteAttr;
use darling::error::Accumulator;
use proc_macro2::Span;

/// What the checks establish for generation.
pub struct Checked {
    pub collection: String,
    /// Index of the `_id` field in `Container::fields`.
    pub id: usize,
}

fn err(span: Span, message: impl std::fmt::Display) -> darling::Error {
    darling::Error::custom(message).with_span(&span)
}

/// Checks a document struct; `None` when generation cannot go on.
pub fn document(c: &Container, errors: &mut Accumulator) -> Option<Checked> {
    let collection = check_collection(c, errors);
    check_stored_names(c, errors);
    let id = find_id(c, errors);
    check_relationships(c, errors);
    check_copies(c, errors, true);
    check_sizes(c, errors);
    Some(Checked { collection: collection?, id: id? })
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
    let marked: Vec<usize> = (0..c.fields.len()).filter(|&i| c.fields[i].doc.id.is_present()).collect();
    let candidates = if !marked.is_empty() {
        marked
    } else {
        let by_name: Vec<usize> = (0..c.fields.len())
            .filter(|&i| {
                let f = &c.fields[i];
                f.stored.as_deref() == Some("_id") || f.ident == "id" || f.ident == "_id"
            })
            .collect();
        by_name
    };
    match candidates.as_slice() {
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

fn check_relationships(c: &Container, errors: &mut Accumulator) {
    for f in &c.fields {
        if f.stored.is_none() {
            if let Some(span) = f.role.span() {
                errors.push(err(span, format!(
                    "field `{}` is not stored on its own (`#[serde(skip)]` or `flatten`), so it cannot carry a relationship",
                    f.ident
                )));
            }
            continue;
        }
        match &f.role {
            Role::Plain => {}
            Role::Embed { attr, span } => {
                if attr.subset_of.is_some() {
                    if attr.max.is_none() || vec_element(f.ty).is_none() {
                        errors.push(err(*span, format!(
                            "a subset keeps the N newest (or highest) children: `{}` needs to be a `Vec` with `max = N`, e.g. \
                             `#[embed(max = 10, subset_of = Review, sort = \"-published_date\")]`",
                            f.ident
                        )));
                    }
                    if attr.sort.is_none() {
                        errors.push(err(*span, format!(
                            "the subset `{}` needs an order to know which children to keep: add `sort = \"-published_date\"` \
                             (a stored field of the child, `-` for descending)",
                            f.ident
                        )));
                    }
                    if let Some(keep) = &attr.keep {
                        if keep != "first" && keep != "last" {
                            errors.push(err(keep.span(), "`keep` is `first` (the default) or `last`"));
                        }
                    }
                } else if let Some(extra) = attr
                    .sort
                    .as_ref()
                    .map(|s| s.span())
                    .or(attr.key.as_ref().map(|k| k.span()))
                    .or(attr.keep.as_ref().map(|k| k.span()))
                {
                    errors
                        .push(err(extra, "`sort`, `key` and `keep` describe a subset: they need `subset_of = Child`"));
                }
                if let Some(max) = &attr.max {
                    if max.0 == 0 {
                        errors.push(err(
                            max.span(),
                            "`max = 0` allows no element at all: give the bound the array may reach, e.g. `max = 20`",
                        ));
                    }
                    if vec_element(f.ty).is_none() {
                        errors.push(err(*span, format!(
                            "`#[embed(max = ..)]` bounds an array, but `{}` is not a `Vec<T>`: drop `max` to embed one struct, or make the field a `Vec`",
                            f.ident
                        )));
                    }
                }
            }
            Role::Reference { attr, span } => {
                let many = attr.many.is_present();
                if attr.to.is_none() {
                    errors.push(err(
                        *span,
                        format!(
                            "`#[reference]` on `{}` needs its target: add `to = Part`, the document type it refers to",
                            f.ident
                        ),
                    ));
                }
                let elem = vec_element(f.ty);
                if many && elem.is_none() {
                    errors.push(err(*span, format!(
                        "`#[reference(many, ..)]` needs an array of ids or of `{{id, ..}}` structs, but `{}` is not a `Vec<T>`: \
                         make it `Vec<ObjectId>`, or drop `many` for a single reference",
                        f.ident
                    )));
                }
                if !many && elem.is_some() {
                    errors.push(err(
                        *span,
                        format!(
                            "`{}` is a `Vec`, which holds many references: write `#[reference(many, to = ..)]`",
                            f.ident
                        ),
                    ));
                }
                if let Some(max) = &attr.max {
                    if !many {
                        errors.push(err(max.span(), "`max` bounds an array of references: it needs `many`"));
                    } else if max.0 == 0 {
                        errors.push(err(max.span(), "`max = 0` allows no reference at all: give the bound the array may reach, e.g. `max = 5000`"));
                    }
                }
                if let Some(key) = &attr.key {
                    if !many {
                        errors.push(err(
                            key.span(),
                            "`key` names the id field of the structs of a reference array: it needs `many`",
                        ));
                    } else if elem.is_some_and(super::ast::is_id_type) {
                        errors.push(err(key.span(), "`key` is for arrays of `{id, ..}` structs; this array holds the ids themselves: remove `key`"));
                    }
                }
                if let Some(rule) = &attr.on_delete {
                    if **rule == OnDeleteAttr::Pull && !many && option_inner(f.ty).is_none() {
                        errors.push(err(rule.span(), format!(
                            "`on_delete = pull` would unset `{}`, but it is not an `Option`: make it `Option<..>`, or use `cascade` or `restrict`",
                            f.ident
                        )));
                    }
                }
            }
            Role::Bucket { attr, span } => check_bucket(c, f, attr, *span, errors),
            Role::ParentRef { attr, span } => {
                if attr.to.is_none() {
                    errors.push(err(
                        *span,
                        format!(
                            "`#[parent_ref]` on `{}` needs its parent: add `to = Host`, the document type it refers to",
                            f.ident
                        ),
                    ));
                }
                if vec_element(f.ty).is_some() {
                    errors.push(err(*span, format!(
                        "`#[parent_ref]` holds the one id of the parent, but `{}` is a `Vec`: use `#[reference(many, ..)]` for arrays",
                        f.ident
                    )));
                }
                if let Some(rule) = &attr.on_delete {
                    if **rule == OnDeleteAttr::Pull && option_inner(f.ty).is_none() {
                        errors.push(err(rule.span(), format!(
                            "`on_delete = pull` would unset `{}`, but it is not an `Option`: make it `Option<..>`, or use `cascade` or `restrict`",
                            f.ident
                        )));
                    }
                }
                if let Some(sort) = &attr.sort {
                    for part in sort.value().split(',') {
                        let name = part.trim().trim_start_matches(['-', '+']);
                        if !c.fields.iter().any(|g| g.stored.as_deref() == Some(name)) {
                            errors.push(err(sort.span(), format!(
                                "`sort` names `{name}`, which is not a stored field of `{}`: write stored names, `-` for descending, e.g. `sort = \"-time\"`",
                                c.ident
                            )));
                        }
                    }
                }
            }
        }
    }
}

/// `#[denormalize]` on the fields of a document (`in_document`, with `via`)
/// or of an element struct of a reference array (without).
pub fn check_copies(c: &Container, errors: &mut Accumulator, in_document: bool) {
    for f in &c.fields {
        let Some(copy) = &f.copy else { continue };
        if copy.source().is_none() {
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
        if let Some(span) = f.role.span() {
            let _ = span;
            errors.push(err(
                copy.span,
                format!(
                    "`{}` carries a relationship; a copy is a plain field: put `#[denormalize]` on another field",
                    f.ident
                ),
            ));
        }
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
                    Role::ParentRef { .. } => {}
                    Role::Reference { attr, .. } if !attr.many.is_present() => {}
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
    }
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

/// The window lengths a time bucket may have, in milliseconds.
pub fn window_ms(name: &str) -> Option<i64> {
    match name {
        "minute" => Some(60_000),
        "hour" => Some(3_600_000),
        "day" => Some(86_400_000),
        _ => None,
    }
}

fn check_bucket(
    c: &Container,
    f: &super::ast::Field,
    attr: &super::attr::BucketAttr,
    span: Span,
    errors: &mut Accumulator,
) {
    if vec_element(f.ty).is_none() {
        errors.push(err(
            span,
            format!("`#[bucket]` goes on the array of a bucket document, but `{}` is not a `Vec<T>`", f.ident),
        ));
    }
    match (&attr.size, &attr.by, &attr.window) {
        (Some(size), None, None) => {
            if size.0 == 0 {
                errors.push(err(size.span(), "`size = 0` holds nothing: give the bucket size, e.g. `size = 50`"));
            }
        }
        (None, Some(_), Some(window)) => {
            if window_ms(&window.value()).is_none() {
                errors.push(err(
                    window.span(),
                    format!(
                        "unknown window `{}`: write `window = \"minute\"`, `\"hour\"` or `\"day\"`",
                        window.value()
                    ),
                ));
            }
        }
        _ => errors.push(err(
            span,
            format!(
                "`#[bucket]` on `{}` needs either a size or a time window: `#[bucket(size = 50)]` for pages of 50, or \
             `#[bucket(by = time, window = \"day\")]` for one bucket per day of the elements' `time`",
                f.ident
            ),
        )),
    }
    if !c.fields.iter().any(|g| matches!(g.role, Role::ParentRef { .. })) {
        errors.push(err(
            span,
            format!(
                "a bucket belongs to a parent: `{}` needs a field with `#[parent_ref(to = ..)]` (e.g. `blog_entry_id`)",
                c.ident
            ),
        ));
    }
    let needed = [
        (attr.count.as_ref(), "count", true),
        (attr.page.as_ref(), "page", attr.size.is_some()),
        (attr.start.as_ref(), "start", attr.window.is_some()),
    ];
    for (named, default, used) in needed {
        if !used {
            continue;
        }
        let name = named.map(ToString::to_string).unwrap_or_else(|| default.to_owned());
        if !c.fields.iter().any(|g| g.ident == name.as_str()) {
            errors.push(err(
                named.map(|n| n.span()).unwrap_or(span),
                format!(
                    "the bucket document `{}` needs a `{name}` field (or name yours with `{default} = my_field`)",
                    c.ident
                ),
            ));
        }
    }
}
