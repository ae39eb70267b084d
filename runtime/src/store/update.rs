//! Updates built from typed field handles, and what docrel reads from an
//! update before sending it:
//!
//! - **touched**: every stored path the update writes, exactly (a `$rename`
//!   touches both names). The write path compares them with the copied
//!   fields to decide whether a fan-out follows, so a path missing here is a
//!   stale copy and a path too many is a wasted read.
//! - **pushes**: every top-level array a `$push` or `$addToSet` may grow,
//!   with how many elements and its bound; the write path turns a bounded
//!   one into an atomic guard (the push happens only while there is room).
//! - **bounds passed for sure**: a whole bounded array written longer than
//!   its `max` (`set`, `set_on_insert`, `set_min`, `set_max`), or a write at
//!   index `max` or beyond (through [`Field::at`]), makes the update an
//!   [`Error::EmbedFull`] before any round trip.
//!
//! [`Update::raw`] gets the same reading for the forms the document shows
//! (`$push`/`$addToSet` with or without `$each`, a `$slice` within the bound
//! counts as safe; whole-array and indexed writes). Not checked: a
//! `$rename` onto a bounded array, and anything the server computes
//! (aggregation-pipeline updates are not offered).

use super::bounds::{check, Problem};
use super::field::{stored_value, to_bson, Element, Field};
use super::query::Filter;
use crate::error::{Error, Result};
use crate::schema::document::Document;
use mongodb::bson::{self, doc, Bson, Document as BsonDoc};
use serde::Serialize;
use std::borrow::Cow;
use std::marker::PhantomData;

pub(crate) use super::bounds::Push;

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
    ops: Ops,
    // Borrowed for a typed handle's path, which is `'static`: the common
    // update then allocates no copy of it.
    touched: Vec<Cow<'static, str>>,
    pushes: Vec<Push>,
    // Boxed: rare, and every update's future holds the update.
    problem: Option<Box<Problem>>,
    _doc: PhantomData<fn() -> D>,
}

impl<D> Clone for Update<D> {
    fn clone(&self) -> Self {
        Update {
            ops: self.ops.clone(),
            touched: self.touched.clone(),
            pushes: self.pushes.clone(),
            problem: self.problem.clone(),
            _doc: PhantomData,
        }
    }
}

impl<D> std::fmt::Debug for Update<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Update").field("doc", &self.ops.to_doc()).field("problem", &self.problem).finish()
    }
}

/// The operations of an update.
#[derive(Clone)]
enum Ops {
    /// One operation of a typed handle, the most common update, made into
    /// a document only when one is asked for: the short write of a source
    /// reads it as it is and builds no document it would only copy.
    One {
        op: &'static str,
        path: &'static str,
        value: Bson,
    },
    Doc(BsonDoc),
}

impl Ops {
    fn to_doc(&self) -> BsonDoc {
        match self {
            Ops::One { op, path, value } => doc! { *op: { *path: value.clone() } },
            Ops::Doc(d) => d.clone(),
        }
    }

    fn into_doc(self) -> BsonDoc {
        match self {
            Ops::One { op, path, value } => doc! { op: { path: value } },
            Ops::Doc(d) => d,
        }
    }
}

/// The `$set` of an update that is nothing else (see [`Update::only_set`]).
#[derive(Clone, Copy)]
pub(crate) enum OnlySet<'a> {
    /// One path and its value.
    One(&'static str, &'a Bson),
    /// A `$set` document.
    Doc(&'a BsonDoc),
}

impl OnlySet<'_> {
    /// The value set at a top-level `field`.
    pub(crate) fn get(&self, field: &str) -> Option<&Bson> {
        match self {
            OnlySet::One(path, value) => (*path == field).then_some(*value),
            OnlySet::Doc(set) => set.get(field),
        }
    }

    /// The `$set` as a document of its own.
    pub(crate) fn to_doc(self) -> BsonDoc {
        match self {
            OnlySet::One(path, value) => doc! { path: value.clone() },
            OnlySet::Doc(set) => set.clone(),
        }
    }
}

