//! `#[document(moved_from = Post::comments)]`: these documents were the
//! elements of another type's embedded array. The old field is gone from
//! this version of the program, so only its owner and Rust name are known
//! here; `docrel schema diff` finds its stored rule in the database.

use super::ast::Container;
use super::ast::Role;
use super::ctxt::Ctxt;
use super::model::{ModelBuckets, ModelEmbedded, ModelMove, ModelRelation, RelationKind, Target};
use super::ty::path_name;

/// The move `c` declares, if any; `None` when its declaration is wrong (the
/// error is in `cx`). `relations` is `None` when they failed their own
/// checks: then only the attribute's form is checked.
pub fn moved(c: &Container, relations: Option<&[ModelRelation]>, cx: &Ctxt) -> Option<Option<ModelMove>> {
    let Some(attr) = &c.attr.moved_from else { return Some(None) };
    let span = attr.span();
    let path: &syn::Path = attr;
    let mut owner = path.clone();
    let field = owner.segments.pop().map(|p| p.into_value().ident.to_string());
    owner.segments.pop_punct();
    let (Some(field), false) = (field, owner.segments.is_empty()) else {
        cx.error_at(
            span,
            format!(
                "`moved_from` names the old document type and its field: write `moved_from = Post::comments`, not \
                 `moved_from = {}`",
                quote::ToTokens::to_token_stream(path).to_string().replace(' ', "")
            ),
        );
        return None;
    };
    let from = Target::new(&owner);
    let sharded = c.attr.shard_key.as_ref().is_some_and(|k| !(k.0.len() == 1 && (k.0[0] == "_id" || k.0[0] == "id")));
    if sharded {
        cx.error_at(
            span,
            format!(
                "not yet: moving `{}::{field}` into a sharded collection (the move's `$merge` needs the shard key); \
                 move it first, then shard `{}`",
                from.name, c.ident
            ),
        );
        return None;
    }
    let relations = relations?;
    let buckets = buckets(relations, &from, &field, span, cx)?;
    let parent_field = parent_field(c, relations, &from, &field, span, cx)?;
    Some(Some(ModelMove { from, from_field: field, parent_field, buckets }))
}

/// Elements per bucket of a time bucket that declares no `size`
/// (`docrel::schema::TIME_BUCKET_SIZE`).
const TIME_BUCKET_SIZE: u32 = 1_000;

/// Where the elements go when `c` is a bucket document: its array, page
/// and count fields, its size, and for time buckets the window's start
/// field, length and the elements' time field. Counters take no move:
/// they keep no elements.
fn buckets(
    relations: &[ModelRelation],
    from: &Target,
    field: &str,
    span: proc_macro2::Span,
    cx: &Ctxt,
) -> Option<Option<ModelBuckets>> {
    let Some((array, b)) = relations.iter().find_map(|r| match &r.kind {
        RelationKind::Bucket(b) => Some((r, b)),
        _ => None,
    }) else {
        return Some(None);
    };
    let Some(size) = b.size.or(b.window_ms.map(|_| TIME_BUCKET_SIZE)).filter(|_| b.counter.is_none()) else {
        cx.error_at(
            span,
            format!(
                "not yet: moving `{}::{field}` into counters; `moved_from` on a bucket document works for buckets \
                 by count (`#[bucket(size = 50)]`) and by time (`#[bucket(by = t, window = \"hour\")]`)",
                from.name
            ),
        );
        return None;
    };
    Some(Some(ModelBuckets {
        field: array.stored.clone(),
        page: b.page.clone(),
        count: b.count.clone(),
        size,
        time: b
            .window_ms
            .map(|window_ms| (b.start.clone(), window_ms, b.by.map(ToString::to_string).unwrap_or_default())),
    }))
}

/// The stored name of the one `#[parent_ref]` to the old owner.
fn parent_field(
    c: &Container,
    relations: &[ModelRelation],
    from: &Target,
    field: &str,
    span: proc_macro2::Span,
    cx: &Ctxt,
) -> Option<String> {
    let to_owner = |r: &&ModelRelation| match &r.kind {
        RelationKind::ParentRef { to, .. } => path_name(&to.path) == from.name,
        _ => false,
    };
    let mut found = relations.iter().filter(to_owner);
    let Some(first) = found.next() else {
        cx.error_at(
            span,
            format!(
                "a document moved out of `{}::{field}` refers to its parent: add `#[parent_ref(to = {})] {}: <{}'s \
                 id type>` to `{}`",
                from.name,
                from.name,
                from.name.rsplit("::").next().unwrap_or(&from.name).to_lowercase(),
                from.name,
                c.ident
            ),
        );
        return None;
    };
    if let Some(second) = found.next() {
        cx.error_at(
            second.ident.span(),
            format!(
                "`{}` and `{}` are both `#[parent_ref(to = {})]`: a document moved out of `{}::{field}` has one \
                 parent; keep one of them",
                first.ident, second.ident, from.name, from.name
            ),
        );
        return None;
    }
    Some(first.stored.clone())
}

/// The field `c` declares `#[embed(moved_from = "..")]`, if any: one struct
/// (not an array, so no subset either), one field per type; `None` when the
/// declaration is wrong (the error is in `cx`).
pub fn embedded_from(c: &Container, cx: &Ctxt) -> Option<Option<ModelEmbedded>> {
    let mut found: Option<ModelEmbedded> = None;
    let mut ok = true;
    for f in &c.fields {
        let Role::Embed { attr, .. } = &f.role else { continue };
        let Some(from) = &attr.moved_from else { continue };
        let span = from.span();
        if super::ty::array_element(f.ty).is_some() {
            cx.error_at(
                span,
                format!(
                    "not yet: moving documents of `{}` back into the array `{}`; `moved_from` on a field works for \
                     one embedded struct (`Option<T>` or `T`)",
                    from.value(),
                    f.ident
                ),
            );
            ok = false;
        } else if let Some(first) = &found {
            cx.error_at(
                span,
                format!(
                    "`{}` and `{}` both declare `moved_from`: move one field per version of `{}`",
                    first.rust_field, f.ident, c.ident
                ),
            );
            ok = false;
        } else {
            found = Some(ModelEmbedded { collection: from.value(), rust_field: f.ident.to_string() });
        }
    }
    ok.then_some(found)
}
