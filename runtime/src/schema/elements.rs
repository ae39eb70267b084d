//! The references inside the elements of embedded arrays
//! (`posts.comments[].author`), which a `#[derive(Embedded)]` element
//! declares and its document's `#[embed]` entry carries, seen by the rest of
//! the runtime as what they are stored as: reference arrays keyed by the
//! element's field.

use crate::schema::document::{ElemRef, Embedded, Relation, RelationKind, Schema};

fn address<T>(item: &'static T) -> usize {
    item as *const T as usize
}

/// The references held by the elements of `schema`'s embedded arrays
/// (`comments[].author`), each as the reference array keyed by the
/// element's field that the runtime already keeps: loads, copies, delete
/// rules and indexes follow it as they follow `products.parts[].id`. Made
/// once per element reference for the process.
pub fn element_relations(schema: &'static Schema) -> impl Iterator<Item = &'static Relation> {
    static MADE: std::sync::Mutex<Vec<(usize, usize, &'static Relation)>> = std::sync::Mutex::new(Vec::new());
    let mut out = Vec::new();
    for rel in schema.relations.iter().filter(|r| !r.elements.is_empty()) {
        let (RelationKind::Embed { max, .. } | RelationKind::RefMany { max, .. }) = rel.kind else { continue };
        for element in rel.elements {
            let mut made = MADE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let found = made.iter().find(|(r, e, _)| *r == address(rel) && *e == address(element)).map(|(_, _, m)| *m);
            let synthesized = found.unwrap_or_else(|| {
                let m: &'static Relation = Box::leak(Box::new(Relation {
                    field: rel.field,
                    rust_field: rel.rust_field,
                    kind: RelationKind::RefMany { max, key: Some(element.field) },
                    target: Some(element.target),
                    target_type: Some(element.target_type),
                    inverse: None,
                    on_delete: element.on_delete,
                    order: &[],
                    copies: element.copies,
                    elements: &[],
                    subset: None,
                    bucket: None,
                    warn_above: rel.warn_above,
                }));
                made.push((address(rel), address(element), m));
                m
            });
            out.push(synthesized);
        }
    }
    out.into_iter()
}

/// The references held by the elements of an embedded array of `T`, read by
/// the `Document` derive as `<ElementsOf<T>>::REFS`: `T`'s when it derives
/// [`Embedded`] (this inherent constant), else none ([`NoElements`]'s), so a
/// plain serde struct embeds as before.
#[doc(hidden)]
pub struct ElementsOf<T>(std::marker::PhantomData<T>);

impl<T: Embedded> ElementsOf<T> {
    #[doc(hidden)]
    pub const REFS: &'static [ElemRef] = T::REFS;
}

/// The fallback of [`ElementsOf`] for an element that does not derive [`Embedded`].
#[doc(hidden)]
pub trait NoElements {
    #[doc(hidden)]
    const REFS: &'static [ElemRef] = &[];
}

impl<T> NoElements for ElementsOf<T> {}
