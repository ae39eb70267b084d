//! The typed relation handles generated for each relationship
//! (`Product::rels().parts`), and what can be done through them.

use crate::id::DocId;
use crate::relations::join::{Children, FieldVisit, Latest, Load, Referenced, Referrers};
use crate::relations::two_way::LinkWrite;
use crate::relations::with_parents::WithParents;
use crate::schema::document::{Carries, Document, Relation, View};
use crate::store::find::Find;
use crate::store::query::{Filter, Sort};
use mongodb::bson;
use mongodb::Database;
use std::marker::PhantomData;

macro_rules! handle {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        ///
        /// `F` is the type of the reference field and `K` its key
        /// ([`crate::schema::field_key`] of its name): the loaders take as parents
        /// any type that [`Carries`] it, the document or a view of it.
        pub struct $name<P, T: Document, F, const K: u64> {
            /// The relationship's index in `P`'s schema: the handle reads the
            /// entry from the schema's static, whose address the runtime keys
            /// relationships by (a `'static` reference made in a `const`
            /// may point at a copy of it), and can itself be a `const`.
            index: usize,
            visit: FieldVisit<F, T::Id>,
            _types: PhantomData<fn() -> (P, T)>,
        }

        impl<P, T: Document, F, const K: u64> Clone for $name<P, T, F, K> {
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<P, T: Document, F, const K: u64> Copy for $name<P, T, F, K> {}

        impl<P: Document, T: Document, F, const K: u64> std::fmt::Debug for $name<P, T, F, K> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name)).field("relation", self.relation()).finish()
            }
        }

        impl<P, T: Document, F, const K: u64> $name<P, T, F, K> {
            /// A handle (generated code calls this). No bound on `P`: a
            /// document whose serde derive is missing gets that one error,
            /// not a second one at its handles.
            #[doc(hidden)]
            pub const fn new(index: usize, visit: FieldVisit<F, T::Id>) -> Self {
                $name { index, visit, _types: PhantomData }
            }
        }

        impl<P: Document, T: Document, F, const K: u64> $name<P, T, F, K> {
            /// The static description of the relationship.
            pub fn relation(&self) -> &'static Relation {
                &P::schema().relations[self.index]
            }

            /// Calls `f` with each id this parent (the document or a view
            /// that carries the field) refers to, in order.
            pub fn for_each_id<Q: Carries<P, K, F>>(&self, parent: &Q, mut f: impl FnMut(&T::Id)) {
                (self.visit)(parent.carried(), &mut f)
            }

            /// The ids this parent refers to, in order.
            pub fn ids<Q: Carries<P, K, F>>(&self, parent: &Q) -> Vec<T::Id> {
                let mut out = Vec::new();
                self.for_each_id(parent, |id| out.push(id.clone()));
                out
            }
        }
    };
}

handle! {
    /// An array of references (`#[reference(many, to = T)]`): one-to-many.
    ///
    /// ```
    /// # docrel::testing::doc_test(|db| async move {
    /// use docrel::{Document, View, bson::oid::ObjectId};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "parts")]
    /// struct Part { #[serde(rename = "_id")] id: ObjectId, name: String, price: f64 }
    ///
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "products")]
    /// struct Product {
    ///     #[serde(rename = "_id")] id: ObjectId,
    ///     name: String,
    ///     #[reference(many, to = Part, max = 500)]
    ///     parts: Vec<ObjectId>,
    /// }
    ///
    /// #[derive(View, Deserialize)]
    /// #[view(of = Part)]
    /// struct PartName { name: String }
    ///
    /// let bolt = Part { id: ObjectId::new(), name: "bolt".into(), price: 0.1 };
    /// let nut = Part { id: ObjectId::new(), name: "nut".into(), price: 0.05 };
    /// Part::repo(&db).insert_many(&[bolt, nut]).await?;
    /// # let (bolt, nut) = { let all = Part::repo(&db).find(docrel::Filter::all()).to_vec().await?; (all[0].id, all[1].id) };
    /// let gone = ObjectId::new();
    /// let products = vec![Product { id: ObjectId::new(), name: "shifter".into(), parts: vec![nut, bolt, nut, gone] }];
    ///
    /// // One `find({_id: {$in: ..}})` for all parents, only `name` travels.
    /// let parts = Product::rels().parts.load::<PartName>(&db, &products).await?;
    /// let names: Vec<_> = parts.of(0).map(|p| p.name.as_str()).collect();
    /// assert_eq!(names, ["nut", "bolt", "nut"]);
    /// assert_eq!(parts.missing(0), [gone]);
    /// # Ok(()) });
    /// ```
    RefMany
}

handle! {
    /// One reference (`#[reference(to = T)]` on an id or an `Option` of one):
    /// many-to-one, or one-to-one by link.
    RefOne
}

