//! The field handles every read and write is built from: a stored path
//! (and the bound of a bounded array) typed by its document and its Rust
//! type, so that no BSON path is ever typed by hand. Filters and sorts
//! ([`super::query`], [`super::conditions`]) and updates ([`super::update`])
//! are built from them.

use crate::bson_compat;
use crate::error::{Error, Result};
use mongodb::bson::Bson;
use serde::Serialize;
use std::collections::HashSet;
use std::marker::PhantomData;
use std::sync::{Mutex, OnceLock, PoisonError};

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

/// Field types whose `$in`/`$nin` lists ([`Field::is_in`],
/// [`Field::not_in`]) hold `T`s: the field's own type (`V: PartialEq<T>`,
/// so `&str` for a `String`), or, on a `Vec` or an `Option`, the type of
/// its elements (the server compares each element, or the value inside).
/// `K` is [`Whole`] or [`Each`], inferred: it only keeps the two cases apart.
///
/// ```
/// use docrel::{Document, bson::{doc, oid::ObjectId}};
/// # use serde::{Deserialize, Serialize};
/// # #[derive(Document, Serialize, Deserialize)]
/// # #[document(collection = "parts")]
/// # struct Part { #[serde(rename = "_id")] id: i32, qty: i32, tags: Vec<String>, supplier: Option<ObjectId> }
/// let f = Part::fields();
/// assert_eq!(f.qty.is_in(&[5, 9]).into_document()?, doc! {"qty": {"$in": [5, 9]}});
/// assert_eq!(f.tags.is_in(&["steel"]).into_document()?, doc! {"tags": {"$in": ["steel"]}});
/// let acme = ObjectId::new();
/// assert_eq!(f.supplier.not_in(&[acme]).into_document()?, doc! {"supplier": {"$nin": [acme]}});
/// # Ok::<(), docrel::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "a field of type `{Self}` cannot hold a `{T}`",
    label = "not a value of the field's type",
    note = "`is_in` and `not_in` take values of the field's type, or of its elements on a `Vec` or an `Option` field"
)]
pub trait Holds<T, K> {}
/// [`Holds`] for values of the field's own type.
pub struct Whole;
/// [`Holds`] for values of the elements of a `Vec` or an `Option` field.
pub struct Each;
impl<V: PartialEq<T>, T> Holds<T, Whole> for V {}
impl<E: PartialEq<T>, T> Holds<T, Each> for Vec<E> {}
impl<E: PartialEq<T>, T> Holds<T, Each> for Option<E> {}

/// Values a field of type `Self` is compared with ([`Field::eq`],
/// [`Field::ne`], `contains` on an array's elements): a value of its own
/// type (`V: PartialEq<T>`, so `&str` for a `String`), or a reference to
/// one (`name.eq(&title)`, `owner.eq(&Some(id))`), still checked against
/// the field's type at compile time. `K` is [`ByValue`] or [`ByRef`],
/// inferred: it only keeps the two cases apart.
///
/// ```
/// use docrel::{Document, bson::{doc, oid::ObjectId}};
/// # use serde::{Deserialize, Serialize};
/// # #[derive(Document, Serialize, Deserialize)]
/// # #[document(collection = "tasks")]
/// # struct Task { #[serde(rename = "_id")] id: i32, title: String, owner: Option<ObjectId> }
/// let (title, owner) = (String::from("ship"), Some(ObjectId::new()));
/// let f = Task::fields();
/// assert_eq!(f.title.eq(&title).into_document()?, doc! {"title": {"$eq": "ship"}});
/// assert_eq!(f.title.eq("ship").into_document()?, f.title.eq(title).into_document()?);
/// assert_eq!(f.owner.eq(&owner).into_document()?, doc! {"owner": {"$eq": owner}});
/// # Ok::<(), docrel::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "a field of type `{Self}` cannot be compared with a `{T}`",
    label = "not a value of the field's type, nor a reference to one",
    note = "comparisons take a value of the field's type (`&str` for a `String`), or a reference to one"
)]
pub trait Compares<T, K> {}
/// [`Compares`] with a value.
pub struct ByValue;
/// [`Compares`] with a reference to a value.
pub struct ByRef;
impl<V: PartialEq<T>, T> Compares<T, ByValue> for V {}
// `T: Sized` (implied) keeps `&str` for a `String` on the by-value side
// alone (`String: PartialEq<str>` would match here too otherwise).
impl<V: PartialEq<T>, T> Compares<&T, ByRef> for V {}

/// Values a field of type `Self` is ordered against ([`Field::gt`] and the
/// others): a value of its own type, or a reference to one.
#[diagnostic::on_unimplemented(
    message = "a field of type `{Self}` cannot be ordered against a `{T}`",
    label = "not a value of the field's type, nor a reference to one",
    note = "comparisons take a value of the field's type, or a reference to one"
)]
pub trait Orders<T, K> {}
impl<V: PartialOrd<T>, T> Orders<T, ByValue> for V {}
impl<V: PartialOrd<T>, T> Orders<&T, ByRef> for V {}

/// A value to store at `path`, refused when it holds a field no query
/// could address: a `$`-prefixed name anywhere inside it (`{"$where": ..}`
/// from user input, say). The server accepts such names since 5.0, but
/// filters, projections and updates read them as operators, so nothing
/// could find, change or remove that field again.
pub(crate) fn stored_value<V: Serialize + ?Sized>(path: &str, value: &V) -> Result<Bson> {
    let bson = to_bson(path, value)?;
    if let Some(name) = operator_like_name(&bson) {
        return Err(Error::Invalid {
            what: crate::error::Misuse::Update,
            message: format!(
                "the value for `{path}` holds a field named `{name}`: a name starting with `$` is read as an \
                 operator by every query, so the field could never be found, changed or removed; nothing was \
                 written. Rename the field, or keep such text as a value rather than a name"
            ),
        });
    }
    Ok(bson)
}

/// The first `$`-prefixed field name inside `value`, at any depth.
pub(crate) fn operator_like_name(value: &Bson) -> Option<&str> {
    match value {
        Bson::Document(d) => {
            d.iter().find_map(|(k, v)| if k.starts_with('$') { Some(k.as_str()) } else { operator_like_name(v) })
        }
        Bson::Array(a) => a.iter().find_map(operator_like_name),
        _ => None,
    }
}

/// A value as BSON, its encoding error naming the path it was meant for.
pub(crate) fn to_bson<V: Serialize + ?Sized>(path: &str, value: &V) -> Result<Bson> {
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

    /// The path of a field inside this (embedded) field: `parts.name`
    /// (for a typed handle, see [`Field::at`]).
    pub fn child(&self, stored_name: &str) -> String {
        format!("{}.{stored_name}", self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::Document as BsonDoc;

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
}
