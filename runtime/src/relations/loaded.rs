//! The result of a loader: the related documents of each parent, in the
//! parent's own order, duplicates kept, with the ids that had no document.

/// The related documents of each of N parents, by parent index (the order
/// of the slice given to the loader).
///
/// Each document is stored once, however many parents (or array slots)
/// refer to it; [`Loaded::of`] yields it once per reference, in the order of
/// the parent's array.
#[derive(Debug)]
pub struct Loaded<V, I> {
    pub(crate) items: Vec<V>,
    /// `slots[offsets[p]..offsets[p + 1]]` are the item indexes of parent `p`.
    pub(crate) offsets: Vec<usize>,
    pub(crate) slots: Vec<u32>,
    /// `missing[missing_offsets[p]..missing_offsets[p + 1]]`: ids of parent `p` with no document.
    pub(crate) missing_offsets: Vec<usize>,
    pub(crate) missing: Vec<I>,
}

impl<V, I> Loaded<V, I> {
    /// The documents of each of `parents` (their positions in `items`, from
    /// `group`), none missing: the reads that find the documents by their
    /// reference to the parent rather than by id.
    pub(crate) fn grouped<'g>(items: Vec<V>, parents: &[I], group: impl Fn(&I) -> &'g [u32]) -> Self {
        let mut out = Loaded {
            items,
            offsets: vec![0],
            slots: Vec::new(),
            missing_offsets: vec![0; parents.len() + 1],
            missing: Vec::new(),
        };
        for p in parents {
            out.slots.extend_from_slice(group(p));
            out.offsets.push(out.slots.len());
        }
        out
    }

    /// How many parents.
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Whether there were no parents.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The related documents of parent `p`, in its order (empty when `p` is out of range).
    pub fn of(&self, p: usize) -> impl ExactSizeIterator<Item = &V> + '_ {
        self.slots_of(p).iter().map(move |&i| &self.items[i as usize])
    }

    /// The item indexes of parent `p` (empty when `p` is out of range).
    fn slots_of(&self, p: usize) -> &[u32] {
        match (self.offsets.get(p), self.offsets.get(p + 1)) {
            (Some(&a), Some(&b)) => &self.slots[a..b],
            _ => &[],
        }
    }

    /// The positions in [`Loaded::distinct`] of parent `p`'s documents, in
    /// the order of [`Loaded::of`]: the link to a nested load made from
    /// `distinct()` (the suppliers of the parts of the products), whose
    /// parent `k` is the document at position `k` here.
    ///
    /// ```
    /// # docrel::testing::doc_test(|db| async move {
    /// use docrel::{Document, View, bson::oid::ObjectId};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "suppliers")]
    /// struct Supplier { #[serde(rename = "_id")] id: ObjectId, name: String }
    ///
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "parts")]
    /// struct Part { #[serde(rename = "_id")] id: ObjectId, name: String, #[reference(to = Supplier)] supplier: ObjectId }
    ///
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "products")]
    /// struct Product { #[serde(rename = "_id")] id: ObjectId, #[reference(many, to = Part, max = 100)] parts: Vec<ObjectId> }
    ///
    /// /// A part with what the next level needs: its supplier reference.
    /// #[derive(View, Deserialize)]
    /// #[view(of = Part)]
    /// struct PartLink { name: String, supplier: ObjectId }
    ///
    /// let acme = Supplier { id: ObjectId::new(), name: "acme".into() };
    /// let bolt = Part { id: ObjectId::new(), name: "bolt".into(), supplier: acme.id };
    /// Supplier::repo(&db).insert(&acme).await?;
    /// Part::repo(&db).insert(&bolt).await?;
    /// let products = vec![Product { id: ObjectId::new(), parts: vec![bolt.id, bolt.id] }];
    ///
    /// let trips = docrel::testing::round_trips(&db);
    /// let mark = trips.mark();
    /// let parts = Product::rels().parts.load::<PartLink>(&db, &products).await?;
    /// let suppliers = Part::rels().supplier.load::<Supplier>(&db, parts.distinct()).await?;
    /// assert_eq!(trips.since(mark), 2); // one per level, whatever the number of parents
    /// let line: Vec<_> = parts.indices(0).map(|k| (&parts.distinct()[k].name, &suppliers.one(k).unwrap().name)).collect();
    /// assert_eq!(line, [(&"bolt".to_owned(), &"acme".to_owned()); 2]);
    /// # Ok(()) });
    /// ```
    pub fn indices(&self, p: usize) -> impl ExactSizeIterator<Item = usize> + '_ {
        self.slots_of(p).iter().map(|&i| i as usize)
    }

    /// The first related document of parent `p` (for single references).
    pub fn one(&self, p: usize) -> Option<&V> {
        self.of(p).next()
    }

    /// The ids of parent `p` that matched no document (dangling references).
    pub fn missing(&self, p: usize) -> &[I] {
        match (self.missing_offsets.get(p), self.missing_offsets.get(p + 1)) {
            (Some(&a), Some(&b)) => &self.missing[a..b],
            _ => &[],
        }
    }

    /// Every dangling reference, as `(parent index, id)`.
    pub fn all_missing(&self) -> impl Iterator<Item = (usize, &I)> + '_ {
        (0..self.len()).flat_map(move |p| self.missing(p).iter().map(move |id| (p, id)))
    }

    /// The distinct documents loaded, each once.
    pub fn distinct(&self) -> &[V] {
        &self.items
    }

    /// Each parent's related documents, in parent order.
    pub fn iter(&self) -> impl Iterator<Item = Vec<&V>> + '_ {
        (0..self.len()).map(move |p| self.of(p).collect())
    }
}
