//! The rules across fields and attributes: what cannot work is an error at
//! the offending span, saying how to fix it. All are reported in one build.
//! What passes becomes the model (`model.rs`) the generation reads.

use super::ast::{Container, Role};
use super::ctxt::Ctxt;
use super::model::{
    Copied, EmbeddedModel, IdField, Model, ModelCopy, ModelField, ModelIndex, ModelRelation, Names, RelationKind, Stub,
    Target, Via, ViewModel,
};
use super::suggest::did_you_mean;

/// Checks a document struct into its model; `None` when it cannot be one
/// (the reasons are in `cx`).
pub fn document<'a>(c: &'a Container<'a>, cx: &Ctxt) -> Option<Model<'a>> {
    let collection = check_collection(c, cx);
    check_stored_names(c, cx);
    let id = find_id(c, cx);
    let relations = super::relation::relations(c, cx);
    let copies = check_copies(c, cx, true);
    check_sizes(c, cx);
    let copies: Option<Vec<_>> =
        copies.into_iter().map(|(copied, via)| Some(ModelCopy { copied, via: via? })).collect();
    let indexes = super::index_check::indexes(c, cx);
    let shard_key = check_shard_key(c, id?, relations.as_deref(), indexes.as_deref(), cx);
    let moved = super::moved::moved(c, relations.as_deref(), cx);
    let embedded_from = super::moved::embedded_from(c, cx);
    let id = &c.fields[id?];
    Some(Model {
        ident: c.ident,
        vis: c.vis,
        krate: c.attr.krate.clone(),
        names: Names::new(c.input),
        collection: collection?,
        id: IdField::new(id.ident, id.ty),
        fields: c.fields.iter().filter_map(ModelField::new).collect(),
        relations: relations?,
        copies: copies?,
        advice: super::advice::advise(c),
        shard_key: shard_key?,
        indexes: indexes?,
        moved: moved?,
        embedded_from: embedded_from?,
    })
}

/// Resolves `#[document(shard_key(..))]` into stored names, and refuses
/// the designs whose single-document writes could not carry the key: a
/// unique index that does not start with it, and, when the key is more
/// than `_id`, the patterns that write this document by `_id` alone
/// (two-way references, subsets) or a bucket key its appends do not know.
fn check_shard_key(
    c: &Container,
    id: usize,
    relations: Option<&[ModelRelation]>,
    indexes: Option<&[ModelIndex]>,
    cx: &Ctxt,
) -> Option<Vec<String>> {
    let Some(key) = &c.attr.shard_key else { return Some(Vec::new()) };
    let stored = shard_key_stored(c, id, &key.0, cx)?;
    let unique_ok = check_sharded_unique(c, &stored, indexes.unwrap_or_default(), cx);
    let relations_ok = check_sharded_relations(c, &stored, relations.unwrap_or_default(), cx);
    (unique_ok && relations_ok).then_some(stored)
}

/// The stored names of the shard key's fields; `None` when one is not a
/// stored field or appears twice (every such name is reported).
fn shard_key_stored(c: &Container, id: usize, names: &[syn::Ident], cx: &Ctxt) -> Option<Vec<String>> {
    let mut stored: Vec<String> = Vec::new();
    let mut ok = true;
    for name in names {
        let field = if name == "_id" { Some(id) } else { c.fields.iter().position(|f| f.ident == name) };
        let found = field.and_then(|i| if i == id { Some("_id".to_owned()) } else { c.fields[i].stored.clone() });
        match found {
            None => {
                ok = false;
                let known: Vec<String> =
                    c.fields.iter().filter(|f| f.stored.is_some()).map(|f| format!("`{}`", f.ident)).collect();
                cx.error_at(
                    name.span(),
                    format!(
                        "the shard key names `{name}`, which is not a stored field of `{}`: name its fields ({})",
                        c.ident,
                        known.join(", ")
                    ),
                );
            }
            Some(s) if stored.contains(&s) => {
                ok = false;
                cx.error_at(name.span(), format!("`{name}` appears twice in the shard key: name it once"));
            }
            Some(s) => stored.push(s),
        }
    }
    ok.then_some(stored)
}

