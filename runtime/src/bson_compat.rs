//! The serde functions of bson under one set of names, whichever major
//! version `mongodb::bson` (the driver's, re-exported as `docrel::bson`) is:
//! bson 2 by default, bson 3 with the `bson-3` feature.
//!
//! bson 3 renamed `to_document`, `from_document`, `to_vec`, `from_slice`,
//! … to `serialize_to_document`, `deserialize_from_document`, … and has one
//! error type where bson 2 has two. Code that should build with either, the
//! runtime's, the generated code's, tests' and users', calls these:
//!
//! ```
//! use docrel::{bson::doc, bson_compat};
//!
//! #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
//! struct Point {
//!     x: i32,
//! }
//!
//! let d = bson_compat::to_document(&Point { x: 1 })?;
//! assert_eq!(d, doc! {"x": 1});
//! assert_eq!(bson_compat::from_document::<Point>(d)?, Point { x: 1 });
//! let bytes = bson_compat::to_vec(&doc! {"x": 1})?;
//! assert_eq!(bson_compat::from_slice::<Point>(&bytes)?, Point { x: 1 });
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use mongodb::bson::{Bson, Document, RawDocumentBuf, Regex};
use serde::{de::DeserializeOwned, Deserialize, Serialize};

/// Built without the `bson-3` feature, docrel is written for bson 2: when
/// another crate turns on the driver's `bson-3` feature, `mongodb::bson` is
/// bson 3 and this says so, the one error of such a build (see [`Driver`]).
#[cfg(not(feature = "bson-3"))]
#[diagnostic::on_unimplemented(
    message = "the driver's bson is bson 3 (a crate turns on `mongodb/bson-3`), docrel's is bson 2: turn on docrel's `bson-3` feature too",
    label = "docrel was built without its `bson-3` feature",
    note = "in your Cargo.toml: `docrel = {{ .., features = [\"bson-3\"] }}`"
)]
trait DocrelBson {}
#[cfg(not(feature = "bson-3"))]
impl DocrelBson for bson2::Document {}
#[cfg(not(feature = "bson-3"))]
const fn docrel_bson<T: DocrelBson>() -> bool {
    true
}

/// bson 2's `T` as the driver's: the same type, unless another crate turned
/// on the driver's `bson-3`. Then the check in it is the build's one error,
/// and this is an error type, about which rustc says nothing more: the code
/// here written for bson 2 names bson 2's items (`bson2::..`) and hands
/// their values to the driver through this, so nothing else fails.
#[cfg(not(feature = "bson-3"))]
pub(crate) type Driver<T> = <Checked<T, { docrel_bson::<Document>() }> as Resolve>::Out;

/// `T`, once a check holds: `<Checked<T, true> as Resolve>::Out` is `T`, and
/// a check that fails to compile makes it an error type.
#[cfg(not(feature = "bson-3"))]
pub(crate) struct Checked<T, const OK: bool>(std::marker::PhantomData<T>);
/// See [`Checked`].
#[cfg(not(feature = "bson-3"))]
pub(crate) trait Resolve {
    /// The checked type.
    type Out;
}
#[cfg(not(feature = "bson-3"))]
impl<T> Resolve for Checked<T, true> {
    type Out = T;
}
/// The driver's `T` (docrel and the driver are both on bson 3).
#[cfg(feature = "bson-3")]
pub(crate) type Driver<T> = T;

/// `value` as the driver's (see [`Driver`]).
fn driver<T>(value: T) -> Driver<T> {
    value
}

/// The error of the encoding functions: `bson::ser::Error` of bson 2,
/// `bson::error::Error` of bson 3.
#[cfg(not(feature = "bson-3"))]
pub type EncodeError = bson2::ser::Error;
/// The error of the encoding functions: `bson::ser::Error` of bson 2,
/// `bson::error::Error` of bson 3.
#[cfg(feature = "bson-3")]
pub type EncodeError = mongodb::bson::error::Error;

/// The error of the decoding functions: `bson::de::Error` of bson 2,
/// `bson::error::Error` of bson 3.
#[cfg(not(feature = "bson-3"))]
pub type DecodeError = bson2::de::Error;
/// The error of the decoding functions: `bson::de::Error` of bson 2,
/// `bson::error::Error` of bson 3.
#[cfg(feature = "bson-3")]
pub type DecodeError = mongodb::bson::error::Error;

