//! Encoding documents once (with the 16 MiB check) and decoding them with
//! errors that name the collection, the `_id` and the failing field.

use crate::bson_compat;
use crate::error::{show_id, Error, Result, MAX_DOCUMENT_BYTES};
use mongodb::bson::{self, Bson, RawDocument, RawDocumentBuf};
use serde::{de::DeserializeOwned, Serialize};

/// Encodes a value into a raw document, refusing one above 16 MiB.
pub(crate) fn encode<T: Serialize>(collection: &'static str, value: &T) -> Result<RawDocumentBuf> {
    let raw = bson_compat::to_raw_document_buf(value)
        .map_err(|e| Error::Encode { what: format!("a document of `{collection}`"), message: e.to_string() })?;
    let bytes = raw.as_bytes().len();
    if bytes > MAX_DOCUMENT_BYTES {
        return Err(Error::DocumentTooLarge { collection, id: raw_id(&raw), bytes, max: MAX_DOCUMENT_BYTES });
    }
    Ok(raw)
}

/// The `_id` of a raw document, as extended JSON, for messages.
pub(crate) fn raw_id(raw: &RawDocument) -> String {
    match raw.get("_id") {
        Ok(Some(id)) => Bson::try_from(id).map(|b| show_id(&b)).unwrap_or_else(|_| "<unreadable _id>".into()),
        _ => "<no _id>".into(),
    }
}

/// Decodes a raw document into `T`. The fast path is serde straight from the
/// bytes; only when it fails is the document walked again to name the field.
pub(crate) fn decode<T: DeserializeOwned>(collection: &str, raw: &RawDocument) -> Result<T> {
    match bson_compat::from_slice::<T>(raw.as_bytes()) {
        Ok(v) => Ok(v),
        Err(fast) => Err(explain::<T>(collection, raw, fast)),
    }
}

#[cold]
fn explain<T: DeserializeOwned>(collection: &str, raw: &RawDocument, fast: bson_compat::DecodeError) -> Error {
    let id = raw_id(raw);
    let rust_type = std::any::type_name::<T>();
    let doc = match bson::Document::try_from(raw) {
        Ok(doc) => doc,
        Err(e) => {
            return Error::Decode {
                collection: collection.into(),
                id,
                rust_type,
                path: ".".into(),
                message: e.to_string(),
            }
        }
    };
    let de = bson::Deserializer::new(Bson::Document(doc));
    match serde_path_to_error::deserialize::<_, T>(de) {
        Err(e) => Error::Decode {
            collection: collection.into(),
            id,
            rust_type,
            path: e.path().to_string(),
            message: e.into_inner().to_string(),
        },
        // The two deserializers disagree: report the fast path's words.
        Ok(_) => {
            Error::Decode { collection: collection.into(), id, rust_type, path: ".".into(), message: fast.to_string() }
        }
    }
}
