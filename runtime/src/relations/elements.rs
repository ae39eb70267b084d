//! References inside the elements of an embedded array (`posts.comments[].author`):
//! the handle of the array (`Post::rels().comments`), the handle of the
//! element's reference (`Comment::refs().author`), and the load of the
//! referred documents of every element of every parent in one `$in`.

use crate::relations::join::{FieldVisit, Load, Referenced, Referrers};
use crate::schema::document::{Carries, Document, ElemRef, Embedded, Relation, RelationKind, View};
use crate::schema::elements::element_relations;
use crate::store::query::Filter;
use mongodb::Database;
use std::marker::PhantomData;

/// The field types an embedded array is stored in: `Vec<E>`, or
/// `Option<Vec<E>>` (no elements when absent).
pub trait Elements<E> {
    /// The elements, in stored order.
    fn elements(&self) -> &[E];
}

impl<E> Elements<E> for Vec<E> {
    fn elements(&self) -> &[E] {
        self
    }
}

impl<E> Elements<E> for Option<Vec<E>> {
    fn elements(&self) -> &[E] {
        self.as_deref().unwrap_or(&[])
    }
}

/// The types a handle is about, owned by none of its values.
type Types<P, E, F> = PhantomData<fn() -> (P, E, F)>;

/// An embedded array of `E` elements on documents `P` (`#[embed]` on
/// `comments: Vec<Comment>`): name one reference its elements hold with
/// [`EmbedArray::each`] to load or look up through it. `F` is the field's
/// type and `K` its key ([`crate::schema::field_key`] of its name).
pub struct EmbedArray<P, E, F, const K: u64> {
    index: usize,
    _types: Types<P, E, F>,
}

impl<P, E, F, const K: u64> Clone for EmbedArray<P, E, F, K> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P, E, F, const K: u64> Copy for EmbedArray<P, E, F, K> {}

impl<P, E, F, const K: u64> EmbedArray<P, E, F, K> {
    /// A handle (generated code calls this) of the relation at `index`.
    #[doc(hidden)]
    pub const fn new(index: usize) -> Self {
        EmbedArray { index, _types: PhantomData }
    }
}

impl<P: Document, E, F, const K: u64> EmbedArray<P, E, F, K> {
    /// The static description of the array.
    pub fn relation(&self) -> &'static Relation {
        &P::schema().relations[self.index]
    }

    /// The reference `r` of each element of this array: what loads and
    /// reverse lookups go through
    /// (`Post::rels().comments.each(Comment::refs().author)`).
    pub fn each<T: Document>(&self, r: RefInElement<E, T>) -> EachRef<P, E, T, F, K> {
        EachRef { array: *self, r }
    }
}

/// A single reference on a field of an element struct
/// (`#[reference(to = User)]` on `Comment::author`), from the element's
/// `refs()`: hand it to [`EmbedArray::each`].
pub struct RefInElement<E, T: Document> {
    index: usize,
    visit: FieldVisit<E, T::Id>,
}

impl<E, T: Document> Clone for RefInElement<E, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E, T: Document> Copy for RefInElement<E, T> {}

impl<E, T: Document> RefInElement<E, T> {
    /// A handle (generated code calls this): the reference at `index` of
    /// the element's `REFS`, and the visit of the id an element holds.
    #[doc(hidden)]
    pub const fn new(index: usize, visit: FieldVisit<E, T::Id>) -> Self {
        RefInElement { index, visit }
    }
}

impl<E: Embedded, T: Document> RefInElement<E, T> {
    /// The static description of the reference.
    pub fn reference(&self) -> &'static ElemRef {
        &E::REFS[self.index]
    }

    /// The id `element` refers to, if set.
    pub fn id_of(&self, element: &E) -> Option<T::Id> {
        let mut out = None;
        (self.visit)(element, &mut |id| out = Some(id.clone()));
        out
    }
}

/// The reference of every element of an embedded array
/// (`Post::rels().comments.each(Comment::refs().author)`).
pub struct EachRef<P, E, T: Document, F, const K: u64> {
    array: EmbedArray<P, E, F, K>,
    r: RefInElement<E, T>,
}

impl<P, E, T: Document, F, const K: u64> Clone for EachRef<P, E, T, F, K> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P, E, T: Document, F, const K: u64> Copy for EachRef<P, E, T, F, K> {}

