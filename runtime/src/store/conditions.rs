//! The conditions a field handle builds: comparisons, lists, patterns,
//! conditions on arrays and their elements, and sorts.
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

use super::field::{to_bson, Compares, Element, Field, Holds, Orders, Text};
use super::query::{Filter, Sort};
use mongodb::bson::{doc, Bson};
use serde::Serialize;

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

/// Escapes every character a regular expression gives a meaning to, so the
/// text matches itself: `a.b` becomes `a\.b`. The result is safe with any
/// options, `x` included (whitespace and `#` are escaped too).
///
/// ```
/// assert_eq!(docrel::query::escape_regex("1+1=2? (yes)"), r"1\+1=2\?\ \(yes\)");
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
    fn op<T: Serialize + ?Sized>(&self, op: &str, value: &T) -> Filter {
        Filter::from_result(to_bson(self.path(), value).map(|v| doc! { self.path(): { op: v } }))
    }

    /// `$in`, `$nin`, `$all`. The server reads a regular expression in the
    /// list as a pattern, and refuses a document with `$` keys: each such
    /// value is compared on its own with `$eq` (`$in` becomes an `$or`,
    /// `$nin` a `$nor`, `$all` an `$and`), so it stays a value.
    fn list_op<T: Serialize>(&self, op: &str, values: &[T]) -> Filter {
        let items = match to_bson(self.path(), values) {
            Err(e) => return Filter::invalid(e.to_string()),
            Ok(Bson::Array(items)) => items,
            Ok(other) => return Filter::new(doc! { self.path(): { op: other } }),
        };
        if !items.iter().any(needs_eq) {
            return Filter::new(doc! { self.path(): { op: items } });
        }
        let (special, plain): (Vec<Bson>, Vec<Bson>) = items.into_iter().partition(needs_eq);
        let mut branches: Vec<Bson> = Vec::new();
        if !plain.is_empty() {
            let list_op = if op == "$all" { "$all" } else { "$in" };
            branches.push(Bson::Document(doc! { self.path(): { list_op: plain } }));
        }
        branches.extend(special.into_iter().map(|v| Bson::Document(doc! { self.path(): { "$eq": v } })));
        let join = match op {
            "$in" => "$or",
            "$nin" => "$nor",
            _ => "$and",
        };
        Filter::new(doc! { join: branches })
    }

    /// `{path: {$eq: value}}`: the value is always a value, even a map or a
    /// document (`{"$ne": ""}` matches a stored `{"$ne": ""}` and nothing else).
    /// On an array field, `contains` says what it means. Like `gt` and the
    /// driver's `doc!`, it takes the value itself: `qty.eq(5)`,
    /// `name.eq("bolt")`, `id.eq(part.id)`.
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
    pub fn eq<T: Serialize, K>(&self, value: T) -> Filter
    where
        V: Compares<T, K>,
    {
        self.op("$eq", &value)
    }
    /// `{path: {$ne: value}}`: `qty.ne(7)`. Also matches documents without
    /// the field.
    pub fn ne<T: Serialize, K>(&self, value: T) -> Filter
    where
        V: Compares<T, K>,
    {
        self.op("$ne", &value)
    }
    /// `{path: {$gt: value}}`.
    pub fn gt<T: Serialize, K>(&self, value: T) -> Filter
    where
        V: Orders<T, K>,
    {
        self.op("$gt", &value)
    }
    /// `{path: {$gte: value}}`.
    pub fn gte<T: Serialize, K>(&self, value: T) -> Filter
    where
        V: Orders<T, K>,
    {
        self.op("$gte", &value)
    }
    /// `{path: {$lt: value}}`.
    pub fn lt<T: Serialize, K>(&self, value: T) -> Filter
    where
        V: Orders<T, K>,
    {
        self.op("$lt", &value)
    }
    /// `{path: {$lte: value}}`.
    pub fn lte<T: Serialize, K>(&self, value: T) -> Filter
    where
        V: Orders<T, K>,
    {
        self.op("$lte", &value)
    }
    /// `{path: {$in: [values]}}`: equal to one of the values (on an array
    /// field: some element is). An empty list matches nothing. The values
    /// are of the field's type, or of its elements on a `Vec` or an
    /// `Option` field ([`Holds`]): `qty.is_in(&[5, 9])`, `tags.is_in(&["steel"])`.
    pub fn is_in<T: Serialize, K>(&self, values: &[T]) -> Filter
    where
        V: Holds<T, K>,
    {
        self.list_op("$in", values)
    }
    /// `{path: {$nin: [values]}}`: equal to none of the values (on an array
    /// field: no element is). Also matches documents without the field.
    /// The values are typed as in [`Field::is_in`].
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
    pub fn not_in<T: Serialize, K>(&self, values: &[T]) -> Filter
    where
        V: Holds<T, K>,
    {
        self.list_op("$nin", values)
    }
    /// `{path: {$exists: yes}}`.
    pub fn exists(&self, yes: bool) -> Filter {
        Filter::new(doc! { self.path(): { "$exists": yes } })
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
                self.path()
            ));
        }
        let mut condition = doc! { "$regex": pattern };
        if !options.is_empty() {
            condition.insert("$options", options);
        }
        Filter::new(doc! { self.path(): condition })
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
        Sort::new(doc! { self.path(): 1 })
    }
    /// Sort descending on this field.
    pub fn desc(&self) -> Sort {
        Sort::new(doc! { self.path(): -1 })
    }
}