/// Field types `$currentDate` can write ([`Field::current_date`]): a BSON
/// date, or a BSON timestamp when [`DateLike::TIMESTAMP`] is true. Implement
/// it for your own type when it is stored as one of them (a
/// `chrono::DateTime` stored through `bson::serde_helpers`, say).
pub trait DateLike {
    /// Whether the field holds a BSON timestamp rather than a date.
    const TIMESTAMP: bool = false;
}
impl DateLike for bson::DateTime {}
impl DateLike for bson::Timestamp {
    const TIMESTAMP: bool = true;
}
impl<T: DateLike> DateLike for Option<T> {
    const TIMESTAMP: bool = T::TIMESTAMP;
}

impl<D> Update<D> {
    fn empty() -> Self {
        Update { ops: Ops::Doc(BsonDoc::new()), touched: vec![], pushes: vec![], problem: None, _doc: PhantomData }
    }

    /// Both updates. One path given twice to the same operator is an error
    /// when the update is used (the second would silently replace the first).
    ///
    /// ```
    /// use docrel::{Document, Error, bson::doc};
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(Document, Serialize, Deserialize)]
    /// # #[document(collection = "parts")]
    /// # struct Part { #[serde(rename = "_id")] id: i32, qty: i32 }
    /// let twice = Part::fields().qty.inc(1).and(Part::fields().qty.inc(2));
    /// assert!(matches!(twice.to_document(), Err(Error::Invalid { .. })));
    /// ```
    pub fn and(mut self, other: Update<D>) -> Self {
        if self.problem.is_none() {
            self.problem = other.problem;
        }
        let mut doc = self.ops.into_doc();
        for (op, fields) in other.ops.into_doc() {
            match (doc.get_mut(&op), fields) {
                (Some(Bson::Document(mine)), Bson::Document(theirs)) => {
                    for (path, value) in theirs {
                        if mine.contains_key(&path) && self.problem.is_none() {
                            self.problem = Some(Box::new(Problem::Invalid(format!(
                                "`{path}` is given to `{op}` twice, and the second would replace the first; \
                                 give it once (with `$each` for several elements)"
                            ))));
                        }
                        mine.insert(path, value);
                    }
                }
                (_, fields) => {
                    doc.insert(op, fields);
                }
            }
        }
        self.ops = Ops::Doc(doc);
        self.touched.extend(other.touched);
        self.pushes.extend(other.pushes);
        self
    }

    /// Adds `other` to this update in place, as [`Update::and`] does (for
    /// code holding `&mut Update`, such as a `before_update` hook).
    ///
    /// ```
    /// # use docrel::{Document, bson::doc};
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(Document, Serialize, Deserialize)]
    /// # #[document(collection = "parts")]
    /// # struct Part { #[serde(rename = "_id")] id: i32, qty: i32, name: String }
    /// let mut update = Part::fields().qty.inc(1);
    /// update.also(Part::fields().name.set("bolt".into()));
    /// assert_eq!(update.to_document()?, doc! {"$inc": {"qty": 1}, "$set": {"name": "bolt"}});
    /// # Ok::<(), docrel::Error>(())
    /// ```
    pub fn also(&mut self, other: Update<D>) {
        let mine = std::mem::replace(self, Update::empty());
        *self = mine.and(other);
    }

    /// The stored paths this update writes.
    pub fn touched(&self) -> impl Iterator<Item = &str> + '_ {
        self.touched.iter().map(|t| t.as_ref())
    }

    /// The arrays this update pushes to, with how many elements each.
    pub(crate) fn pushes(&self) -> &[Push] {
        &self.pushes
    }

    /// The BSON update document, or the error met while building it: a
    /// bound passed for sure is [`Error::EmbedFull`] (its id is `(any)`: the
    /// update was refused before any document was read).
    pub fn to_document(&self) -> Result<BsonDoc> {
        match self.problem.as_deref() {
            Some(Problem::Invalid(message)) => {
                Err(Error::Invalid { what: crate::error::Misuse::Update, message: message.clone() })
            }
            Some(Problem::Full { collection, field, max, len }) => {
                Err(Error::EmbedFull { collection, id: "(any)".into(), field, max: *max, len: *len })
            }
            None if matches!(&self.ops, Ops::Doc(d) if d.is_empty()) => Err(Error::Invalid {
                what: crate::error::Misuse::Update,
                message: "it changes nothing; add at least one operation".into(),
            }),
            None => Ok(self.ops.to_doc()),
        }
    }
}