handle! {
    /// A reference from a child to its parent (`#[parent_ref(to = P)]`):
    /// one-to-squillions. `P` here is the child type and `T` the parent.
    ParentRef
}

macro_rules! loaders {
    ($name:ident) => {
        impl<P: Document, T: Document, F, const K: u64> $name<P, T, F, K> {
            /// Prepares the load of the referred documents of `parents` as
            /// the view `V`, to run alone ([`Self::load`]) or with other
            /// relations in one [`crate::join`]. The parents are
            /// the documents or any view of them that carries this field.
            pub fn of<'p, V: View<Of = T>>(&self, parents: &'p [impl Carries<P, K, F> + Sync]) -> Referenced<'p, T, V>
            where
                F: 'p,
            {
                Referenced::new(Carries::carried, self.visit, parents)
            }

            /// Loads the referred documents of all `parents` with one
            /// `find({_id: {$in: ids}})` (ids deduplicated, projected on the
            /// view's fields, in one batch), put back in each parent's order.
            /// Await it, after a [`Load::filter`], [`Load::sort`] or
            /// [`Load::limit_per_parent`] if needed.
            pub fn load<'a, 'p, V: View<Of = T>>(
                &self,
                db: &'a Database,
                parents: &'p [impl Carries<P, K, F> + Sync],
            ) -> Load<'a, 'p, T, V>
            where
                F: 'p,
            {
                Load::new(db, self.of::<V>(parents))
            }

            /// [`Self::load`] of only the referred documents that match
            /// `filter` (Mongoose's `populate({match})`): one query, with the
            /// filter beside the `$in`.
            pub fn load_where<'a, 'p, V: View<Of = T>>(
                &self,
                db: &'a Database,
                parents: &'p [impl Carries<P, K, F> + Sync],
                filter: impl Into<Filter>,
            ) -> Load<'a, 'p, T, V>
            where
                F: 'p,
            {
                self.load::<V>(db, parents).filter(filter)
            }

            /// Reads the parents of `find` and their related documents
            /// together, by the [`Strategy`](crate::load::Strategy) chosen with
            /// [`WithParents::strategy`]: the find then one `$in` (two round
            /// trips, the default), or one aggregate with a `$lookup` (one
            /// round trip). The parents are read as the find's view, which
            /// must carry this field; await it for `(parents, loaded)`.
            ///
            /// ```
            /// # docrel::testing::doc_test(|db| async move {
            /// use docrel::{Document, Filter, load::Strategy, View, bson::oid::ObjectId};
            /// use serde::{Deserialize, Serialize};
            ///
            /// #[derive(Document, Serialize, Deserialize)]
            /// #[document(collection = "parts")]
            /// struct Part { #[serde(rename = "_id")] id: ObjectId, name: String }
            ///
            /// #[derive(Document, Serialize, Deserialize)]
            /// #[document(collection = "products")]
            /// struct Product { #[serde(rename = "_id")] id: ObjectId, name: String, #[reference(many, to = Part, max = 100)] parts: Vec<ObjectId> }
            ///
            /// #[derive(View, Deserialize)]
            /// #[view(of = Product)]
            /// struct Card { name: String, parts: Vec<ObjectId> }
            ///
            /// #[derive(View, Deserialize)]
            /// #[view(of = Part)]
            /// struct PartName { name: String }
            ///
            /// let bolt = Part { id: ObjectId::new(), name: "bolt".into() };
            /// Part::repo(&db).insert(&bolt).await?;
            /// Product::repo(&db).insert(&Product { id: ObjectId::new(), name: "shifter".into(), parts: vec![bolt.id] }).await?;
            ///
            /// let trips = docrel::testing::round_trips(&db);
            /// let mark = trips.mark();
            /// let (cards, parts) = Product::rels()
            ///     .parts
            ///     .with_parents(Product::repo(&db).find(Filter::all()).view::<Card>())
            ///     .view::<PartName>()
            ///     .strategy(Strategy::Lookup)
            ///     .await?;
            /// assert_eq!(trips.since(mark), 1);
            /// assert_eq!((cards[0].name.as_str(), parts.one(0).map(|p| p.name.as_str())), ("shifter", Some("bolt")));
            /// # Ok(()) });
            /// ```
            pub fn with_parents<V: View + Carries<P, K, F> + Sync>(&self, find: Find<P, V>) -> WithParents<P, V, T, F>
            where
                F: 'static,
            {
                WithParents::new(find, self.relation(), Carries::carried, self.visit)
            }

            /// The documents that refer to any of `targets`, grouped by
            /// target (in the order of `targets`): the reverse load for many
            /// targets in ONE `find({field: {$in: targets}})` through the
            /// field's index. Await it, after [`Referrers::view`],
            /// [`Referrers::filter`], [`Referrers::sort`] or
            /// [`Referrers::limit_per_target`] if needed.
            pub fn referrers_of_many<'a>(&self, db: &'a Database, targets: &[T::Id]) -> Referrers<'a, P, T> {
                Referrers::new(db, self.relation(), targets.to_vec())
            }
        }
    };
}

