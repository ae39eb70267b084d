//! Query filters and sort orders: combined with `and`, `or` and `!`, their
//! encoding errors kept until they are used. The typed conditions on a
//! field ([`super::conditions`]) build them.

use crate::error::{Error, Result};
use mongodb::bson::{doc, Bson, Document as BsonDoc};

/// Whether a value is a condition of operators (`{$gt: 1, $lt: 5}`).
pub(super) fn is_operators(doc: &BsonDoc) -> bool {
    !doc.is_empty() && doc.keys().all(|k| k.starts_with('$'))
}

/// A query filter. Combine with [`Filter::and`], [`Filter::or`],
/// [`Filter::any_of`], [`Filter::all_of`], [`Filter::none_of`] and `!`
/// (negation). Errors of encoding a value are kept and reported when the
/// filter is used, so building never panics.
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
    /// A filter from a BSON document, taken as written: the caller vouches
    /// for it (typed handles keep values from becoming operators; this does not).
    pub fn new(doc: BsonDoc) -> Self {
        Filter { doc, error: None }
    }
    /// The filter that matches every document.
    pub fn all() -> Self {
        Filter::default()
    }
    /// The filter that matches no document: `{$nor: [{}]}`.
    ///
    /// ```
    /// use docrel::{Filter, bson::doc};
    /// assert_eq!(Filter::none().into_document()?, doc! {"$nor": [{}]});
    /// assert_eq!((!Filter::none()).into_document()?, doc! {});
    /// # Ok::<(), docrel::Error>(())
    /// ```
    pub fn none() -> Self {
        Filter::new(doc! { "$nor": [{}] })
    }
    pub(super) fn invalid(message: String) -> Self {
        Filter { doc: BsonDoc::new(), error: Some(message) }
    }
    pub(super) fn from_result(r: Result<BsonDoc>) -> Self {
        match r {
            Ok(doc) => Filter::new(doc),
            Err(e) => Filter::invalid(e.to_string()),
        }
    }
    fn keep_error(&mut self, other: Option<String>) {
        if self.error.is_none() {
            self.error = other;
        }
    }

    /// Both filters. Conditions on the same field merge into one
    /// (`{qty: {$gt: 1, $lt: 5}}`) when they use different operators;
    /// otherwise the two are joined with `$and`.
    ///
    /// ```
    /// use docrel::{Document, bson::doc};
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(Document, Serialize, Deserialize)]
    /// # #[document(collection = "parts")]
    /// # struct Part { #[serde(rename = "_id")] id: i32, qty: i32 }
    /// let qty = Part::fields().qty;
    /// assert_eq!(qty.gt(1).and(qty.lt(5)).into_document()?, doc! {"qty": {"$gt": 1, "$lt": 5}});
    /// assert_eq!(
    ///     qty.ne(1).and(qty.ne(2)).into_document()?,
    ///     doc! {"$and": [{"qty": {"$ne": 1}}, {"qty": {"$ne": 2}}]}
    /// );
    /// # Ok::<(), docrel::Error>(())
    /// ```
    pub fn and(mut self, other: impl Into<Filter>) -> Self {
        let other = other.into();
        self.keep_error(other.error);
        // Only conditions on a field merge (`{$expr: ..}` holds one expression).
        let clash = other.doc.iter().any(|(k, theirs)| match (self.doc.get(k), theirs) {
            (None, _) => false,
            (Some(Bson::Document(mine)), Bson::Document(theirs)) if !k.starts_with('$') => {
                !(is_operators(mine) && is_operators(theirs) && theirs.keys().all(|op| !mine.contains_key(op)))
            }
            _ => true,
        });
        if clash {
            let mut all = Vec::new();
            for part in [std::mem::take(&mut self.doc), other.doc] {
                match lone(&part, "$and") {
                    Some(items) => all.extend(items.iter().cloned()),
                    None => all.push(Bson::Document(part)),
                }
            }
            self.doc = doc! { "$and": all };
            return self;
        }
        for (k, theirs) in other.doc {
            match (self.doc.get_mut(&k), theirs) {
                (Some(Bson::Document(mine)), Bson::Document(theirs)) => mine.extend(theirs),
                (_, theirs) => {
                    self.doc.insert(k, theirs);
                }
            }
        }
        self
    }

    /// Either filter: `{$or: [self, other]}` (a chain of `or` stays one `$or`).
    ///
    /// ```
    /// use docrel::{Document, bson::doc};
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(Document, Serialize, Deserialize)]
    /// # #[document(collection = "parts")]
    /// # struct Part { #[serde(rename = "_id")] id: i32, qty: i32 }
    /// let qty = Part::fields().qty;
    /// assert_eq!(
    ///     qty.lt(1).or(qty.gt(90)).or(qty.eq(50)).into_document()?,
    ///     doc! {"$or": [{"qty": {"$lt": 1}}, {"qty": {"$gt": 90}}, {"qty": {"$eq": 50}}]}
    /// );
    /// # Ok::<(), docrel::Error>(())
    /// ```
    pub fn or(self, other: impl Into<Filter>) -> Self {
        Filter::any_of([self, other.into()])
    }

    /// At least one of the filters (`$or`); none at all matches nothing.
    ///
    /// ```
    /// use docrel::{Filter, bson::doc};
    /// let f = Filter::any_of([Filter::new(doc! {"a": 1}), Filter::new(doc! {"b": 2})]);
    /// assert_eq!(f.into_document()?, doc! {"$or": [{"a": 1}, {"b": 2}]});
    /// assert_eq!(Filter::any_of([]).into_document()?, Filter::none().into_document()?);
    /// # Ok::<(), docrel::Error>(())
    /// ```
    pub fn any_of(filters: impl IntoIterator<Item = Filter>) -> Self {
        let mut error = None;
        let mut branches = Vec::new();
        for f in filters {
            error = error.or(f.error);
            match lone(&f.doc, "$or") {
                Some(items) => branches.extend(items.iter().cloned()),
                None => branches.push(Bson::Document(f.doc)),
            }
        }
        let mut out = match branches.len() {
            0 => Filter::none(),
            1 => match branches.pop() {
                Some(Bson::Document(one)) => Filter::new(one),
                Some(other) => Filter::new(doc! { "$or": [other] }),
                None => Filter::none(),
            },
            _ => Filter::new(doc! { "$or": branches }),
        };
        out.keep_error(error);
        out
    }

    /// Every one of the filters (as [`Filter::and`]); none at all matches everything.
    ///
    /// ```
    /// use docrel::{Filter, bson::doc};
    /// let f = Filter::all_of([Filter::new(doc! {"a": 1}), Filter::new(doc! {"b": 2})]);
    /// assert_eq!(f.into_document()?, doc! {"a": 1, "b": 2});
    /// # Ok::<(), docrel::Error>(())
    /// ```
    pub fn all_of(filters: impl IntoIterator<Item = Filter>) -> Self {
        filters.into_iter().fold(Filter::all(), Filter::and)
    }

    /// None of the filters: `{$nor: [..]}`; none at all matches everything.
    ///
    /// ```
    /// use docrel::{Filter, bson::doc};
    /// let f = Filter::none_of([Filter::new(doc! {"a": 1}), Filter::new(doc! {"b": 2})]);
    /// assert_eq!(f.into_document()?, doc! {"$nor": [{"a": 1}, {"b": 2}]});
    /// # Ok::<(), docrel::Error>(())
    /// ```
    #[doc(alias = "nor")]
    pub fn none_of(filters: impl IntoIterator<Item = Filter>) -> Self {
        let mut error = None;
        let mut branches = Vec::new();
        for f in filters {
            error = error.or(f.error);
            branches.push(Bson::Document(f.doc));
        }
        let mut out = if branches.is_empty() { Filter::all() } else { Filter::new(doc! { "$nor": branches }) };
        out.keep_error(error);
        out
    }

    /// The BSON document, or the error met while building it.
    pub fn into_document(self) -> Result<BsonDoc> {
        match self.error {
            None => Ok(self.doc),
            Some(message) => Err(Error::Invalid { what: crate::error::Misuse::Filter, message }),
        }
    }

    /// The condition on one array element, from a filter built on an
    /// [`Element`] handle: the operators themselves for a scalar element
    /// (`{"": {$gte: 1}}` becomes `{$gte: 1}`), the filter as it is for a
    /// struct element (its paths are relative to the element).
    pub(super) fn element_condition(self) -> std::result::Result<BsonDoc, String> {
        if let Some(e) = self.error {
            return Err(e);
        }
        if let (1, Some(Bson::Document(ops))) = (self.doc.len(), self.doc.get("")) {
            if is_operators(ops) {
                return Ok(ops.clone());
            }
        }
        if names_the_element(&self.doc) {
            return Err("conditions on the element itself combine only with `and` (each operator once) and `!`; \
                        for alternatives use `is_in`"
                .into());
        }
        Ok(self.doc)
    }
}