/// A unique index on a sharded collection must start with the shard key.
fn check_sharded_unique(c: &Container, stored: &[String], indexes: &[ModelIndex], cx: &Ctxt) -> bool {
    let mut ok = true;
    for ix in indexes.iter().filter(|ix| ix.unique) {
        let starts = ix.keys.len() >= stored.len() && ix.keys.iter().zip(stored).all(|((k, _), s)| k == s);
        if starts {
            continue;
        }
        ok = false;
        let (span, fix) = match ix.field {
            Some(f) => (f.span(), format!("drop `unique` from `{f}`, or shard on it")),
            None => (
                ix.span,
                format!(
                    "drop `unique` from the index on {}, or start it with the shard key",
                    super::index_check::show(ix)
                ),
            ),
        };
        cx.error_at(
            span,
            format!(
                "`{}` is sharded on ({}), and a sharded collection can enforce a unique index only when it \
                 starts with the shard key: {fix}",
                c.ident,
                stored.join(", "),
            ),
        );
    }
    ok
}

/// The relationships whose writes could not be routed on this shard key.
fn check_sharded_relations(c: &Container, stored: &[String], relations: &[ModelRelation], cx: &Ctxt) -> bool {
    let mut ok = true;
    for rel in relations {
        if let Some(problem) = sharded_write_problem(&rel.kind, stored) {
            ok = false;
            cx.error_at(
                rel.ident.span(),
                format!("`{}` {problem} (`{}` is sharded on ({}))", rel.ident, c.ident, stored.join(", ")),
            );
        }
    }
    ok
}

/// Why the writes of a relationship of `kind` cannot carry the shard key
/// `stored`, if they cannot.
fn sharded_write_problem(kind: &RelationKind, stored: &[String]) -> Option<&'static str> {
    match kind {
        _ if stored == ["_id"] => None,
        RelationKind::RefMany { inverse: Some(_), .. } | RelationKind::RefOne { inverse: Some(_), .. } => Some(
            "is a two-way reference, and link/unlink write each side by `_id` alone: that cannot be routed on \
             a collection sharded on more than `_id`; shard it on `_id` (a hashed `_id` key spreads the writes), \
             or make the reference one-way (drop `inverse`)",
        ),
        RelationKind::Embed { subset: Some(_), .. } => Some(
            "is a subset, which each change of a child rewrites by the parent's `_id` alone: that cannot be \
             routed on a collection sharded on more than `_id`; shard it on `_id` (hashed), or load the newest \
             children with `latest_per_parent` instead of keeping a subset",
        ),
        RelationKind::Bucket(b) => {
            let known = [b.parent_field.as_str(), if b.window_ms.is_some() { &b.start } else { &b.page }];
            (!stored.iter().all(|s| known.contains(&s.as_str()))).then_some(
                "is a bucket array, and `append` finds its bucket by parent and page (or window start) alone: \
                 shard a bucket collection on its parent reference (and page or start), which every append knows",
            )
        }
        _ => None,
    }
}

/// Checks an element struct of a reference array (`#[derive(Embedded)]`).
pub fn embedded<'a>(c: &'a Container<'a>, cx: &Ctxt) -> EmbeddedModel<'a> {
    check_stored_names(c, cx);
    let copies = check_copies(c, cx, false);
    let (refs, copies) = super::element::references(c, copies, cx);
    EmbeddedModel {
        ident: c.ident,
        vis: c.vis,
        krate: c.attr.krate.clone(),
        fields: c.fields.iter().filter_map(ModelField::new).collect(),
        copies,
        refs,
        refs_name: Names::refs(c.input),
        advice: super::advice::advise(c),
    }
}

/// A `#[derive(View)]` struct of the document `of`.
pub fn view<'a>(c: &'a Container<'a>, of: syn::Path, krate: Option<syn::Path>) -> ViewModel<'a> {
    ViewModel { ident: c.ident, krate, of, fields: c.fields.iter().filter_map(ModelField::new).collect() }
}

/// What the fallback emits for a struct that failed its checks.
pub fn stub<'a>(c: &'a Container<'a>) -> Stub<'a> {
    Stub {
        ident: c.ident,
        vis: c.vis,
        krate: c.attr.krate.clone(),
        names: Names::new(c.input),
        id_ty: c.id_candidates().first().map(|&i| c.fields[i].ty),
        fields: c.fields.iter().filter_map(ModelField::new).collect(),
    }
}

