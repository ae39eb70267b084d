//! An index a document type declares (`#[document(index(..))]` on the
//! struct, `#[document(index)]`, `unique` or `text` on a field), with every
//! option MongoDB takes for it, and the `createIndexes` model it becomes.
//!
//! The options are built as the document `listIndexes` shows them
//! ([`IndexSpec::options`]): the model is read from that document, and the
//! index plan compares it with what the server has.

use crate::error::{Error, Misuse, Result};
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::options::IndexOptions;
use mongodb::IndexModel;
use std::time::Duration;

/// An index a document type declares.
///
/// ```
/// use docrel::{Document, schema::IndexSpec, bson::{doc, oid::ObjectId, DateTime}};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(
///     collection = "sessions",
///     index(fields(user, -created), name = "by_user"),
///     index(fields(created), expire_after = "30d"),
/// )]
/// struct Session {
///     #[serde(rename = "_id")]
///     id: ObjectId,
///     user: String,
///     created: DateTime,
/// }
///
/// let [by_user, ttl] = Session::schema().indexes else { panic!() };
/// assert_eq!(by_user.keys_document(), doc! {"user": 1, "created": -1});
/// assert_eq!(by_user.options()?, doc! {"name": "by_user"});
/// assert_eq!(ttl.options()?, doc! {"expireAfterSeconds": 2_592_000});
/// # Ok::<(), docrel::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexSpec {
    /// The keys, in order, with `1` (ascending) or `-1` (descending); in a
    /// text index, the keys before the text keys.
    pub keys: &'static [(&'static str, i32)],
    /// Whether the index is unique.
    pub unique: bool,
    /// The text keys and their weights (a text index when not empty).
    pub text: &'static [(&'static str, u32)],
    /// The index's name; the server's default (`user_1_created_-1`) when `None`.
    pub name: Option<&'static str>,
    /// Documents without the field are left out of the index.
    pub sparse: bool,
    /// A TTL index: documents are deleted once the date in the field is
    /// older than this.
    pub expire_after: Option<Duration>,
    /// A partial index: only documents matching this filter are indexed.
    pub partial: Option<PartialFilter>,
    /// How strings compare in the index.
    pub collation: Option<IndexCollation>,
    /// A text index's language (the server's default is `english`).
    pub default_language: Option<&'static str>,
    /// The field naming a document's own language in a text index (the
    /// server's default is `language`).
    pub language_override: Option<&'static str>,
}

/// The filter of a partial index.
#[derive(Debug, Clone, Copy)]
pub enum PartialFilter {
    /// Extended JSON, as written in `partial = "{..}"` (checked to be an
    /// object when the program is compiled).
    Json(&'static str),
    /// The expression of `partial = doc! {..}`, as a function.
    Build(fn() -> BsonDoc),
}

/// The collation of an index: `collation(locale = "fr", strength = 2)`.
/// `None` is the server's default for the locale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IndexCollation {
    /// The ICU locale (`"fr"`, `"en_US"`, `"simple"`).
    pub locale: &'static str,
    /// 1 (base letters) to 5 (identical); 2 ignores case.
    pub strength: Option<u8>,
    /// A level of its own for case.
    pub case_level: Option<bool>,
    /// `"upper"`, `"lower"` or `"off"`.
    pub case_first: Option<&'static str>,
    /// Numeric strings compare as numbers.
    pub numeric_ordering: Option<bool>,
    /// `"non-ignorable"` or `"shifted"` (spaces and punctuation ignored).
    pub alternate: Option<&'static str>,
    /// With `"shifted"`: `"punct"` or `"space"`.
    pub max_variable: Option<&'static str>,
    /// Text is normalized before comparing.
    pub normalization: Option<bool>,
    /// Secondary differences compare from the end (French dictionaries).
    pub backwards: Option<bool>,
}

impl IndexSpec {
    /// No keys and no option: what the derive completes (`..IndexSpec::DEFAULT`).
    pub const DEFAULT: IndexSpec = IndexSpec {
        keys: &[],
        unique: false,
        text: &[],
        name: None,
        sparse: false,
        expire_after: None,
        partial: None,
        collation: None,
        default_language: None,
        language_override: None,
    };