/// The items of a filter that is only `{op: [..]}`.
fn lone<'d>(doc: &'d BsonDoc, op: &str) -> Option<&'d Vec<Bson>> {
    match (doc.len(), doc.get(op)) {
        (1, Some(Bson::Array(items))) => Some(items),
        _ => None,
    }
}

/// Whether a filter compares the element itself (the empty path) anywhere.
fn names_the_element(doc: &BsonDoc) -> bool {
    doc.iter().any(|(k, v)| {
        k.is_empty()
            || (k.starts_with('$')
                && matches!(v, Bson::Array(items)
                    if items.iter().any(|i| matches!(i, Bson::Document(d) if names_the_element(d)))))
    })
}

/// Negation: `!filter` matches exactly the documents `filter` does not
/// (documents without the field included). A condition on one field becomes
/// `{field: {$not: ..}}`; anything else `{$nor: [filter]}`; a double negation
/// cancels out.
///
/// ```
/// use docrel::{Document, Filter, bson::doc};
/// # use serde::{Deserialize, Serialize};
/// # #[derive(Document, Serialize, Deserialize)]
/// # #[document(collection = "parts")]
/// # struct Part { #[serde(rename = "_id")] id: i32, name: String, qty: i32 }
/// let f = Part::fields();
/// assert_eq!((!f.qty.gt(5)).into_document()?, doc! {"qty": {"$not": {"$gt": 5}}});
/// assert_eq!((!!f.qty.gt(5)).into_document()?, doc! {"qty": {"$gt": 5}});
/// assert_eq!(
///     (!f.qty.gt(5).and(f.name.eq("bolt"))).into_document()?,
///     doc! {"$nor": [{"qty": {"$gt": 5}, "name": {"$eq": "bolt"}}]}
/// );
/// # Ok::<(), docrel::Error>(())
/// ```
impl std::ops::Not for Filter {
    type Output = Filter;