/// What the fallback emits for an input that cannot be a document at all
/// (an enum, a tuple or unit struct, a union): the same items, with no
/// fields, so that documents referring to it see only its one error. A
/// generic type gets none (its impls would need its parameters), nor a union.
pub fn stub_of_shape<'a>(input: &'a syn::DeriveInput, attr: &str) -> Option<Stub<'a>> {
    // A union cannot derive serde's traits, which the stub's impls need:
    // they would add errors, not hide them.
    if !input.generics.params.is_empty() || matches!(input.data, syn::Data::Union(_)) {
        return None;
    }
    let krate = input
        .attrs
        .iter()
        .filter(|a| a.path().is_ident(attr))
        .filter_map(|a| darling::FromMeta::from_meta(&a.meta).ok())
        .filter_map(|attr: super::attr::ContainerAttr| attr.krate)
        .next_back();
    Some(Stub {
        ident: &input.ident,
        vis: &input.vis,
        krate,
        names: Names::new(input),
        id_ty: None,
        fields: Vec::new(),
    })
}

fn check_collection(c: &Container, cx: &Ctxt) -> Option<String> {
    let Some(name) = &c.attr.collection else {
        // A `#[document(..)]` that failed to parse has its own error.
        if c.attr_failed {
            return None;
        }
        cx.error_at(
            c.ident.span(),
            format!(
                "missing collection name: add `#[document(collection = \"{}\")]` to `{}`",
                default_collection(&c.ident.to_string()),
                c.ident
            ),
        );
        return None;
    };
    let span = name.span();
    let value: &str = name;
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
            cx.error_at(span, p);
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

fn check_stored_names(c: &Container, cx: &Ctxt) {
    let mut seen: Vec<(&str, &syn::Ident)> = Vec::new();
    for f in &c.fields {
        let Some(name) = f.stored.as_deref() else { continue };
        if name.contains('$') || name.contains('.') || name.is_empty() {
            cx.error_at(
                f.ident.span(),
                format!(
                    "field `{}` would be stored as `{name}`: a stored field name must not be empty or contain `$` or \
                     `.` (MongoDB reads them as operators and paths); rename it with `#[serde(rename = \"{}\")]`",
                    f.ident,
                    name.replace(['$', '.'], "_").trim_matches('_')
                ),
            );
        }
        if let Some((_, first)) = seen.iter().find(|(n, _)| *n == name) {
            cx.error_at(
                f.ident.span(),
                format!("fields `{first}` and `{}` are both stored as `{name}`: rename one with `#[serde(rename = \"...\")]`", f.ident),
            );
        }
        seen.push((name, f.ident));
    }
}

fn find_id(c: &Container, cx: &Ctxt) -> Option<usize> {
    match c.id_candidates().as_slice() {
        [] => {
            cx.error_at(
                c.ident.span(),
                format!(
                    "`{}` has no `_id` field: add `#[serde(rename = \"_id\")] id: ObjectId` (or mark the id field \
                     with `#[document(id)]`)",
                    c.ident
                ),
            );
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
                cx.error_at(
                    f.ident.span(),
                    format!(
                        "the id field `{}` would be stored as `{}`, but MongoDB keys every document by `_id`: {fix}",
                        f.ident,
                        f.stored.as_deref().unwrap_or("nothing")
                    ),
                );
                return None;
            }
            Some(*one)
        }
        [first, rest @ ..] => {
            for &i in rest {
                // Stored as `_id` like an earlier field: `check_stored_names`
                // reports it, at the same field (one mistake, one error).
                let stored = c.fields[i].stored.as_deref();
                if stored.is_some() && c.fields[..i].iter().any(|g| g.stored.as_deref() == stored) {
                    continue;
                }
                cx.error_at(
                    c.fields[i].ident.span(),
                    format!(
                        "two id fields: `{}` and `{}` both claim `_id`; keep one (mark it with `#[document(id)]`) and \
                         rename the other",
                        c.fields[*first].ident, c.fields[i].ident
                    ),
                );
            }
            None
        }
    }
}

