//! The rules of each relationship attribute, and what it resolves to: the
//! kind and target, keys and sorts as stored names, bucket fields.

use super::ast::{Container, Field, Role};
use super::attr::{Bound, BucketAttr, EmbedAttr, OnDeleteAttr, ParentRefAttr, ReferenceAttr};
use super::bucket::{bucket_field, bucket_parent, window_ms};
use super::ctxt::{error_at, Ctxt};
use super::model::{Bucket, Element, ModelRelation, OnDelete, RelationKind, SortKey, StoredName, Subset, Target};
use super::ty::{array_element, is_id_type, option_inner, type_name, vec_element};
use darling::util::{Flag, SpannedValue};
use proc_macro2::Span;
use syn::{Ident, LitStr, Type};

/// The relationships of a document's stored fields, in declaration order;
/// `None` when one of them is wrong (the reasons are in `cx`).
pub fn relations<'a>(c: &'a Container<'a>, cx: &Ctxt) -> Option<Vec<ModelRelation<'a>>> {
    let mut out = Some(Vec::new());
    for f in &c.fields {
        let Some(stored) = &f.stored else {
            if let Some(span) = f.role.span() {
                cx.error_at(span, format!(
                    "field `{}` is not stored on its own (`#[serde(skip)]` or `flatten`), so it cannot carry a relationship",
                    f.ident
                ));
            }
            continue;
        };
        let (kind, on_delete) = match &f.role {
            Role::Plain => continue,
            Role::Embed { attr, span } => (embed(f, attr, *span, cx), None),
            Role::Reference { attr, span } => (reference(f, attr, *span, cx), attr.on_delete.as_ref()),
            Role::ParentRef { attr, span } => (parent_ref(c, f, attr, *span, cx), attr.on_delete.as_ref()),
            Role::Bucket { attr, span } => (bucket(c, f, attr, *span, cx), None),
        };
        let on_delete = rule_of(on_delete);
        match (kind, &mut out) {
            (Some(kind), Some(out)) => {
                out.push(ModelRelation { ident: f.ident, ty: f.ty, stored: stored.clone(), on_delete, kind })
            }
            _ => out = None,
        }
    }
    out
}

/// The delete rule an attribute declares (none: [`OnDelete::Nothing`]).
pub fn rule_of(declared: Option<&SpannedValue<OnDeleteAttr>>) -> OnDelete {
    match declared.map(|r| **r) {
        None => OnDelete::Nothing,
        Some(OnDeleteAttr::Pull) => OnDelete::Pull,
        Some(OnDeleteAttr::Cascade) => OnDelete::Cascade,
        Some(OnDeleteAttr::Restrict) => OnDelete::Restrict,
    }
}

fn embed<'a>(f: &'a Field<'a>, attr: &'a EmbedAttr, span: Span, cx: &Ctxt) -> Option<RelationKind<'a>> {
    let array = array_element(f.ty);
    let elem = array.map(|(elem, _)| elem);
    let mut subset = None;
    check_unbounded_flag(f, attr.max.as_ref(), &attr.allow_unbounded, cx);
    if let (Some(_), Some((_, true))) = (&attr.subset_of, array) {
        cx.error_at(
            span,
            format!(
                "a subset is kept with `$push`, which fails on the `null` serde stores for `None`: make `{}` a \
                 `Vec<..>` (with `#[serde(default)]` to read documents without it)",
                f.ident
            ),
        );
    } else if let Some(child) = &attr.subset_of {
        if attr.max.is_none() || elem.is_none() {
            cx.error_at(
                span,
                format!(
                    "a subset keeps the N newest (or highest) children: `{}` needs to be a `Vec` with `max = N`, e.g. \
                 `#[embed(max = 10, subset_of = Review, sort = \"-published_date\")]`",
                    f.ident
                ),
            );
        }
        if attr.sort.is_none() {
            cx.error_at(
                span,
                format!(
                    "the subset `{}` needs an order to know which children to keep: add `sort = \"-published_date\"` \
                 (a stored field of the child, `-` for descending)",
                    f.ident
                ),
            );
        }
        if let Some(keep) = &attr.keep {
            if keep != "first" && keep != "last" {
                cx.error_at(keep.span(), "`keep` is `first` (the default) or `last`");
            }
        }
        subset = elem.map(|elem| self::subset(child, elem, attr, cx));
    } else if let Some(extra) = attr
        .sort
        .as_ref()
        .map(|s| s.span())
        .or(attr.key.as_ref().map(|k| k.span()))
        .or(attr.keep.as_ref().map(|k| k.span()))
    {
        cx.error_at(extra, "`sort`, `key` and `keep` describe a subset: they need `subset_of = Child`");
    }
    if let Some(max) = &attr.max {
        if max.0 == 0 {
            cx.error_at(
                max.span(),
                "`max = 0` allows no element at all: give the bound the array may reach, e.g. `max = 20`",
            );
        }
        if elem.is_none() {
            cx.error_at(span, format!(
                "`#[embed(max = ..)]` bounds an array, but `{}` is not a `Vec<T>` (or `Option<Vec<T>>`): drop `max` to embed one struct, or make the field a `Vec`",
                f.ident
            ));
        }
    }
    // A subset whose order did not resolve has its errors reported above.
    let subset = match subset {
        Some(resolved) => Some(resolved?),
        None => None,
    };
    Some(RelationKind::Embed { many: elem.is_some(), max: f.bound(), subset })
}

