//! Typed field handles and the filters, updates and sorts built from them,
//! so that no BSON path is ever typed by hand.

use crate::error::{Error, Result};
use bson::{doc, Bson, Document as BsonDoc};
use serde::Serialize;
use std::marker::PhantomData;

/// The handle of one stored field of document type `D`, whose Rust type is `V`.
///
/// The derive generates one per field (`Part::fields().name`); it knows the
/// stored path, after serde renames, and the bound of bounded arrays.
///
/// ```
/// use docrel::{Document, bson::doc};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "parts")]
/// struct Part {
///     #[serde(rename = "_id")]
///     id: i32,
///     #[serde(rename = "partno")]
///     part_number: String,
///     qty: i32,
/// }
///
/// let f = Part::fields();
/// assert_eq!(f.part_number.path(), "partno");
/// assert_eq!(f.qty.gt(10).into_document()?, doc! {"qty": {"$gt": 10}});
/// # Ok::<(), docrel::Error>(())
/// ```
pub struct Field<D, V> {
    path: &'static str,
    max: Option<u32>,
    _types: PhantomData<fn() -> (D, V)>,
}

impl<D, V> Clone for Field<D, V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<D, V> Copy for Field<D, V> {}

impl<D, V> std::fmt::Debug for Field<D, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Field").field("path", &self.path).field("max", &self.max).finish()
    }
}

fn to_bson<V: Serialize + ?Sized>(path: &str, value: &V) -> Result<Bson> {
    bson::to_bson(value).map_err(|e| Error::Encode { what: format!("a value for `{path}`"), message: e.to_string() })
}

impl<D, V> Field<D, V> {
    /// A handle (generated code calls this).
    #[doc(hidden)]
    pub const fn new(path: &'static str, max: Option<u32>) -> Self {
        Field { path, max, _types: PhantomData }
    }

    /// The stored path of the field.
    pub const fn path(&self) -> &'static str {
        self.path
    }

    /// The declared bound of an array field (`#[embed(max = N)]`).
    pub const fn max(&self) -> Option<u32> {
        self.max
    }

    fn op<T: Serialize + ?Sized>(&self, op: &str, value: &T) -> Filter {
        Filter::from_result(to_bson(self.path, value).map(|v| doc! { self.path: { op: v } }))
    }

    /// `{path: value}`.
    pub fn eq<T: Serialize + ?Sized>(&self, value: &T) -> Filter
    where
        V: PartialEq<T>,
    {
        Filter::from_result(to_bson(self.path, value).map(|v| doc! { self.path: v }))
    }
    /// `{path: {$ne: value}}`.
    pub fn ne<T: Serialize + ?Sized>(&self, value: &T) -> Filter
    where
        V: PartialEq<T>,
    {
        self.op("$ne", value)
    }
    /// `{path: {$gt: value}}`.
    pub fn gt<T: Serialize>(&self, value: T) -> Filter
    where
        V: PartialOrd<T>,
    {
        self.op("$gt", &value)
    }
    /// `{path: {$gte: value}}`.
    pub fn gte<T: Serialize>(&self, value: T) -> Filter
    where
        V: PartialOrd<T>,
    {
        self.op("$gte", &value)
    }
    /// `{path: {$lt: value}}`.
    pub fn lt<T: Serialize>(&self, value: T) -> Filter
    where
        V: PartialOrd<T>,
    {
        self.op("$lt", &value)
    }
    /// `{path: {$lte: value}}`.
    pub fn lte<T: Serialize>(&self, value: T) -> Filter
    where
        V: PartialOrd<T>,
    {
        self.op("$lte", &value)
    }
    /// `{path: {$in: [values]}}`.
    pub fn is_in<T: Serialize>(&self, values: &[T]) -> Filter {
        self.op("$in", values)
    }
    /// `{path: {$exists: yes}}`.
    pub fn exists(&self, yes: bool) -> Filter {
        Filter::new(doc! { self.path: { "$exists": yes } })
    }

    /// `{$set: {path: value}}`.
    pub fn set(&self, value: V) -> Update<D>
    where
        V: Serialize,
    {
        Update::op(self.path, "$set", to_bson(self.path, &value), None)
    }
    /// `{$unset: {path: ""}}`.
    pub fn unset(&self) -> Update<D> {
        Update::op(self.path, "$unset", Ok(Bson::String(String::new())), None)
    }
    /// `{$inc: {path: by}}`.
    pub fn inc(&self, by: V) -> Update<D>
    where
        V: Serialize + std::ops::Add<Output = V>,
    {
        Update::op(self.path, "$inc", to_bson(self.path, &by), None)
    }

    /// Sort ascending on this field.
    pub fn asc(&self) -> Sort {
        Sort(doc! { self.path: 1 })
    }
    /// Sort descending on this field.
    pub fn desc(&self) -> Sort {
        Sort(doc! { self.path: -1 })
    }

    /// The path of a field inside this (embedded) field: `parts.name`.
    pub fn child(&self, stored_name: &str) -> String {
        format!("{}.{stored_name}", self.path)
    }
}