impl<D> Update<D> {
    /// The `$set` of an update that is only a `$set` and can be sent (what
    /// [`Update::to_document`] would give, without copying it).
    pub(crate) fn only_set(&self) -> Option<OnlySet<'_>> {
        match (&self.problem, &self.ops) {
            (Some(_), _) => None,
            (None, Ops::One { op: "$set", path, value }) => Some(OnlySet::One(path, value)),
            (None, Ops::One { .. }) => None,
            (None, Ops::Doc(doc)) => match (doc.len(), doc.get("$set")) {
                (1, Some(Bson::Document(set))) => Some(OnlySet::Doc(set)),
                _ => None,
            },
        }
    }
}

impl<D: Document> Update<D> {
    /// One operation on one path of a typed handle, checked against the bounds.
    fn one(handle: (&'static str, Option<u32>), op: &'static str, value: std::result::Result<Bson, String>) -> Self {
        let path = handle.0;
        // Made here rather than from `Update::empty`: its document would be
        // replaced at once, and a new document costs a hasher seed.
        let (ops, pushes, problem) = match value {
            Err(message) => (Ops::Doc(BsonDoc::new()), vec![], Some(Problem::Invalid(message))),
            Ok(value) => {
                let (pushes, problem) = match check::<D>(op, path, Some(handle), &value) {
                    Ok(push) => (push.into_iter().collect(), None),
                    Err(p) => (vec![], Some(p)),
                };
                (Ops::One { op, path, value }, pushes, problem)
            }
        };
        Update { ops, touched: vec![Cow::Borrowed(path)], pushes, problem: problem.map(Box::new), _doc: PhantomData }
    }

    /// An update from a raw BSON update document, sent as given. docrel
    /// still reads the paths it writes (for fan-outs) and the bounded
    /// arrays it can see it grow: a `$push`/`$addToSet` on one is guarded
    /// like a typed push (unless a `$slice` keeps it within the bound), a
    /// whole-array write longer than the bound or a write at an index past
    /// it is [`Error::EmbedFull`]. A `$rename` onto a bounded array is not
    /// checked. Prefer the typed handles.
    ///
    /// ```
    /// use docrel::{Document, Error, Update, bson::doc};
    /// # use serde::{Deserialize, Serialize};
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "patrons")]
    /// struct Patron {
    ///     #[serde(rename = "_id")]
    ///     id: String,
    ///     #[embed(max = 2)]
    ///     addresses: Vec<String>,
    /// }
    ///
    /// let over = Update::<Patron>::raw(doc! {"$set": {"addresses": ["a", "b", "c"]}});
    /// assert!(matches!(over.to_document(), Err(Error::EmbedFull { max: 2, len: 3, .. })));
    /// let past = Update::<Patron>::raw(doc! {"$set": {"addresses.2": "c"}});
    /// assert!(matches!(past.to_document(), Err(Error::EmbedFull { len: 3, .. })));
    /// let u = Update::<Patron>::raw(doc! {"$rename": {"old": "new"}});
    /// assert_eq!(u.touched().collect::<Vec<_>>(), ["old", "new"]);
    /// ```
    pub fn raw(doc: BsonDoc) -> Self {
        let mut u = Update::empty();
        for (op, fields) in &doc {
            let Bson::Document(fields) = fields else { continue };
            for (path, value) in fields {
                u.touched.push(Cow::Owned(path.clone()));
                if let ("$rename", Bson::String(to)) = (op.as_str(), value) {
                    u.touched.push(Cow::Owned(to.clone()));
                }
                match check::<D>(op, path, None, value) {
                    Ok(push) => u.pushes.extend(push),
                    Err(p) => {
                        u.problem.get_or_insert_with(|| Box::new(p));
                    }
                }
            }
        }
        u.ops = Ops::Doc(doc);
        u
    }
}

/// Updates of one field. Each records the path it touches; writes of a
/// whole bounded array are checked against the bound when built.
impl<D: Document, V> Field<D, V> {
    fn update(&self, op: &'static str, value: Result<Bson>) -> Update<D> {
        Update::one((self.path(), self.max()), op, value.map_err(|e| e.to_string()))
    }