/// A subset's child, order and key: names of the child's fields, stored or
/// Rust names, whose stored names the child's derive holds.
fn subset<'a>(child: &syn::Path, elem: &'a syn::Type, attr: &EmbedAttr, cx: &Ctxt) -> Option<Subset<'a>> {
    let field_of_child =
        |name: &str, span: Span| StoredName::OfDocument { doc: child.clone(), name: name.to_owned(), span };
    let sort = match &attr.sort {
        Some(sort) => {
            sort_keys(sort, cx, |name| named(name, sort.span()).map(|name| field_of_child(name, sort.span())))?
        }
        None => Vec::new(),
    };
    Some(Subset {
        child: Target::new(child),
        elem,
        elem_name: type_name(elem),
        sort,
        keep_last: attr.keep.as_ref().is_some_and(|k| k == "last"),
        key: attr.key.as_ref().map(|key| field_of_child(key.to_string().trim_start_matches("r#"), key.span())),
        max_bytes: attr.max_bytes.as_ref().map(|b| b.0),
    })
}

fn reference<'a>(f: &'a Field<'a>, attr: &'a ReferenceAttr, span: Span, cx: &Ctxt) -> Option<RelationKind<'a>> {
    let many = attr.many.is_present();
    if attr.to.is_none() {
        cx.error_at(
            span,
            format!(
                "`#[reference]` on `{}` needs its target: add `to = Part`, the document type it refers to",
                f.ident
            ),
        );
    }
    let array = array_element(f.ty);
    let elem = array.map(|(elem, _)| elem);
    let optional_array = array.is_some_and(|(_, optional)| optional);
    check_reference_array(f, attr, span, array, cx);
    check_reference_keys(f, attr, elem, cx);
    let to = Target::new(attr.to.as_ref()?);
    let inverse = attr.inverse.as_ref();
    if !many {
        let id = option_inner(f.ty).unwrap_or(f.ty);
        return Some(RelationKind::RefOne { to, optional: option_inner(f.ty).is_some(), id, inverse });
    }
    let element = match elem? {
        elem if is_id_type(elem) => Element::Ids { ty: elem },
        elem => {
            Element::Structs { ty: elem, key: attr.key.clone().unwrap_or_else(|| Ident::new("id", Span::call_site())) }
        }
    };
    Some(RelationKind::RefMany { to, max: f.bound(), element, optional: optional_array, inverse })
}

/// Whether `many` matches the field's type, and what a two-way array needs:
/// `array` is the field's element type and whether the array is optional.
fn check_reference_array(f: &Field, attr: &ReferenceAttr, span: Span, array: Option<(&Type, bool)>, cx: &Ctxt) {
    let many = attr.many.is_present();
    let elem = array.map(|(elem, _)| elem);
    if many && elem.is_none() {
        cx.error_at(
            span,
            format!(
            "`#[reference(many, ..)]` needs an array of ids or of `{{id, ..}}` structs, but `{}` is not a `Vec<T>` \
             (or `Option<Vec<T>>`): make it `Vec<ObjectId>`, or drop `many` for a single reference",
            f.ident
        ),
        );
    }
    check_unbounded_flag(f, attr.max.as_ref(), &attr.allow_unbounded, cx);
    if let (Some(inverse), true) = (&attr.inverse, many) {
        if array.is_some_and(|(_, optional)| optional) {
            cx.error_at(
                inverse.span(),
                format!(
                    "a two-way array is written with `$addToSet` and `$pull`, which fail on the `null` serde stores \
                     for `None`: make `{}` a `Vec<..>` (with `#[serde(default)]` to read documents without it), or \
                     remove `inverse`",
                    f.ident
                ),
            );
        } else if elem.is_some_and(|e| !is_id_type(e)) {
            cx.error_at(
                inverse.span(),
                format!(
                    "link/unlink keep two-way references of ids, but `{}` holds `{{id, ..}}` structs whose other \
                     fields they cannot make: hold the ids (`Vec<ObjectId>`), or remove `inverse`",
                    f.ident
                ),
            );
        }
    }
    if !many && elem.is_some() {
        cx.error_at(
            span,
            format!("`{}` is a `Vec`, which holds many references: write `#[reference(many, to = ..)]`", f.ident),
        );
    }
}

