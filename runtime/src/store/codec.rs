//! Encoding documents once (with the 16 MiB check) and decoding them with
//! errors that name the collection, the `_id` and the failing field.

use crate::bson_compat;
use crate::error::{show_id, Error, Result, MAX_DOCUMENT_BYTES};
use mongodb::bson::{self, Bson, RawDocument, RawDocumentBuf};
use serde::{de::DeserializeOwned, Serialize};
use std::ops::Range;

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

/// Decodes a document read for a view that names the top-level fields
/// `names` (`None`: a whole document, every field) into `T`, from its bytes
/// less the element at `cut` (a byte range of `raw`, from [`element_range`])
/// and less an ObjectId `_id` the view does not name.
///
/// serde skips a field it does not know by decoding it all the same, each
/// ObjectId in it formatted as a hex string; the server returns `_id` to
/// every view, first. Copying the rest into `buf` (one buffer for a whole
/// read) costs less. A document that does not decode is decoded again
/// whole, for the error to name its `_id`.
pub(crate) fn decode_view<T: DeserializeOwned>(
    collection: &str,
    raw: &RawDocument,
    names: Option<&[&str]>,
    cut: Option<Range<usize>>,
    buf: &mut Vec<u8>,
) -> Result<T> {
    let id = names.filter(|n| !n.contains(&"_id")).and_then(|_| leading_object_id(raw));
    if id.is_none() && cut.is_none() {
        return decode(collection, raw);
    }
    match cut_out(raw, [id, cut], buf) {
        Some(doc) => bson_compat::from_slice::<T>(doc.as_bytes()).or_else(|_| decode(collection, raw)),
        None => decode(collection, raw),
    }
}

/// The byte range of the element `key` of `raw` whose value is `value` (a
/// slice of `raw`'s bytes, as `get_array` and `get_document` give), or
/// `None` when `value` is not where that element's value would be.
pub(crate) fn element_range(raw: &RawDocument, key: &str, value: &[u8]) -> Option<Range<usize>> {
    let bytes = raw.as_bytes();
    let value_at = (value.as_ptr() as usize).checked_sub(bytes.as_ptr() as usize)?;
    let end = value_at.checked_add(value.len()).filter(|&e| e < bytes.len())?;
    // The element: a type byte, the key and a 0, then the value.
    let start = value_at.checked_sub(key.len() + 2).filter(|&s| s >= 4)?;
    (bytes.get(start + 1..value_at)?.split_last() == Some((&0, key.as_bytes()))).then_some(start..end)
}

/// The range of `raw`'s first element when it is an ObjectId `_id`.
fn leading_object_id(raw: &RawDocument) -> Option<Range<usize>> {
    const ELEMENT: usize = 1 + 4 + 12; // type byte, "_id" and its 0, the id
    let bytes = raw.as_bytes();
    (bytes.len() > 4 + ELEMENT && bytes.get(4..9) == Some(&b"\x07_id\0"[..])).then_some(4..4 + ELEMENT)
}

/// `raw`'s bytes less the ranges `cuts` (in order, apart, within its
/// elements), as a document written into `buf`.
fn cut_out<'b>(raw: &RawDocument, cuts: [Option<Range<usize>>; 2], buf: &'b mut Vec<u8>) -> Option<&'b RawDocument> {
    let bytes = raw.as_bytes();
    buf.clear();
    let mut from = 0;
    for cut in cuts.into_iter().flatten() {
        buf.extend_from_slice(bytes.get(from..cut.start)?);
        from = cut.end;
    }
    buf.extend_from_slice(bytes.get(from..)?);
    let len = i32::try_from(buf.len()).ok()?;
    buf.get_mut(..4)?.copy_from_slice(&len.to_le_bytes());
    RawDocument::from_bytes(buf).ok()
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
                message: without_value(&e.to_string()),
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
            message: without_value(&e.into_inner().to_string()),
        },
        // The two deserializers disagree: report the fast path's words.
        Ok(_) => {
            let message = without_value(&fast.to_string());
            Error::Decode { collection: collection.into(), id, rust_type, path: ".".into(), message }
        }
    }
}