#[cfg(not(feature = "bson-3"))]
use bson2::{from_bson as de_bson, from_document as de_document, from_slice as de_slice};
#[cfg(not(feature = "bson-3"))]
use bson2::{to_bson as ser_bson, to_document as ser_document, to_raw_document_buf as ser_raw, to_vec as ser_vec};

#[cfg(feature = "bson-3")]
use mongodb::bson::{
    deserialize_from_bson as de_bson, deserialize_from_document as de_document, deserialize_from_slice as de_slice,
};
#[cfg(feature = "bson-3")]
use mongodb::bson::{
    serialize_to_bson as ser_bson, serialize_to_document as ser_document, serialize_to_raw_document_buf as ser_raw,
    serialize_to_vec as ser_vec,
};

/// A value as [`Bson`] (`bson::to_bson` / `bson::serialize_to_bson`).
pub fn to_bson<T: Serialize + ?Sized>(value: &T) -> Result<Bson, EncodeError> {
    ser_bson(value).map(driver)
}

/// A value from [`Bson`] (`bson::from_bson` / `bson::deserialize_from_bson`).
pub fn from_bson<T: DeserializeOwned>(value: Bson) -> Result<T, DecodeError> {
    de_bson(driver(value))
}

/// A value as a [`Document`] (`bson::to_document` /
/// `bson::serialize_to_document`).
pub fn to_document<T: Serialize + ?Sized>(value: &T) -> Result<Document, EncodeError> {
    ser_document(value).map(driver)
}

/// A value from a [`Document`] (`bson::from_document` /
/// `bson::deserialize_from_document`).
pub fn from_document<T: DeserializeOwned>(doc: Document) -> Result<T, DecodeError> {
    de_document(driver(doc))
}

/// A value as the bytes of a BSON document (`bson::to_vec` /
/// `bson::serialize_to_vec`).
pub fn to_vec<T: Serialize>(value: &T) -> Result<Vec<u8>, EncodeError> {
    ser_vec(value)
}

/// A value from the bytes of a BSON document (`bson::from_slice` /
/// `bson::deserialize_from_slice`).
pub fn from_slice<'de, T: Deserialize<'de>>(bytes: &'de [u8]) -> Result<T, DecodeError> {
    de_slice(bytes)
}

/// A value as a [`RawDocumentBuf`] (`bson::to_raw_document_buf` /
/// `bson::serialize_to_raw_document_buf`).
pub fn to_raw_document_buf<T: Serialize>(value: &T) -> Result<RawDocumentBuf, EncodeError> {
    ser_raw(value).map(driver)
}

/// A BSON regular expression, its options sorted as BSON wants them (bson
/// 3 stores both strings as `CString`). `None` where either holds a NUL
/// byte, which BSON cannot store.
pub fn regex(pattern: &str, options: &str) -> Option<Regex> {
    if pattern.contains('\0') || options.contains('\0') {
        return None;
    }
    let mut sorted: Vec<char> = options.chars().collect();
    sorted.sort_unstable();
    let options: String = sorted.into_iter().collect();
    #[cfg(not(feature = "bson-3"))]
    return Some(driver(bson2::Regex { pattern: pattern.to_owned(), options }));
    #[cfg(feature = "bson-3")]
    Some(Regex { pattern: pattern.try_into().ok()?, options: options.try_into().ok()? })
}

/// A value as relaxed extended JSON, for error messages.
pub(crate) fn relaxed_extjson(value: &Bson) -> String {
    relaxed_json(value).to_string()
}

/// A value as relaxed extended JSON.
pub(crate) fn relaxed_json(value: &Bson) -> serde_json::Value {
    let value: Driver<Bson> = value.clone();
    value.into_relaxed_extjson()
}

/// Extended JSON read as a value; the error in words.
pub(crate) fn from_extjson(value: serde_json::Value) -> Result<Bson, String> {
    #[cfg(not(feature = "bson-3"))]
    let parsed = bson2::Bson::try_from(value).map(driver);
    #[cfg(feature = "bson-3")]
    let parsed = Bson::try_from(value);
    parsed.map_err(|e| e.to_string())
}