/// The keys that only some references take: `max` and `key` need `many`,
/// `on_delete = pull` a single reference that may be absent.
fn check_reference_keys(f: &Field, attr: &ReferenceAttr, elem: Option<&Type>, cx: &Ctxt) {
    let many = attr.many.is_present();
    if let Some(max) = &attr.max {
        if !many {
            cx.error_at(max.span(), "`max` bounds an array of references: it needs `many`");
        } else if max.0 == 0 {
            cx.error_at(
                max.span(),
                "`max = 0` allows no reference at all: give the bound the array may reach, e.g. `max = 5000`",
            );
        }
    }
    if let Some(key) = &attr.key {
        if !many {
            cx.error_at(key.span(), "`key` names the id field of the structs of a reference array: it needs `many`");
        } else if elem.is_some_and(is_id_type) {
            cx.error_at(
                key.span(),
                "`key` is for arrays of `{id, ..}` structs; this array holds the ids themselves: remove `key`",
            );
        }
    }
    if !many {
        check_pull_unsets(f, attr.on_delete.as_ref(), cx);
    }
}

/// `allow_unbounded` acknowledges a missing `max`, so both together are a
/// contradiction.
fn check_unbounded_flag(f: &Field, max: Option<&SpannedValue<Bound>>, allow_unbounded: &Flag, cx: &Ctxt) {
    if let (Some(max), true) = (max, allow_unbounded.is_present()) {
        cx.error_at(
            allow_unbounded.span(),
            format!(
                "`allow_unbounded` acknowledges an array with no bound, but `{}` has `max = {}`: remove one of them",
                f.ident, max.0
            ),
        );
    }
}

/// `on_delete = pull` on a single reference unsets it, which serde can only
/// read back into an `Option`.
fn check_pull_unsets(f: &Field, rule: Option<&SpannedValue<OnDeleteAttr>>, cx: &Ctxt) {
    if let Some(rule) = rule {
        if **rule == OnDeleteAttr::Pull && option_inner(f.ty).is_none() {
            cx.error_at(rule.span(), format!(
                "`on_delete = pull` would unset `{}`, but it is not an `Option`: make it `Option<..>`, or use `cascade` or `restrict`",
                f.ident
            ));
        }
    }
}

fn parent_ref<'a>(
    c: &'a Container<'a>,
    f: &'a Field<'a>,
    attr: &'a ParentRefAttr,
    span: Span,
    cx: &Ctxt,
) -> Option<RelationKind<'a>> {
    if attr.to.is_none() {
        cx.error_at(
            span,
            format!(
                "`#[parent_ref]` on `{}` needs its parent: add `to = Host`, the document type it refers to",
                f.ident
            ),
        );
    }
    if array_element(f.ty).is_some() {
        cx.error_at(span, format!(
            "`#[parent_ref]` holds the one id of the parent, but `{}` is a `Vec`: use `#[reference(many, ..)]` for arrays",
            f.ident
        ));
    }
    check_pull_unsets(f, attr.on_delete.as_ref(), cx);
    // The order of the children: stored names of this type's fields (a Rust
    // field name is read as its stored name).
    let order = match &attr.sort {
        Some(sort) => sort_keys(sort, cx, |name| {
            let field = c.fields.iter().find(|g| g.stored.as_deref() == Some(name)).or_else(|| {
                c.fields.iter().find(|g| g.stored.is_some() && g.ident.to_string().trim_start_matches("r#") == name)
            });
            match field.and_then(|g| g.stored.clone()) {
                Some(stored) => Ok(StoredName::Here(stored)),
                None => Err(error_at(sort.span(), format!(
                    "`sort` names `{name}`, which is not a stored field of `{}`: write its stored or Rust field names, `-` for descending, e.g. `sort = \"-time\"`",
                    c.ident
                ))),
            }
        }),
        None => Some(Vec::new()),
    };
    let to = Target::new(attr.to.as_ref()?);
    let id = option_inner(f.ty).unwrap_or(f.ty);
    Some(RelationKind::ParentRef { to, optional: option_inner(f.ty).is_some(), id, order: order? })
}