impl<D, E> Field<D, Vec<E>> {
    /// `{path: element}`: the array contains the element.
    pub fn contains(&self, element: &E) -> Filter
    where
        E: Serialize,
    {
        Filter::from_result(to_bson(self.path, element).map(|v| doc! { self.path: v }))
    }

    /// `{$push: {path: {$each: elements}}}`. Through docrel, a push into a
    /// bounded array only happens while the array has room for every element
    /// (see [`crate::repository::Repository::update_by_id`]).
    pub fn push(&self, elements: impl IntoIterator<Item = E>) -> Update<D>
    where
        E: Serialize,
    {
        let elements: Vec<E> = elements.into_iter().collect();
        let n = elements.len();
        Update::op(
            self.path,
            "$push",
            to_bson(self.path, &elements).map(|v| Bson::Document(doc! {"$each": v})),
            Some((n, self.max)),
        )
    }

    /// `{$addToSet: {path: {$each: elements}}}`.
    pub fn add_to_set(&self, elements: impl IntoIterator<Item = E>) -> Update<D>
    where
        E: Serialize,
    {
        let elements: Vec<E> = elements.into_iter().collect();
        let n = elements.len();
        Update::op(
            self.path,
            "$addToSet",
            to_bson(self.path, &elements).map(|v| Bson::Document(doc! {"$each": v})),
            Some((n, self.max)),
        )
    }

    /// `{$pull: {path: element}}`.
    pub fn pull(&self, element: &E) -> Update<D>
    where
        E: Serialize,
    {
        Update::op(self.path, "$pull", to_bson(self.path, element), None)
    }
}

/// A query filter; combine with [`Filter::and`]. Errors of encoding a value
/// are kept and reported when the filter is used, so building never panics.
///
/// ```
/// use docrel::{Filter, bson::doc};
/// let f = Filter::new(doc! {"a": 1}).and(Filter::new(doc! {"b": 2}));
/// assert_eq!(f.into_document()?, doc! {"a": 1, "b": 2});
/// assert_eq!(Filter::all().into_document()?, doc! {});
/// # Ok::<(), docrel::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Filter {
    doc: BsonDoc,
    error: Option<String>,
}

impl Filter {
    /// A filter from a BSON document.
    pub fn new(doc: BsonDoc) -> Self {
        Filter { doc, error: None }
    }
    /// The filter that matches every document.
    pub fn all() -> Self {
        Filter::default()
    }
    fn from_result(r: Result<BsonDoc>) -> Self {
        match r {
            Ok(doc) => Filter::new(doc),
            Err(e) => Filter { doc: BsonDoc::new(), error: Some(e.to_string()) },
        }
    }
    /// Both filters. Keys of the same field are combined with `$and`.
    pub fn and(mut self, other: impl Into<Filter>) -> Self {
        let other = other.into();
        if self.error.is_none() {
            self.error = other.error;
        }
        if other.doc.keys().any(|k| self.doc.contains_key(k)) {
            let left = std::mem::take(&mut self.doc);
            self.doc = doc! { "$and": [left, other.doc] };
        } else {
            self.doc.extend(other.doc);
        }
        self
    }
    /// The BSON document, or the error met while building it.
    pub fn into_document(self) -> Result<BsonDoc> {
        match self.error {
            None => Ok(self.doc),
            Some(message) => Err(Error::Invalid { what: "filter", message }),
        }
    }
}

impl From<BsonDoc> for Filter {
    fn from(doc: BsonDoc) -> Self {
        Filter::new(doc)
    }
}

/// An update of documents of type `D`; combine with [`Update::and`].
///
/// ```
/// use docrel::{Document, bson::doc};
/// # use serde::{Deserialize, Serialize};
/// # #[derive(Document, Serialize, Deserialize)]
/// # #[document(collection = "parts")]
/// # struct Part { #[serde(rename = "_id")] id: i32, name: String, qty: i32 }
/// let u = Part::fields().name.set("bolt".into()).and(Part::fields().qty.inc(1));
/// assert_eq!(u.to_document()?, doc! {"$set": {"name": "bolt"}, "$inc": {"qty": 1}});
/// assert_eq!(u.touched().collect::<Vec<_>>(), ["name", "qty"]);
/// # Ok::<(), docrel::Error>(())
/// ```
pub struct Update<D> {
    doc: BsonDoc,
    touched: Vec<String>,
    pushes: Vec<Push>,
    error: Option<String>,
    _doc: PhantomData<fn() -> D>,
}