/// `#[denormalize]` on the fields of a document (`in_document`, with `via`)
/// or of an element struct of a reference array (without): each copy with
/// its source, and the reference `via` names when it leads somewhere.
fn check_copies<'a>(c: &'a Container<'a>, cx: &Ctxt, in_document: bool) -> Vec<(Copied<'a>, Option<Via<'a>>)> {
    let mut out = Vec::new();
    for f in &c.fields {
        let Some(copy) = &f.copy else { continue };
        let source = copy.source();
        if source.is_none() {
            cx.error_at(
                copy.span,
                format!(
                    "`#[denormalize]` on `{}` needs its source field: write `from = Part::name`, the source document \
                     type, then its field",
                    f.ident
                ),
            );
        }
        if f.stored.is_none() {
            cx.error_at(copy.span, format!("`{}` is not stored (`#[serde(skip)]`): a copy must be stored", f.ident));
        }
        if f.role.span().is_some() {
            cx.error_at(
                copy.span,
                format!(
                    "`{}` carries a relationship; a copy is a plain field: put `#[denormalize]` on another field",
                    f.ident
                ),
            );
        }
        let via = check_via(c, f, copy, cx, in_document);
        if let (Some((src, src_field)), Some(stored)) = (source, &f.stored) {
            let copied = Copied {
                ident: f.ident,
                ty: f.ty,
                stored: stored.clone(),
                source: Target::new(&src),
                source_field: src_field.clone(),
            };
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
    cx: &Ctxt,
    in_document: bool,
) -> Option<Via<'a>> {
    match (&copy.attr.via, in_document) {
        (None, true) => cx.error_at(
            copy.span,
            format!(
                "`{}` needs `via`: name the reference that leads to the source, e.g. \
                 `#[denormalize(from = Product::name, via = product)]` where `product` carries \
                 `#[reference(to = Product)]` or `#[parent_ref(to = Product)]`",
                f.ident
            ),
        ),
        // An element names the reference of its own that leads to the
        // source; without `via` it copies from the document its id refers to.
        (Some(via), _) => match c.fields.iter().find(|g| g.ident == via) {
            None => {
                let references = c.fields.iter().filter(|g| match &g.role {
                    Role::ParentRef { .. } => true,
                    Role::Reference { attr, .. } => !attr.many.is_present(),
                    _ => false,
                });
                let names: Vec<String> = references.map(|g| g.ident.to_string()).collect();
                let hint = match did_you_mean(&via.to_string(), names.iter().map(String::as_str)) {
                    Some(best) => format!("; did you mean `via = {best}`?"),
                    None if names.is_empty() => format!(
                        ": `via` names the field carrying `#[reference(to = ..)]` or `#[parent_ref(to = ..)]`, and \
                         `{}` has none",
                        c.ident
                    ),
                    None => format!("; its single references are {}", list(&names)),
                };
                cx.error_at(via.span(), format!("`via = {via}`: `{}` has no field `{via}`{hint}", c.ident))
            }
            Some(g) => match &g.role {
                Role::ParentRef { attr, .. } => return via_to(via, g, attr.to.as_ref()),
                Role::Reference { attr, .. } if !attr.many.is_present() => return via_to(via, g, attr.to.as_ref()),
                _ if !in_document => cx.error_at(
                    via.span(),
                    format!(
                        "`via = {via}` must name a reference of the element: `{via}` needs `#[reference(to = ..)]`; \
                         an element of a reference array copies from the document its id refers to with no `via`"
                    ),
                ),
                _ => cx.error_at(
                    via.span(),
                    format!(
                        "`via = {via}` must name a single reference: `{via}` needs `#[reference(to = ..)]` or \
                         `#[parent_ref(to = ..)]` (copies into reference arrays go on the element struct)"
                    ),
                ),
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
fn check_sizes(c: &Container, cx: &Ctxt) {
    const LIMIT: u64 = 16 * 1024 * 1024;
    let mut total = 0u64;
    let mut reported = false;
    for f in &c.fields {
        if let Some((span, bounded)) = super::advice::max_bytes_span(f) {
            if !bounded {
                cx.error_at(span, "`max_bytes` is the size of one element: it needs `max = N` to bound the array");
            }
        }
        let Some((bytes, span)) = super::advice::worst_case_bytes(f) else { continue };
        total = total.saturating_add(bytes);
        if bytes > LIMIT {
            cx.error_at(
                span,
                format!(
                    "`{}` can reach {bytes} bytes (its bound times its element size), above MongoDB's 16 MiB document \
                     limit ({LIMIT} bytes): lower `max`, or keep the elements in their own collection with \
                     `#[parent_ref(..)]`",
                    f.ident
                ),
            );
            reported = true;
        }
    }
    if total > LIMIT && !reported {
        cx.error_at(
            c.ident.span(),
            format!(
                "`{}` can reach {total} bytes with every bounded array full, above MongoDB's 16 MiB document limit \
                 ({LIMIT} bytes): lower the bounds, or move an array into its own collection",
                c.ident
            ),
        );
    }
}

/// `` `a`, `b` and `c` ``.
fn list(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => quoted.join(""),
    }
}
