//! The image of a written document the server returns (a replace's, an
//! update's read-back), as a document the fan-out reads.

use crate::error::{show_id, Error, Result};
use mongodb::bson::{Bson, Document as BsonDoc, RawDocumentBuf};

/// `raw` as a document, with `known` (values the write is known to have
/// set) over it. An image that does not decode is an error, never an
/// empty document: an empty one would skip the fan-out and return `Ok`
/// with every copy stale. The write is done by then, so the error says so
/// and names the repair that brings what is derived from it up to date.
pub(super) fn image(
    what: &str,
    collection: &'static str,
    raw: &RawDocumentBuf,
    known: Option<BsonDoc>,
) -> Result<BsonDoc> {
    let mut image = BsonDoc::try_from(raw.as_ref()).map_err(|e| {
        let id = raw.get("_id").ok().flatten().and_then(|id| Bson::try_from(id).ok()).unwrap_or(Bson::Null);
        let target = crate::schema::graph::graph().targets_of(collection).first();
        Error::FanOut {
            source_collection: collection,
            id: show_id(&id),
            target: target.map_or(collection, |t| t.collection),
            path: target.map(|t| t.id_path()).unwrap_or_default(),
            done: String::new(),
            cause: Box::new(Error::Encode {
                what: format!(
                    "the image of {what} document of `{collection}` (it does not read as BSON: fix the stored \
                     document first)"
                ),
                message: e.to_string(),
            }),
        }
    })?;
    image.extend(known.unwrap_or_default());
    Ok(image)
}

#[cfg(test)]
mod tests {
    use super::image;

    /// A string that is not UTF-8 (which MongoDB may hold from a writer
    /// that does not check it, and the embedded test server refuses to
    /// store): the image is an error naming the document's collection.
    #[test]
    fn an_image_that_does_not_decode_is_an_error() {
        let name = b"bad\xff\xfe";
        let mut body = b"\x10_id\x00".to_vec();
        body.extend(1i32.to_le_bytes());
        body.extend(b"\x02name\x00");
        body.extend(i32::try_from(name.len() + 1).unwrap_or(0).to_le_bytes());
        body.extend(name);
        body.push(0);
        let mut bytes = i32::try_from(body.len() + 5).unwrap_or(0).to_le_bytes().to_vec();
        bytes.extend(body);
        bytes.push(0);
        let raw = mongodb::bson::RawDocumentBuf::from_bytes(bytes).expect("well framed");
        let err = image("an updated", "parts", &raw, None).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("the image of an updated document of `parts`"), "{text}");
        assert!(text.contains("was written") && text.contains("docrel::check::copies"), "{text}");
    }
}