impl<P: Document, E: Embedded + Sync, T: Document, F: Elements<E>, const K: u64> EachRef<P, E, T, F, K> {
    /// The reference as the runtime keeps it: an array keyed by the
    /// element's field (`comments.author`), which copies, delete rules and
    /// the index follow.
    pub fn relation(&self) -> &'static Relation {
        let (array, field) = (self.array.relation().field, self.r.reference().field);
        element_relations(P::schema())
            .find(|r| r.field == array && matches!(r.kind, RelationKind::RefMany { key: Some(k), .. } if k == field))
            .unwrap_or_else(|| unreachable!("the derive lists every element reference of `{array}`"))
    }

    /// Prepares the load of the documents the elements of `parents` refer
    /// to, as the view `V`, to run alone ([`Self::load`]) or with other
    /// relations in one [`crate::join`]. Each parent's documents
    /// come in its elements' order (an element without a reference has
    /// none; one whose document is gone is in [`crate::load::Loaded::missing`]).
    pub fn of<'p, V: View<Of = T>>(&self, parents: &'p [impl Carries<P, K, F> + Sync]) -> Referenced<'p, T, V>
    where
        F: 'p,
        E: 'p,
    {
        Referenced::in_elements(Carries::carried, Elements::elements, self.r.visit, parents)
    }

    /// Loads the documents the elements of all `parents` refer to with one
    /// `find({_id: {$in: ids}})` (ids deduplicated, projected on the view's
    /// fields). Await it, after a [`Load::filter`] or [`Load::sort`] if needed.
    ///
    /// ```
    /// # docrel::testing::doc_test(|db| async move {
    /// use docrel::{Document, Embedded, View, bson::oid::ObjectId};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "users")]
    /// struct User { #[serde(rename = "_id")] id: ObjectId, name: String }
    ///
    /// #[derive(Embedded, Serialize, Deserialize)]
    /// struct Comment {
    ///     text: String,
    ///     #[reference(to = User)]
    ///     author: ObjectId,
    /// }
    ///
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "posts")]
    /// struct Post { #[serde(rename = "_id")] id: ObjectId, #[embed(max = 100)] comments: Vec<Comment> }
    ///
    /// #[derive(View, Deserialize)]
    /// #[view(of = User)]
    /// struct Name { name: String }
    ///
    /// let (ann, bob) = (User { id: ObjectId::new(), name: "Ann".into() }, User { id: ObjectId::new(), name: "Bob".into() });
    /// User::repo(&db).insert_many(&[ann, bob]).await?;
    /// # let users = User::repo(&db).find(docrel::Filter::all()).to_vec().await?;
    /// # let (ann, bob) = (users[0].id, users[1].id);
    /// let said = |text: &str, author| Comment { text: text.into(), author };
    /// let posts = vec![
    ///     Post { id: ObjectId::new(), comments: vec![said("first", ann), said("me too", bob)] },
    ///     Post { id: ObjectId::new(), comments: vec![said("hello", bob)] },
    /// ];
    ///
    /// // One `find({_id: {$in: [ann, bob]}})` for every comment of every post.
    /// let authors = Post::rels().comments.each(Comment::refs().author).load::<Name>(&db, &posts).await?;
    /// assert_eq!(authors.of(0).map(|u| u.name.as_str()).collect::<Vec<_>>(), ["Ann", "Bob"]);
    /// assert_eq!(authors.of(1).map(|u| u.name.as_str()).collect::<Vec<_>>(), ["Bob"]);
    /// # Ok(()) });
    /// ```
    pub fn load<'a, 'p, V: View<Of = T>>(
        &self,
        db: &'a Database,
        parents: &'p [impl Carries<P, K, F> + Sync],
    ) -> Load<'a, 'p, T, V>
    where
        F: 'p,
        E: 'p,
    {
        Load::new(db, self.of::<V>(parents))
    }

    /// [`Self::load`] of only the referred documents that match `filter`.
    pub fn load_where<'a, 'p, V: View<Of = T>>(
        &self,
        db: &'a Database,
        parents: &'p [impl Carries<P, K, F> + Sync],
        filter: impl Into<Filter>,
    ) -> Load<'a, 'p, T, V>
    where
        F: 'p,
        E: 'p,
    {
        self.load::<V>(db, parents).filter(filter)
    }

    /// The documents with an element referring to any of `targets`,
    /// grouped by target: one `find({"comments.author": {$in: targets}})`
    /// through the index `ensure_indexes` makes.
    pub fn referrers_of_many<'a>(&self, db: &'a Database, targets: &[T::Id]) -> Referrers<'a, P, T> {
        Referrers::new(db, self.relation(), targets.to_vec())
    }
}