/// serde's words without the stored value they quote: a mistyped field may
/// hold a secret (a token where a number was expected), and an error ends
/// up in logs. `invalid type: string "sk_live_..", expected i64` becomes
/// `invalid type: string, expected i64`; an unknown variant loses its name.
fn without_value(message: &str) -> String {
    // bson 3 wraps serde's words ("BSON error. Kind: ... Message: invalid
    // type: ..."), so they are found where they start, not only at the front.
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(at) = message.find(prefix) {
            let (head, rest) = message.split_at(at + prefix.len());
            let Some((found, expected)) = rest.split_once(", expected ") else { break };
            let kind = found.split(['"', '`']).next().unwrap_or(found).trim_end();
            return format!("{head}{kind}, expected {expected}");
        }
    }
    if let Some(at) = message.find("unknown variant `") {
        let (head, rest) = message.split_at(at);
        let rest = &rest["unknown variant `".len()..];
        let tail = rest.split_once('`').map_or("", |(_, tail)| tail);
        return format!("{head}unknown variant{tail}");
    }
    message.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::{oid::ObjectId, rawdoc};

    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Card {
        name: String,
    }

    #[test]
    fn a_view_is_decoded_without_what_it_does_not_name() {
        let id = ObjectId::new();
        let doc = rawdoc! {"_id": id, "name": "anvil", "_docrel": [{"_id": id}], "n": 1};
        let joined = doc.get_array("_docrel").unwrap().as_bytes();
        let cut = element_range(&doc, "_docrel", joined);
        let mut buf = Vec::new();
        assert_eq!(
            cut_out(&doc, [leading_object_id(&doc), cut.clone()], &mut buf).unwrap().to_owned(),
            rawdoc! {"name": "anvil", "n": 1}
        );
        assert_eq!(
            cut_out(&doc, [None, cut.clone()], &mut buf).unwrap().to_owned(),
            rawdoc! {"_id": id, "name": "anvil", "n": 1}
        );
        let card: Card = decode_view("c", &doc, Some(&["name"]), cut, &mut buf).unwrap();
        assert_eq!(card, Card { name: "anvil".into() });
        // Bytes that are not the value of that field: nothing to cut.
        assert!(element_range(&doc, "name", joined).is_none());
        assert!(element_range(&doc, "_docrel", doc.get_str("name").unwrap().as_bytes()).is_none());
        // An `_id` of another type, or not first, stays.
        assert!(leading_object_id(&rawdoc! {"_id": "a", "name": "b"}).is_none());
        assert!(leading_object_id(&rawdoc! {"name": "b", "_id": id}).is_none());
    }

    #[test]
    fn a_decode_error_names_the_field_and_the_type_but_not_the_stored_value() {
        #[derive(serde::Deserialize, Debug)]
        struct Account {
            #[allow(dead_code)]
            balance: i64,
        }
        let doc = rawdoc! {"_id": 1, "balance": "sk_live_0123456789"};
        let err = decode_view::<Account>("accounts", &doc, None, None, &mut Vec::new()).unwrap_err();
        let text = err.to_string();
        assert!(!text.contains("sk_live"), "the stored value is not echoed: {text}");
        assert!(text.contains("`balance`") && text.contains("string") && text.contains("i64"), "{text}");
        assert_eq!(
            without_value("unknown variant `s3cr3t`, expected `a` or `b`"),
            "unknown variant, expected `a` or `b`"
        );
        assert_eq!(without_value("invalid value: integer `-4`, expected u32"), "invalid value: integer, expected u32");
        assert_eq!(without_value("missing field `name`"), "missing field `name`");
        assert_eq!(
            without_value("BSON error. Message: invalid type: string \"sk\", expected i64."),
            "BSON error. Message: invalid type: string, expected i64."
        );
    }

    #[test]
    fn a_document_that_does_not_decode_is_named_by_its_id() {
        let id = ObjectId::new();
        let doc = rawdoc! {"_id": id, "name": 7};
        let err = decode_view::<Card>("c", &doc, Some(&["name"]), None, &mut Vec::new()).unwrap_err();
        assert!(err.to_string().contains(&id.to_hex()), "{err}");
    }
}
