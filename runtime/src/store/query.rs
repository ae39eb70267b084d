//! Typed field handles and the filters and sorts built from them, so that
//! no BSON path is ever typed by hand. Updates built from the same handles
//! live in [`super::update`].
//!
//! # Values are always values
//! Every value a filter takes from the caller is sent as the operand of an
//! operator (`{path: {$eq: value}}`, `{path: {$in: [..]}}`, ...), never as
//! the condition itself, so a map or document value such as `{"$ne": ""}`
//! (from user input, say) matches only a stored value equal to it, never
//! every document. Patterns are patterns only where asked for
//! ([`Field::regex`]; [`Field::starts_with`] escapes its text): in
//! `is_in`, `not_in` and `contains_all`, where the server would read a
//! regular expression as a pattern (and refuses a document with `$` keys),
//! such a value is compared on its own with `$eq`. Paths come from the
//! derive or from `&'static str` names in the program ([`Field::at`]),
//! never from data.

use crate::bson_compat;
use crate::error::{Error, Result};
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use serde::Serialize;
use std::collections::HashSet;
use std::marker::PhantomData;
use std::sync::{Mutex, OnceLock, PoisonError};

pub use super::update::Update;

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

/// The element of an array field, as the "document" of the handle that
/// [`Field::elem_match`] and [`Field::pull_where`] pass to their closure:
/// paths under it are relative to the element. It is not a [`crate::Document`],
/// so such a handle builds filters but no updates.
pub struct Element<E> {
    _element: PhantomData<fn() -> E>,
}

/// Field types a regular expression can match ([`Field::regex`],
/// [`Field::starts_with`]): strings, and options and arrays of them.
/// Implement it for your own type when it is stored as a BSON string.
pub trait Text {}
impl Text for String {}
impl Text for str {}
impl Text for Box<str> {}
impl Text for std::borrow::Cow<'_, str> {}
impl<T: Text + ?Sized> Text for &T {}
impl<T: Text> Text for Option<T> {}
impl<T: Text> Text for Vec<T> {}

pub(super) fn to_bson<V: Serialize + ?Sized>(path: &str, value: &V) -> Result<Bson> {
    bson_compat::to_bson(value)
        .map_err(|e| Error::Encode { what: format!("a value for `{path}`"), message: e.to_string() })
}

/// One leaked copy of each distinct nested path, so handles stay `Copy` and
/// their paths `&'static str`. Paths are built from `&'static str` names in
/// the program only ([`Field::at`]), so the set is bounded by the program.
fn intern(path: String) -> &'static str {
    static PATHS: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut paths = PATHS.get_or_init(Default::default).lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(known) = paths.get(path.as_str()) {
        return known;
    }
    let leaked: &'static str = Box::leak(path.into_boxed_str());
    paths.insert(leaked);
    leaked
}

/// Whether a value in an `$in`/`$nin`/`$all` list would not be read as a
/// value there: a regular expression (a pattern) or a document with `$` keys
/// (refused by the server).
fn needs_eq(value: &Bson) -> bool {
    match value {
        Bson::RegularExpression(_) => true,
        Bson::Document(d) => d.keys().any(|k| k.starts_with('$')),
        _ => false,
    }
}

/// Whether a value is a condition of operators (`{$gt: 1, $lt: 5}`).
pub(super) fn is_operators(doc: &BsonDoc) -> bool {
    !doc.is_empty() && doc.keys().all(|k| k.starts_with('$'))
}