    fn not(self) -> Filter {
        let Filter { doc, error } = self;
        let negated = match doc.iter().next() {
            Some((k, Bson::Document(ops))) if doc.len() == 1 && !k.starts_with('$') && is_operators(ops) => {
                match (ops.len(), ops.get("$not")) {
                    (1, Some(Bson::Document(inner))) => doc! { k: inner.clone() },
                    _ => doc! { k: { "$not": ops.clone() } },
                }
            }
            _ => match lone(&doc, "$nor") {
                Some(items) if items.len() == 1 => match &items[0] {
                    Bson::Document(inner) => inner.clone(),
                    _ => doc! { "$nor": [doc] },
                },
                _ => doc! { "$nor": [doc] },
            },
        };
        Filter { doc: negated, error }
    }
}

impl From<BsonDoc> for Filter {
    fn from(doc: BsonDoc) -> Self {
        Filter::new(doc)
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::field::Field;

    struct Doc;

    #[test]
    fn negation_of_alternatives_and_of_nothing() {
        let a = Filter::new(doc! {"a": {"$eq": 1}});
        let b = Filter::new(doc! {"b": {"$eq": 2}});
        assert_eq!(
            (!a.clone().or(b.clone())).into_document().ok(),
            Some(doc! {"$nor": [{"$or": [{"a": {"$eq": 1}}, {"b": {"$eq": 2}}]}]})
        );
        assert_eq!((!Filter::all()).into_document().ok(), Some(doc! {"$nor": [{}]}));
        assert_eq!(Filter::none_of([a]).into_document().ok(), Some(doc! {"$nor": [{"a": {"$eq": 1}}]}));
    }

    #[test]
    fn top_level_operators_never_merge() {
        let a = Filter::new(doc! {"$expr": {"$gt": ["$a", 1]}});
        let b = Filter::new(doc! {"$expr": {"$lt": ["$a", 5]}});
        assert_eq!(
            a.and(b).into_document().ok(),
            Some(doc! {"$and": [{"$expr": {"$gt": ["$a", 1]}}, {"$expr": {"$lt": ["$a", 5]}}]})
        );
    }

    #[test]
    fn chained_ands_stay_flat() {
        let q: Field<Doc, i32> = Field::new("q", None);
        let two = || q.ne(1).and(q.ne(2));
        assert_eq!(two().into_document().ok(), Some(doc! {"$and": [{"q": {"$ne": 1}}, {"q": {"$ne": 2}}]}));
        assert_eq!(
            two().and(q.ne(3).and(q.ne(4))).into_document().ok(),
            Some(doc! {"$and": [{"q": {"$ne": 1}}, {"q": {"$ne": 2}}, {"q": {"$ne": 3}}, {"q": {"$ne": 4}}]})
        );
    }
}