    /// The key document: `{tenant: 1, created: -1}`, the text keys as
    /// `"text"` after the others (`{tenant: 1, title: "text"}`).
    pub fn keys_document(&self) -> BsonDoc {
        let mut keys: BsonDoc = self.keys.iter().map(|(f, d)| ((*f).to_owned(), Bson::Int32(*d))).collect();
        for (f, _) in self.text {
            keys.insert(*f, "text");
        }
        keys
    }

    /// The options as `listIndexes` shows them, only those declared:
    /// `{name, unique, sparse, expireAfterSeconds, partialFilterExpression,
    /// collation, weights, default_language, language_override}`. Weights
    /// of 1 (the default) are left out.
    pub fn options(&self) -> Result<BsonDoc> {
        let mut o = BsonDoc::new();
        if let Some(name) = self.name {
            o.insert("name", name);
        }
        if self.unique {
            o.insert("unique", true);
        }
        if self.sparse {
            o.insert("sparse", true);
        }
        if let Some(ttl) = self.expire_after {
            let seconds = ttl.as_secs();
            o.insert("expireAfterSeconds", i32::try_from(seconds).map_or(Bson::Int64(seconds as i64), Bson::Int32));
        }
        if let Some(partial) = &self.partial {
            o.insert("partialFilterExpression", partial.document()?);
        }
        if let Some(collation) = &self.collation {
            o.insert("collation", collation.document());
        }
        let weights: BsonDoc =
            self.text.iter().filter(|(_, w)| *w != 1).map(|(f, w)| ((*f).to_owned(), Bson::Int32(*w as i32))).collect();
        if !weights.is_empty() {
            o.insert("weights", weights);
        }
        if let Some(language) = self.default_language {
            o.insert("default_language", language);
        }
        if let Some(field) = self.language_override {
            o.insert("language_override", field);
        }
        Ok(o)
    }

    /// The `createIndexes` model of this index.
    pub fn model(&self) -> Result<IndexModel> {
        let options = self.options()?;
        let options = (!options.is_empty())
            .then(|| crate::bson_compat::from_document::<IndexOptions>(options))
            .transpose()
            .map_err(|e| invalid(format!("the options of the index on {}: {e}", self.keys_document())))?;
        Ok(IndexModel::builder().keys(self.keys_document()).options(options).build())
    }
}

impl PartialFilter {
    /// The filter as a document; a `Json` one that is not valid extended
    /// JSON is an [`Error::Invalid`] naming it.
    pub fn document(&self) -> Result<BsonDoc> {
        match self {
            PartialFilter::Build(build) => Ok(build()),
            PartialFilter::Json(text) => {
                let value: serde_json::Value = serde_json::from_str(text)
                    .map_err(|e| invalid(format!("the partial filter `{text}` is not JSON: {e}")))?;
                match crate::bson_compat::from_extjson(value) {
                    Ok(Bson::Document(d)) => Ok(d),
                    Ok(other) => Err(invalid(format!("the partial filter `{text}` is not a document but {other}"))),
                    Err(e) => Err(invalid(format!("the partial filter `{text}` is not valid extended JSON: {e}"))),
                }
            }
        }
    }
}

/// Two filters are equal when they give the same document.
impl PartialEq for PartialFilter {
    fn eq(&self, other: &Self) -> bool {
        match (self.document(), other.document()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for PartialFilter {}

impl IndexCollation {
    /// The collation document, in the server's names (`caseLevel`, ...).
    pub fn document(&self) -> BsonDoc {
        let mut d = doc! {"locale": self.locale};
        let flags = [
            ("caseLevel", self.case_level),
            ("numericOrdering", self.numeric_ordering),
            ("normalization", self.normalization),
            ("backwards", self.backwards),
        ];
        if let Some(s) = self.strength {
            d.insert("strength", i32::from(s));
        }
        for (key, value) in
            [("caseFirst", self.case_first), ("alternate", self.alternate), ("maxVariable", self.max_variable)]
        {
            if let Some(v) = value {
                d.insert(key, v);
            }
        }
        for (key, value) in flags {
            if let Some(v) = value {
                d.insert(key, v);
            }
        }
        d
    }
}

fn invalid(message: String) -> Error {
    Error::Invalid { what: Misuse::Index, message }
}