/// `"-time, name"`: each name resolved by `resolve`, `-` for descending.
/// Every name is checked, so all wrong ones are reported.
fn sort_keys<'a>(
    sort: &LitStr,
    cx: &Ctxt,
    resolve: impl Fn(&str) -> darling::Result<StoredName<'a>>,
) -> Option<Vec<SortKey<'a>>> {
    let keys: Vec<_> = sort
        .value()
        .split(',')
        .map(|part| {
            let part = part.trim();
            let (name, direction) = match part.strip_prefix('-') {
                Some(name) => (name, -1),
                None => (part.strip_prefix('+').unwrap_or(part), 1),
            };
            cx.handle(resolve(name.trim())).map(|name| SortKey { name, direction })
        })
        .collect();
    keys.into_iter().collect()
}

/// `name`, when it can name a field of another type (whether it does is
/// checked against that type when compiled), or the error saying why not.
fn named(name: &str, span: Span) -> darling::Result<&str> {
    if !name.is_empty() && !name.contains(char::is_whitespace) {
        return Ok(name);
    }
    Err(error_at(
        span,
        format!(
            "`sort` names `{name}`, which is not a field name: write the child's field names (stored or Rust \
             names), separated by commas, `-` for descending, e.g. `sort = \"-published_date\"`"
        ),
    ))
}

fn bucket<'a>(
    c: &'a Container<'a>,
    f: &'a Field<'a>,
    attr: &'a BucketAttr,
    span: Span,
    cx: &Ctxt,
) -> Option<RelationKind<'a>> {
    if attr.counter.is_present() {
        return super::counter::counter(c, f, attr, span, cx);
    }
    if let Some(sum) = &attr.sum {
        cx.error_at(
            sum.span(),
            "`sum` belongs to a counter bucket, which adds each event's amount to it: write \
             `#[bucket(counter, window = \"hour\", sum = ..)]` on the count field, or drop `sum`",
        );
    }
    let elem = vec_element(f.ty);
    if elem.is_none() {
        cx.error_at(
            span,
            format!("`#[bucket]` goes on the array of a bucket document, but `{}` is not a `Vec<T>`", f.ident),
        );
    }
    check_bucket_kind(f, attr, span, cx);
    let parent = bucket_parent(c, span, cx);
    let count = bucket_field(c, attr.count.as_ref(), "count", true, span, cx);
    // A time bucket may go without a `page` field: only a window's spill
    // buckets store one (see the runtime's `append`).
    let page = bucket_field(c, attr.page.as_ref(), "page", attr.size.is_some() && attr.window.is_none(), span, cx);
    let start = bucket_field(c, attr.start.as_ref(), "start", attr.window.is_some(), span, cx);
    let (parent, parent_field) = parent?;
    Some(RelationKind::Bucket(Bucket {
        parent,
        elem: elem?,
        parent_field,
        count,
        page,
        start,
        size: attr.size.as_ref().map(|s| s.0),
        window_ms: attr.window.as_ref().and_then(|w| window_ms(&w.value())),
        by: attr.by.as_ref(),
        max_bytes: attr.max_bytes.as_ref().map(|b| b.0),
        counter: None,
    }))
}

/// A bucket holds `size` elements, or the elements of one time window (at
/// most `size` per bucket, when given).
fn check_bucket_kind(f: &Field, attr: &BucketAttr, span: Span, cx: &Ctxt) {
    if let Some(size) = attr.size.as_ref().filter(|s| s.0 == 0) {
        cx.error_at(size.span(), "`size = 0` holds nothing: give the bucket size, e.g. `size = 50`");
    }
    match (&attr.size, &attr.by, &attr.window) {
        (Some(_), None, None) => {}
        (_, Some(_), Some(window)) => {
            if window_ms(&window.value()).is_none() {
                cx.error_at(
                    window.span(),
                    format!(
                        "unknown window `{}`: write `window = \"minute\"`, `\"hour\"` or `\"day\"`",
                        window.value()
                    ),
                );
            }
        }
        _ => cx.error_at(
            span,
            format!(
                "`#[bucket]` on `{}` needs either a size or a time window: `#[bucket(size = 50)]` for pages of 50, or \
             `#[bucket(by = time, window = \"day\")]` for one bucket per day of the elements' `time`",
                f.ident
            ),
        ),
    }
}