/// Escapes every character a regular expression gives a meaning to, so the
/// text matches itself: `a.b` becomes `a\.b`. The result is safe with any
/// options, `x` included (whitespace and `#` are escaped too).
///
/// ```
/// assert_eq!(docrel::escape_regex("1+1=2? (yes)"), r"1\+1=2\?\ \(yes\)");
/// ```
pub fn escape_regex(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\0' => out.push_str(r"\x00"),
            '\\' | '^' | '$' | '.' | '|' | '?' | '*' | '+' | '(' | ')' | '[' | ']' | '{' | '}' | '-' | '#' | '/' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_ascii_whitespace() => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
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

    /// The handle of a field inside this one, by its stored name: a field
    /// of an embedded struct (`address.city`), of the elements of an array
    /// of structs (`parts.qty`: a filter on it matches when any element
    /// does), or several levels at once (`"address.geo.lat"`). The name is
    /// `&'static str` on purpose: paths come from the program, not from data.
    ///
    /// The type `U` is the caller's word: typed handles of embedded structs
    /// need derive support that does not exist yet, so nothing checks that
    /// the struct has such a field of that type. The handle carries no bound.
    ///
    /// ```
    /// use docrel::{Document, bson::doc};
    /// # use serde::{Deserialize, Serialize};
    /// #[derive(Serialize, Deserialize)]
    /// struct Address { city: String, zip: String }
    ///
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "patrons")]
    /// struct Patron {
    ///     #[serde(rename = "_id")]
    ///     id: String,
    ///     #[embed]
    ///     address: Address,
    /// }
    ///
    /// let city = Patron::fields().address.at::<String>("city");
    /// assert_eq!(city.path(), "address.city");
    /// assert_eq!(city.eq("Boston").into_document()?, doc! {"address.city": {"$eq": "Boston"}});
    /// # Ok::<(), docrel::Error>(())
    /// ```
    pub fn at<U>(&self, name: &'static str) -> Field<D, U> {
        let path = if self.path.is_empty() { name } else { intern(format!("{}.{name}", self.path)) };
        Field::new(path, None)
    }

    fn op<T: Serialize + ?Sized>(&self, op: &str, value: &T) -> Filter {
        Filter::from_result(to_bson(self.path, value).map(|v| doc! { self.path: { op: v } }))
    }

    /// `$in`, `$nin`, `$all`. The server reads a regular expression in the
    /// list as a pattern, and refuses a document with `$` keys: each such
    /// value is compared on its own with `$eq` (`$in` becomes an `$or`,
    /// `$nin` a `$nor`, `$all` an `$and`), so it stays a value.
    fn list_op<T: Serialize>(&self, op: &str, values: &[T]) -> Filter {
        let items = match to_bson(self.path, values) {
            Err(e) => return Filter::invalid(e.to_string()),
            Ok(Bson::Array(items)) => items,
            Ok(other) => return Filter::new(doc! { self.path: { op: other } }),
        };
        if !items.iter().any(needs_eq) {
            return Filter::new(doc! { self.path: { op: items } });
        }
        let (special, plain): (Vec<Bson>, Vec<Bson>) = items.into_iter().partition(needs_eq);
        let mut branches: Vec<Bson> = Vec::new();
        if !plain.is_empty() {
            let list_op = if op == "$all" { "$all" } else { "$in" };
            branches.push(Bson::Document(doc! { self.path: { list_op: plain } }));
        }
        branches.extend(special.into_iter().map(|v| Bson::Document(doc! { self.path: { "$eq": v } })));
        let join = match op {
            "$in" => "$or",
            "$nin" => "$nor",
            _ => "$and",
        };
        Filter::new(doc! { join: branches })
    }

    /// `{path: {$eq: value}}`: the value is always a value, even a map or a
    /// document (`{"$ne": ""}` matches a stored `{"$ne": ""}` and nothing else).
    /// On an array field, `contains` says what it means.
    ///
    /// ```
    /// use docrel::{Document, bson::doc};
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(Document, Serialize, Deserialize)]
    /// # #[document(collection = "parts")]
    /// # struct Part { #[serde(rename = "_id")] id: i32, name: String }
    /// let f = Part::fields().name.eq("bolt");
    /// assert_eq!(f.into_document()?, doc! {"name": {"$eq": "bolt"}});
    /// # Ok::<(), docrel::Error>(())
    /// ```
    pub fn eq<T: Serialize + ?Sized>(&self, value: &T) -> Filter
    where
        V: PartialEq<T>,
    {
        self.op("$eq", value)
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
    /// `{path: {$in: [values]}}`: equal to one of the values (on an array
    /// field: some element is). An empty list matches nothing.
    pub fn is_in<T: Serialize>(&self, values: &[T]) -> Filter {
        self.list_op("$in", values)
    }
    /// `{path: {$nin: [values]}}`: equal to none of the values (on an array
    /// field: no element is). Also matches documents without the field.
    ///
    /// ```
    /// use docrel::{Document, bson::doc};
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(Document, Serialize, Deserialize)]
    /// # #[document(collection = "parts")]
    /// # struct Part { #[serde(rename = "_id")] id: i32, qty: i32 }
    /// let f = Part::fields().qty.not_in(&[0, 1]);
    /// assert_eq!(f.into_document()?, doc! {"qty": {"$nin": [0, 1]}});
    /// # Ok::<(), docrel::Error>(())
    /// ```
    #[doc(alias = "nin")]
    pub fn not_in<T: Serialize>(&self, values: &[T]) -> Filter {
        self.list_op("$nin", values)
    }
    /// `{path: {$exists: yes}}`.
    pub fn exists(&self, yes: bool) -> Filter {
        Filter::new(doc! { self.path: { "$exists": yes } })
    }

    /// `{path: {$regex: pattern, $options: options}}`: the pattern is a
    /// regular expression (PCRE); `options` is any of `i` (ignore case), `m`,
    /// `s`, `x`, `u`, or empty. To match text a user typed, escape it with
    /// [`escape_regex`] or use [`Field::starts_with`]. On an array of
    /// strings, some element matches.
    ///
    /// ```
    /// use docrel::{Document, bson::doc};
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(Document, Serialize, Deserialize)]
    /// # #[document(collection = "parts")]
    /// # struct Part { #[serde(rename = "_id")] id: i32, name: String }
    /// let f = Part::fields().name.regex("grommet$", "i");
    /// assert_eq!(f.into_document()?, doc! {"name": {"$regex": "grommet$", "$options": "i"}});
    /// assert!(Part::fields().name.regex("a", "q").into_document().is_err());
    /// # Ok::<(), docrel::Error>(())
    /// ```
    pub fn regex(&self, pattern: &str, options: &str) -> Filter
    where
        V: Text,
    {
        if let Some(bad) = options.chars().find(|c| !"imsxu".contains(*c)) {
            return Filter::invalid(format!(
                "`{bad}` is not a regular expression option (on `{}`); the options are i, m, s, x and u",
                self.path
            ));
        }
        let mut condition = doc! { "$regex": pattern };
        if !options.is_empty() {
            condition.insert("$options", options);
        }
        Filter::new(doc! { self.path: condition })
    }

    /// Starts with this text, taken literally (escaped): `{path: {$regex: "^text"}}`.
    /// An anchored, case-sensitive prefix uses an index on the field.
    ///
    /// ```
    /// use docrel::{Document, bson::doc};
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(Document, Serialize, Deserialize)]
    /// # #[document(collection = "parts")]
    /// # struct Part { #[serde(rename = "_id")] id: i32, name: String }
    /// let f = Part::fields().name.starts_with("#4 (");
    /// assert_eq!(f.into_document()?, doc! {"name": {"$regex": r"^\#4\ \("}});
    /// # Ok::<(), docrel::Error>(())
    /// ```
    pub fn starts_with(&self, prefix: &str) -> Filter
    where
        V: Text,
    {
        self.regex(&format!("^{}", escape_regex(prefix)), "")
    }

    /// Sort ascending on this field.
    pub fn asc(&self) -> Sort {
        Sort(doc! { self.path: 1 })
    }
    /// Sort descending on this field.
    pub fn desc(&self) -> Sort {
        Sort(doc! { self.path: -1 })
    }

    /// The path of a field inside this (embedded) field: `parts.name`
    /// (for a typed handle, see [`Field::at`]).
    pub fn child(&self, stored_name: &str) -> String {
        format!("{}.{stored_name}", self.path)
    }
}