impl<D> Clone for Update<D> {
    fn clone(&self) -> Self {
        Update {
            doc: self.doc.clone(),
            touched: self.touched.clone(),
            pushes: self.pushes.clone(),
            error: self.error.clone(),
            _doc: PhantomData,
        }
    }
}

impl<D> std::fmt::Debug for Update<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Update").field("doc", &self.doc).field("error", &self.error).finish()
    }
}

impl<D> Update<D> {
    fn op(path: &'static str, op: &str, value: Result<Bson>, grows: Option<(usize, Option<u32>)>) -> Self {
        let mut u = Update {
            doc: BsonDoc::new(),
            touched: vec![path.to_owned()],
            pushes: vec![],
            error: None,
            _doc: PhantomData,
        };
        match value {
            Ok(v) => {
                u.doc.insert(op, doc! { path: v });
            }
            Err(e) => u.error = Some(e.to_string()),
        }
        if let Some((count, max)) = grows {
            u.pushes.push(Push { path, count, max });
        }
        u
    }

    /// An update from a raw BSON update document. It is passed as given;
    /// prefer the typed handles, which docrel can check.
    pub fn raw(doc: BsonDoc) -> Self {
        let touched = doc.values().filter_map(Bson::as_document).flat_map(|d| d.keys()).cloned().collect();
        Update { doc, touched, pushes: vec![], error: None, _doc: PhantomData }
    }

    /// Both updates.
    pub fn and(mut self, other: Update<D>) -> Self {
        if self.error.is_none() {
            self.error = other.error;
        }
        for (op, fields) in other.doc {
            match (self.doc.get_mut(&op), fields) {
                (Some(Bson::Document(mine)), Bson::Document(theirs)) => mine.extend(theirs),
                (_, fields) => {
                    self.doc.insert(op, fields);
                }
            }
        }
        self.touched.extend(other.touched);
        self.pushes.extend(other.pushes);
        self
    }

    /// The stored paths this update writes.
    pub fn touched(&self) -> impl Iterator<Item = &str> + '_ {
        self.touched.iter().map(String::as_str)
    }

    /// The arrays this update pushes to, with how many elements each.
    pub(crate) fn pushes(&self) -> &[Push] {
        &self.pushes
    }

    /// The BSON update document, or the error met while building it.
    pub fn to_document(&self) -> Result<BsonDoc> {
        match &self.error {
            None if self.doc.is_empty() => {
                Err(Error::Invalid { what: "update", message: "it changes nothing; add at least one operation".into() })
            }
            None => Ok(self.doc.clone()),
            Some(message) => Err(Error::Invalid { what: "update", message: message.clone() }),
        }
    }
}

/// An array an update may grow, with its bound.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Push {
    pub(crate) path: &'static str,
    pub(crate) count: usize,
    pub(crate) max: Option<u32>,
}

/// A sort order; chain with [`Sort::then`].
///
/// ```
/// use docrel::{Sort, bson::doc};
/// let s = Sort::new(doc! {"time": -1}).then(Sort::new(doc! {"_id": 1}));
/// assert_eq!(s.into_document(), doc! {"time": -1, "_id": 1});
/// ```
#[derive(Debug, Clone, Default)]
pub struct Sort(BsonDoc);

impl Sort {
    /// A sort from a BSON document.
    pub fn new(doc: BsonDoc) -> Self {
        Sort(doc)
    }

    /// A sort from declared `(field, 1 | -1)` pairs (`sort = "-time"`).
    pub(crate) fn from_pairs(pairs: &[(&str, i32)]) -> Self {
        Sort(pairs.iter().map(|(f, d)| ((*f).to_owned(), Bson::Int32(*d))).collect())
    }

    /// The declared order, or `None` when nothing was declared.
    pub(crate) fn declared(pairs: &[(&str, i32)]) -> Option<Self> {
        (!pairs.is_empty()).then(|| Sort::from_pairs(pairs))
    }
    /// This order, then `next` among equals.
    pub fn then(mut self, next: Sort) -> Self {
        self.0.extend(next.0);
        self
    }
    /// The BSON sort document.
    pub fn into_document(self) -> BsonDoc {
        self.0
    }
    /// The BSON sort document, borrowed.
    pub fn as_document(&self) -> &BsonDoc {
        &self.0
    }
}