impl<D, E> Field<D, Vec<E>> {
    /// The array contains the element: `{path: {$eq: element}}` (the server
    /// matches an array when any element equals the value). The element is
    /// always a value, as in [`Field::eq`], and taken by value like it.
    ///
    /// ```
    /// use docrel::{Document, bson::doc};
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(Document, Serialize, Deserialize)]
    /// # #[document(collection = "posts")]
    /// # struct Post { #[serde(rename = "_id")] id: i32, tags: Vec<String> }
    /// let f = Post::fields().tags.contains("rust");
    /// assert_eq!(f.into_document()?, doc! {"tags": {"$eq": "rust"}});
    /// # Ok::<(), docrel::Error>(())
    /// ```
    pub fn contains<T: Serialize, K>(&self, element: T) -> Filter
    where
        E: Compares<T, K>,
    {
        self.op("$eq", &element)
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
        Filter::new(doc! { self.path(): { "$size": len } })
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
            Ok(c) => Filter::new(doc! { self.path(): { "$elemMatch": c } }),
            Err(message) => Filter::invalid(format!("in the `$elemMatch` on `{}`: {message}", self.path())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::Document as BsonDoc;

    struct Doc;

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
        let any: Field<Doc, std::collections::BTreeMap<&str, BsonDoc>> = Field::new("name", None);
        assert_eq!(any.is_in(&[map]).into_document().ok(), Some(doc! {"$or": [{"name": {"$eq": re}}]}));
        let f: Field<Doc, String> = Field::new("name", None);
        // A plain list stays one operator.
        assert_eq!(f.is_in(&["a"]).into_document().ok(), Some(doc! {"name": {"$in": ["a"]}}));
    }

    #[test]
    fn scalar_element_conditions_must_be_a_conjunction() {
        let e: Field<Element<i32>, i32> = Field::new("", None);
        assert_eq!(e.gt(1).and(e.lt(5)).element_condition().ok(), Some(doc! {"$gt": 1, "$lt": 5}));
        assert_eq!((!e.eq(3)).element_condition().ok(), Some(doc! {"$not": {"$eq": 3}}));
        assert!(e.eq(1).or(e.eq(2)).element_condition().is_err());
        let scores: Field<Doc, Vec<i32>> = Field::new("scores", None);
        assert!(scores.elem_match(|s| s.eq(1).or(s.eq(2))).into_document().is_err());
    }

    #[test]
    fn escaped_text_has_no_meta_characters_left() {
        assert_eq!(escape_regex("a.b*c"), r"a\.b\*c");
        assert_eq!(escape_regex("tab\there"), "tab\\\there");
        assert_eq!(escape_regex("nul\0"), r"nul\x00");
        assert_eq!(escape_regex("éa_1"), "éa_1");
    }
}