    /// `{$set: {path: value}}`. A whole bounded array longer than its `max`
    /// is [`Error::EmbedFull`] when the update is used, before any round trip.
    ///
    /// ```
    /// use docrel::{Document, Error, bson::doc};
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(Document, Serialize, Deserialize)]
    /// # #[document(collection = "patrons")]
    /// # struct Patron { #[serde(rename = "_id")] id: String, #[embed(max = 2)] addresses: Vec<String> }
    /// let f = Patron::fields();
    /// assert_eq!(f.addresses.set(vec!["a".into()]).to_document()?, doc! {"$set": {"addresses": ["a"]}});
    /// let over = f.addresses.set(vec!["a".into(), "b".into(), "c".into()]);
    /// assert!(matches!(over.to_document(), Err(Error::EmbedFull { max: 2, len: 3, .. })));
    /// # Ok::<(), docrel::Error>(())
    /// ```
    pub fn set(&self, value: V) -> Update<D>
    where
        V: Serialize,
    {
        self.update("$set", stored_value(self.path(), &value))
    }

    /// `{$setOnInsert: {path: value}}`: written only when the update inserts
    /// the document (an upsert), ignored otherwise. docrel's `update_*` do
    /// not upsert, so through them it changes nothing; it is for updates run
    /// with `upsert` from [`Update::to_document`]. Bounds as in [`Field::set`].
    ///
    /// ```
    /// use docrel::{Document, bson::doc};
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(Document, Serialize, Deserialize)]
    /// # #[document(collection = "parts")]
    /// # struct Part { #[serde(rename = "_id")] id: i32, qty: i32 }
    /// let u = Part::fields().qty.set_on_insert(0);
    /// assert_eq!(u.to_document()?, doc! {"$setOnInsert": {"qty": 0}});
    /// # Ok::<(), docrel::Error>(())
    /// ```
    pub fn set_on_insert(&self, value: V) -> Update<D>
    where
        V: Serialize,
    {
        self.update("$setOnInsert", stored_value(self.path(), &value))
    }

    /// `{$min: {path: value}}`: stores `value` when it is less than the
    /// stored one (or the field is absent), so the field becomes the smaller
    /// of the two. Named `set_min` because [`Field::max`] is the bound.
    ///
    /// ```
    /// use docrel::{Document, bson::doc};
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(Document, Serialize, Deserialize)]
    /// # #[document(collection = "scores")]
    /// # struct Score { #[serde(rename = "_id")] id: i32, low: i32, high: i32 }
    /// let f = Score::fields();
    /// let u = f.low.set_min(3).and(f.high.set_max(90));
    /// assert_eq!(u.to_document()?, doc! {"$min": {"low": 3}, "$max": {"high": 90}});
    /// # Ok::<(), docrel::Error>(())
    /// ```
    #[doc(alias = "min")]
    pub fn set_min(&self, value: V) -> Update<D>
    where
        V: Serialize + PartialOrd,
    {
        self.update("$min", to_bson(self.path(), &value))
    }

    /// `{$max: {path: value}}`: stores `value` when it is greater than the
    /// stored one (or the field is absent). See [`Field::set_min`].
    #[doc(alias = "max")]
    pub fn set_max(&self, value: V) -> Update<D>
    where
        V: Serialize + PartialOrd,
    {
        self.update("$max", to_bson(self.path(), &value))
    }

    /// `{$unset: {path: ""}}`.
    pub fn unset(&self) -> Update<D> {
        self.update("$unset", Ok(Bson::String(String::new())))
    }

    /// `{$inc: {path: by}}`.
    pub fn inc(&self, by: V) -> Update<D>
    where
        V: Serialize + std::ops::Add<Output = V>,
    {
        self.update("$inc", to_bson(self.path(), &by))
    }

    /// `{$currentDate: {path: true}}`: the server's clock at the write, as
    /// a date (`{$type: "timestamp"}` for a timestamp field).
    ///
    /// ```
    /// use docrel::{Document, bson::{doc, DateTime, Timestamp}};
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(Document, Serialize, Deserialize)]
    /// # #[document(collection = "parts")]
    /// # struct Part { #[serde(rename = "_id")] id: i32, seen: Option<DateTime>, ts: Timestamp }
    /// let f = Part::fields();
    /// let u = f.seen.current_date().and(f.ts.current_date());
    /// assert_eq!(u.to_document()?, doc! {"$currentDate": {"seen": true, "ts": {"$type": "timestamp"}}});
    /// # Ok::<(), docrel::Error>(())
    /// ```
    pub fn current_date(&self) -> Update<D>
    where
        V: DateLike,
    {
        let kind = if V::TIMESTAMP { Bson::Document(doc! {"$type": "timestamp"}) } else { Bson::Boolean(true) };
        self.update("$currentDate", Ok(kind))
    }
}