loaders!(RefMany);
loaders!(RefOne);

impl<C: Document, P: Document, F, const K: u64> ParentRef<C, P, F, K> {
    /// The children of one parent: set a filter, an order (by default the
    /// one declared with `sort = ..`) and a limit, then run it. One round trip.
    pub fn children_of<'a>(&self, db: &'a Database, parent: &P::Id) -> Children<'a, C, P> {
        Children::new(db, self.relation(), vec![parent.clone()])
    }

    /// The children of many parents with one `find({parent: {$in: ids}})`,
    /// grouped by parent (in the order of `parents`).
    pub fn children_of_many<'a>(&self, db: &'a Database, parents: &[P::Id]) -> Children<'a, C, P> {
        Children::new(db, self.relation(), parents.to_vec())
    }

    /// The latest `n` children of EACH parent (by `sort`, by default the
    /// declared order), for all parents in ONE round trip: a `$documents`
    /// stage of the parent ids with a `$lookup` whose pipeline sorts and
    /// limits on the `{parent, order}` index.
    pub fn latest_per_parent<'a>(&self, db: &'a Database, parents: &[P::Id], n: u64) -> Latest<'a, C, P> {
        Latest::new(db, self.relation(), parents.to_vec(), n)
    }

    /// The parent id a child refers to, if set.
    pub fn parent_of<Q: Carries<C, K, F>>(&self, child: &Q) -> Option<P::Id> {
        let mut out = None;
        (self.visit)(child.carried(), &mut |id| out = Some(id.clone()));
        out
    }

    /// A filter matching the children of `parent`.
    pub fn filter(&self, parent: &P::Id) -> Filter {
        Filter::new(bson::doc! { self.relation().field: crate::id::DocId::to_bson(parent) })
    }

    /// The declared order of the children (`sort = "-time"`), if any.
    pub fn order(&self) -> Option<Sort> {
        Sort::declared(self.relation().order)
    }
}

impl<P: Document, T: Document, F, const K: u64> RefMany<P, T, F, K> {
    /// Adds `target` to the array of `parent` (`$addToSet`, under the bound),
    /// and, for a two-way reference, `parent` to the other side: an inverse
    /// array gets it with `$addToSet`, an inverse single reference is moved
    /// (the previous holder's array loses it). Both sides in one transaction
    /// when the deployment supports one ([`LinkOutcome::transactional`](crate::relations::LinkOutcome::transactional)).
    /// Await it, or run it in your own session with [`LinkWrite::session`].
    pub fn link<'a>(&self, db: &'a Database, parent: &P::Id, target: &T::Id) -> LinkWrite<'a> {
        LinkWrite::new(db, P::schema(), self.relation(), parent.to_bson(), target.to_bson(), false)
    }

    /// Removes `target` from the array of `parent`, and the back-reference
    /// from `target` for a two-way reference.
    /// Await it, or run it in your own session with [`LinkWrite::session`].
    pub fn unlink<'a>(&self, db: &'a Database, parent: &P::Id, target: &T::Id) -> LinkWrite<'a> {
        LinkWrite::new(db, P::schema(), self.relation(), parent.to_bson(), target.to_bson(), true)
    }

    /// The parents whose array holds `target`: the reverse lookup of a
    /// one-way reference, through the multikey index `ensure_indexes` makes.
    pub fn referrers(&self, db: &Database, target: &T::Id) -> Find<P, P> {
        Find::on(db, Filter::new(bson::doc! { self.relation().id_path(): target.to_bson() }))
    }
}

impl<P: Document, T: Document, F, const K: u64> RefOne<P, T, F, K> {
    /// Points `child`'s reference at `target`, and for a two-way reference
    /// moves `child` from the previous target's array to `target`'s: the
    /// "reassign a task to another person" of the reference texts, both
    /// sides in one call (in a transaction when the deployment supports one).
    /// Await it, or run it in your own session with [`LinkWrite::session`].
    pub fn reassign<'a>(&self, db: &'a Database, child: &P::Id, target: &T::Id) -> LinkWrite<'a> {
        LinkWrite::new(db, P::schema(), self.relation(), child.to_bson(), target.to_bson(), false)
    }

    /// Clears an optional reference (and the back-reference of a two-way one).
    /// Await it, or run it in your own session with [`LinkWrite::session`].
    pub fn unlink<'a>(&self, db: &'a Database, child: &P::Id, target: &T::Id) -> LinkWrite<'a> {
        LinkWrite::new(db, P::schema(), self.relation(), child.to_bson(), target.to_bson(), true)
    }
}