impl<D, E> Field<D, Vec<E>> {
    /// The array contains the element: `{path: {$eq: element}}` (the server
    /// matches an array when any element equals the value). The element is
    /// always a value, as in [`Field::eq`].
    ///
    /// ```
    /// use docrel::{Document, bson::doc};
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(Document, Serialize, Deserialize)]
    /// # #[document(collection = "posts")]
    /// # struct Post { #[serde(rename = "_id")] id: i32, tags: Vec<String> }
    /// let f = Post::fields().tags.contains(&"rust".to_owned());
    /// assert_eq!(f.into_document()?, doc! {"tags": {"$eq": "rust"}});
    /// # Ok::<(), docrel::Error>(())
    /// ```
    pub fn contains(&self, element: &E) -> Filter
    where
        E: Serialize,
    {
        self.op("$eq", element)
    }

    /// The array contains every one of the elements: `{path: {$all: [..]}}`.
    /// An empty list matches nothing.
    ///
    /// ```
    /// use docrel::{Document, bson::doc};
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(Document, Serialize, Deserialize)]
    /// # #[document(collection = "posts")]
    /// # struct Post { #[serde(rename = "_id")] id: i32, tags: Vec<String> }
    /// let f = Post::fields().tags.contains_all(&["rust".to_owned(), "mongodb".to_owned()]);
    /// assert_eq!(f.into_document()?, doc! {"tags": {"$all": ["rust", "mongodb"]}});
    /// # Ok::<(), docrel::Error>(())
    /// ```
    #[doc(alias = "all")]
    pub fn contains_all(&self, elements: &[E]) -> Filter
    where
        E: Serialize,
    {
        self.list_op("$all", elements)
    }

    /// The array has exactly `len` elements: `{path: {$size: len}}`.
    ///
    /// ```
    /// use docrel::{Document, bson::doc};
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(Document, Serialize, Deserialize)]
    /// # #[document(collection = "posts")]
    /// # struct Post { #[serde(rename = "_id")] id: i32, tags: Vec<String> }
    /// assert_eq!(Post::fields().tags.size(0).into_document()?, doc! {"tags": {"$size": 0}});
    /// # Ok::<(), docrel::Error>(())
    /// ```
    pub fn size(&self, len: usize) -> Filter {
        let len = match i32::try_from(len) {
            Ok(n) => Bson::Int32(n),
            Err(_) => Bson::Int64(i64::try_from(len).unwrap_or(i64::MAX)),
        };
        Filter::new(doc! { self.path: { "$size": len } })
    }

    /// One element meets the whole condition: `{path: {$elemMatch: ..}}`
    /// (where `parts.at("qty").gt(3).and(parts.at("name").eq("x"))` lets
    /// two different elements meet one part each).
    ///
    /// The closure gets the handle of the element. For an array of scalars,
    /// compare it directly and combine with `and` and `!`:
    /// `|score| score.gte(80).and(score.lt(85))`. For an array of structs,
    /// name the element's fields with [`Field::at`] (paths relative to the
    /// element) and combine them freely: `|p| p.at::<i32>("qty").gt(3)`.
    /// Typed handles for the fields of embedded structs need derive support
    /// that does not exist yet, so the field types given to `at` are not
    /// checked. A closure that ignores its handle and returns some other
    /// type's filter works too, with that type's paths.
    ///
    /// A condition on a scalar element that the server cannot express (an
    /// `or` of two comparisons of the element) is an error when the filter is
    /// used; use `is_in` for alternatives.
    ///
    /// ```
    /// use docrel::{Document, bson::doc};
    /// # use serde::{Deserialize, Serialize};
    /// #[derive(Serialize, Deserialize)]
    /// struct Line { sku: String, qty: i32 }
    ///
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "orders")]
    /// struct Order {
    ///     #[serde(rename = "_id")]
    ///     id: i32,
    ///     scores: Vec<i32>,
    ///     #[embed(max = 50)]
    ///     lines: Vec<Line>,
    /// }
    ///
    /// let f = Order::fields();
    /// let scalar = f.scores.elem_match(|s| s.gte(80).and(s.lt(85)));
    /// assert_eq!(scalar.into_document()?, doc! {"scores": {"$elemMatch": {"$gte": 80, "$lt": 85}}});
    ///
    /// let structs = f.lines.elem_match(|l| l.at::<String>("sku").eq("A-1").and(l.at::<i32>("qty").gt(2)));
    /// assert_eq!(
    ///     structs.into_document()?,
    ///     doc! {"lines": {"$elemMatch": {"sku": {"$eq": "A-1"}, "qty": {"$gt": 2}}}}
    /// );
    /// # Ok::<(), docrel::Error>(())
    /// ```
    pub fn elem_match(&self, condition: impl FnOnce(Field<Element<E>, E>) -> Filter) -> Filter {
        match condition(Field::new("", None)).element_condition() {
            Ok(c) => Filter::new(doc! { self.path: { "$elemMatch": c } }),
            Err(message) => Filter::invalid(format!("in the `$elemMatch` on `{}`: {message}", self.path)),
        }
    }
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
    fn invalid(message: String) -> Self {
        Filter { doc: BsonDoc::new(), error: Some(message) }
    }
    fn from_result(r: Result<BsonDoc>) -> Self {
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
    ///     qty.ne(&1).and(qty.ne(&2)).into_document()?,
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
    ///     qty.lt(1).or(qty.gt(90)).or(qty.eq(&50)).into_document()?,
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

    struct Doc;

    #[test]
    fn nested_paths_are_interned_once() {
        let a: Field<Doc, BsonDoc> = Field::new("address", None);
        let city1 = a.at::<String>("city");
        let city2 = a.at::<String>("city");
        assert_eq!(city1.path(), "address.city");
        assert!(std::ptr::eq(city1.path(), city2.path()));
        let element: Field<Element<i32>, BsonDoc> = Field::new("", None);
        assert_eq!(element.at::<i32>("qty").path(), "qty");
    }

    #[test]
    fn regexes_and_operator_documents_in_lists_are_compared_with_eq() {
        let f: Field<Doc, Bson> = Field::new("v", None);
        let re = crate::bson_compat::regex(".*", "").unwrap();
        let values = [Bson::Int32(1), Bson::RegularExpression(re.clone()), Bson::Document(doc! {"$ne": ""})];
        assert_eq!(
            f.is_in(&values).into_document().ok(),
            Some(doc! {"$or": [{"v": {"$in": [1]}}, {"v": {"$eq": re.clone()}}, {"v": {"$eq": {"$ne": ""}}}]})
        );
        assert_eq!(
            f.not_in(&values[1..]).into_document().ok(),
            Some(doc! {"$nor": [{"v": {"$eq": re.clone()}}, {"v": {"$eq": {"$ne": ""}}}]})
        );
        let all: Field<Doc, Vec<Bson>> = Field::new("v", None);
        assert_eq!(
            all.contains_all(&values[..2]).into_document().ok(),
            Some(doc! {"$and": [{"v": {"$all": [1]}}, {"v": {"$eq": re.clone()}}]})
        );
        // An extended-JSON map from user input becomes a regex when encoded.
        let map: std::collections::BTreeMap<&str, BsonDoc> =
            [("$regularExpression", doc! {"pattern": ".*", "options": ""})].into();
        let f: Field<Doc, String> = Field::new("name", None);
        assert_eq!(f.is_in(&[map]).into_document().ok(), Some(doc! {"$or": [{"name": {"$eq": re}}]}));
        // A plain list stays one operator.
        assert_eq!(f.is_in(&["a"]).into_document().ok(), Some(doc! {"name": {"$in": ["a"]}}));
    }

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
    fn scalar_element_conditions_must_be_a_conjunction() {
        let e: Field<Element<i32>, i32> = Field::new("", None);
        assert_eq!(e.gt(1).and(e.lt(5)).element_condition().ok(), Some(doc! {"$gt": 1, "$lt": 5}));
        assert_eq!((!e.eq(&3)).element_condition().ok(), Some(doc! {"$not": {"$eq": 3}}));
        assert!(e.eq(&1).or(e.eq(&2)).element_condition().is_err());
        let scores: Field<Doc, Vec<i32>> = Field::new("scores", None);
        assert!(scores.elem_match(|s| s.eq(&1).or(s.eq(&2))).into_document().is_err());
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
        let two = || q.ne(&1).and(q.ne(&2));
        assert_eq!(two().into_document().ok(), Some(doc! {"$and": [{"q": {"$ne": 1}}, {"q": {"$ne": 2}}]}));
        assert_eq!(
            two().and(q.ne(&3).and(q.ne(&4))).into_document().ok(),
            Some(doc! {"$and": [{"q": {"$ne": 1}}, {"q": {"$ne": 2}}, {"q": {"$ne": 3}}, {"q": {"$ne": 4}}]})
        );
    }

    #[test]
    fn escaped_text_has_no_meta_characters_left() {
        assert_eq!(escape_regex("a.b*c"), r"a\.b\*c");
        assert_eq!(escape_regex("tab\there"), "tab\\\there");
        assert_eq!(escape_regex("nul\0"), r"nul\x00");
        assert_eq!(escape_regex("éa_1"), "éa_1");
    }
}
