//! The references an element struct holds (`#[reference(to = User)]` on
//! `Comment::author`, for `posts.comments[].author`) and the copies made
//! through them: the rules of a reference inside an element, which holds
//! one id per field and is followed one way.

use super::ast::{Container, Field, Role};
use super::attr::ReferenceAttr;
use super::ctxt::Ctxt;
use super::model::{Copied, ElementRef, Target, Via};
use super::relation::rule_of;
use super::ty::{array_element, option_inner};

/// The element's references, each with the copies made through it, and
/// the copies with no `via` (from the document a reference array's key
/// refers to). `copies` are the element's copies as `check_copies` read them.
pub fn references<'a>(
    c: &'a Container<'a>,
    copies: Vec<(Copied<'a>, Option<Via<'a>>)>,
    cx: &Ctxt,
) -> (Vec<ElementRef<'a>>, Vec<Copied<'a>>) {
    let mut refs: Vec<ElementRef<'a>> = c
        .fields
        .iter()
        .filter_map(|f| match &f.role {
            Role::Reference { attr, span } => reference(f, attr, *span, cx),
            _ => None,
        })
        .collect();
    let mut plain = Vec::new();
    let mut through: Vec<proc_macro2::Span> = Vec::new();
    for (copied, via) in copies {
        match via {
            None => plain.push(copied),
            // A `via` that names no reference: `check_copies` reported it.
            Some(via) => {
                if let Some(r) = refs.iter_mut().find(|r| r.ident == via.ident) {
                    if r.copies.is_empty() {
                        through.push(via.ident.span());
                    }
                    r.copies.push((copied, via.ident))
                }
            }
        }
    }
    one_source_of_copies(c, !plain.is_empty(), &through, cx);
    (refs, plain)
}

/// A single reference on a field of the element; `None` when it is wrong.
fn reference<'a>(
    f: &'a Field<'a>,
    attr: &'a ReferenceAttr,
    span: proc_macro2::Span,
    cx: &Ctxt,
) -> Option<ElementRef<'a>> {
    let Some(to) = &attr.to else {
        cx.error_at(
            span,
            format!(
                "`#[reference]` on `{}` needs its target: add `to = User`, the document type it refers to",
                f.ident
            ),
        );
        return None;
    };
    let unsupported = [
        (attr.many.is_present().then(|| attr.many.span()), "many"),
        (attr.inverse.as_ref().map(|i| i.span()), "inverse"),
        (attr.key.as_ref().map(|k| k.span()), "key"),
        (attr.max.as_ref().map(|m| m.span()), "max"),
        (attr.max_bytes.as_ref().map(|m| m.span()), "max_bytes"),
        (attr.warn_above.as_ref().map(|_| span), "warn_above"),
        (attr.allow_unbounded.is_present().then(|| attr.allow_unbounded.span()), "allow_unbounded"),
        (attr.allow_large.is_present().then(|| attr.allow_large.span()), "allow_large"),
        (attr.allow_two_way.is_present().then(|| attr.allow_two_way.span()), "allow_two_way"),
    ];
    let mut wrong = false;
    for (at, key) in unsupported.into_iter().filter_map(|(at, key)| Some((at?, key))) {
        wrong = true;
        cx.error_at(
            at,
            format!(
                "`{key}` does not apply to a reference inside an element: `{}` holds the one id of a document, \
                 followed one way (keep arrays of references and two-way references on a document's fields)",
                f.ident
            ),
        );
    }
    if array_element(f.ty).is_some() {
        wrong = true;
        cx.error_at(
            span,
            format!(
                "`{}` is a `Vec`: a reference inside an element holds one id (`ObjectId` or `Option<ObjectId>`); \
                 keep arrays of references on a document's fields",
                f.ident
            ),
        );
    }
    let stored = f.stored.clone()?;
    (!wrong).then(|| ElementRef {
        ident: f.ident,
        stored,
        to: Target::new(to),
        id: option_inner(f.ty).unwrap_or(f.ty),
        optional: option_inner(f.ty).is_some(),
        on_delete: rule_of(attr.on_delete.as_ref()),
        copies: Vec::new(),
    })
}

/// The version records of an element's copies are kept per array and
/// source id, so one element copies from one document: the one its
/// reference array's key refers to, or the one of a single `via`.
fn one_source_of_copies(c: &Container, plain: bool, through: &[proc_macro2::Span], cx: &Ctxt) {
    let extra = if plain { through.first() } else { through.get(1) };
    if let Some(at) = extra {
        cx.error_at(
            *at,
            format!(
                "the copies of an element of `{}` come from one document: {}; copy the other document's fields \
                 into that document, or keep them on the document holding the array",
                c.ident,
                if plain {
                    "copies without `via` come from the document the element's id refers to, so no copy can come \
                     through another reference"
                } else {
                    "they may come through one of its references only"
                }
            ),
        );
    }
}