/// Updates of an array field. A push into a bounded array is guarded when
/// it is written (see [`crate::repository::Repository::update_by_id`]).
impl<D: Document, E> Field<D, Vec<E>> {
    /// `{$push: {path: {$each: elements}}}`. Through docrel, a push into a
    /// bounded array only happens while the array has room for every element
    /// (see [`crate::repository::Repository::update_by_id`]).
    pub fn push(&self, elements: impl IntoIterator<Item = E>) -> Update<D>
    where
        E: Serialize,
    {
        let elements: Vec<E> = elements.into_iter().collect();
        self.update("$push", stored_value(self.path(), &elements).map(|v| Bson::Document(doc! {"$each": v})))
    }

    /// `{$addToSet: {path: {$each: elements}}}`: adds the elements not there
    /// yet. A bounded array is guarded as for [`Field::push`], counting every
    /// element (some may turn out to be there already).
    pub fn add_to_set(&self, elements: impl IntoIterator<Item = E>) -> Update<D>
    where
        E: Serialize,
    {
        let elements: Vec<E> = elements.into_iter().collect();
        self.update("$addToSet", stored_value(self.path(), &elements).map(|v| Bson::Document(doc! {"$each": v})))
    }

    /// `{$pull: {path: {$eq: element}}}`: removes every element equal to this
    /// one (for a struct, equal in every field and their order). The element
    /// is a value, never a condition; for conditions see [`Field::pull_where`].
    ///
    /// ```
    /// use docrel::{Document, bson::doc};
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(Document, Serialize, Deserialize)]
    /// # #[document(collection = "posts")]
    /// # struct Post { #[serde(rename = "_id")] id: i32, tags: Vec<String> }
    /// let u = Post::fields().tags.pull(&"old".to_owned());
    /// assert_eq!(u.to_document()?, doc! {"$pull": {"tags": {"$eq": "old"}}});
    /// # Ok::<(), docrel::Error>(())
    /// ```
    pub fn pull(&self, element: &E) -> Update<D>
    where
        E: Serialize,
    {
        self.update("$pull", to_bson(self.path(), element).map(|v| Bson::Document(doc! {"$eq": v})))
    }

    /// `{$pullAll: {path: [elements]}}`: removes every element equal to one of these.
    ///
    /// ```
    /// use docrel::{Document, bson::doc};
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(Document, Serialize, Deserialize)]
    /// # #[document(collection = "posts")]
    /// # struct Post { #[serde(rename = "_id")] id: i32, tags: Vec<String> }
    /// let u = Post::fields().tags.pull_all(&["a".to_owned(), "b".to_owned()]);
    /// assert_eq!(u.to_document()?, doc! {"$pullAll": {"tags": ["a", "b"]}});
    /// # Ok::<(), docrel::Error>(())
    /// ```
    pub fn pull_all(&self, elements: &[E]) -> Update<D>
    where
        E: Serialize,
    {
        self.update("$pullAll", to_bson(self.path(), elements))
    }

    /// `{$pull: {path: condition}}`: removes every element that meets the
    /// condition, built on the element's handle as for [`Field::elem_match`]
    /// (compare a scalar element directly; name a struct element's fields
    /// with [`Field::at`]).
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
    /// let u = f.scores.pull_where(|s| s.lt(50)).and(f.lines.pull_where(|l| l.at::<i32>("qty").lte(0)));
    /// assert_eq!(u.to_document()?, doc! {"$pull": {"scores": {"$lt": 50}, "lines": {"qty": {"$lte": 0}}}});
    /// # Ok::<(), docrel::Error>(())
    /// ```
    pub fn pull_where(&self, condition: impl FnOnce(Field<Element<E>, E>) -> Filter) -> Update<D> {
        let condition = condition(Field::new("", None))
            .element_condition()
            .map(Bson::Document)
            .map_err(|message| format!("in the `$pull` on `{}`: {message}", self.path()));
        Update::one((self.path(), self.max()), "$pull", condition)
    }
}
