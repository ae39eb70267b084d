//! Dotted BSON paths: reading a field by path, and whether two paths
//! overlap (writing one changes the other).

use crate::bson_compat;
use mongodb::bson::{doc, Bson, Document as BsonDoc};

/// A field of a document, by dotted path.
pub fn lookup<'d>(doc: &'d BsonDoc, path: &str) -> Option<&'d Bson> {
    let mut current = doc;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        let value = current.get(part)?;
        if parts.peek().is_none() {
            return Some(value);
        }
        current = value.as_document()?;
    }
    None
}

/// Whether writing one path changes the other: equal, or one inside the other.
pub fn overlaps(a: &str, b: &str) -> bool {
    a == b || is_within(a, b) || is_within(b, a)
}

/// Whether `path` lies inside `parent` (`parts.name` inside `parts`), without allocating.
fn is_within(path: &str, parent: &str) -> bool {
    path.len() > parent.len() && path.starts_with(parent) && path.as_bytes()[parent.len()] == b'.'
}

/// A field name for an id: hex for ObjectIds, digits for numbers, and the
/// string itself when it is a safe field name (otherwise its bytes in hex).
pub fn id_key(id: &Bson) -> String {
    let mut key = String::new();
    push_id_key(&mut key, id);
    key
}

/// [`id_key`] written at the end of `out`: a copy record's path takes it
/// without a string of its own.
pub(crate) fn push_id_key(out: &mut String, id: &Bson) {
    match id {
        // What `to_hex` gives, without its per-character iterator or a
        // string of its own: this runs for every copy record a fan-out writes.
        Bson::ObjectId(o) => {
            const DIGITS: &[u8; 16] = b"0123456789abcdef";
            let mut hex = [0u8; 24];
            for (pair, b) in hex.chunks_exact_mut(2).zip(o.bytes()) {
                pair[0] = DIGITS[usize::from(b >> 4)];
                pair[1] = DIGITS[usize::from(b & 0xf)];
            }
            out.push_str(std::str::from_utf8(&hex).unwrap_or_default());
        }
        Bson::Int32(i) => out.push_str(&i.to_string()),
        Bson::Int64(i) => out.push_str(&i.to_string()),
        Bson::String(s) if !s.is_empty() && !s.contains(['.', '$']) && !s.starts_with('x') => out.push_str(s),
        other => {
            let bytes = bson_compat::to_vec(&doc! {"": other.clone()}).unwrap_or_default();
            out.push('x');
            out.push_str(&hex(&bytes));
        }
    }
}

/// `bytes` in lowercase hex, two digits each.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        hex.push(char::from(DIGITS[usize::from(b >> 4)]));
        hex.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    hex
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_overlap_only_on_segment_boundaries() {
        assert!(overlaps("parts", "parts.name"));
        assert!(overlaps("parts.name", "parts"));
        assert!(overlaps("name", "name"));
        assert!(!overlaps("name", "names"));
        assert!(!overlaps("parts.name", "parts.names"));
    }

    #[test]
    fn lookup_follows_documents() {
        let d = doc! {"a": {"b": {"c": 1}}, "x": 2};
        assert_eq!(lookup(&d, "a.b.c"), Some(&Bson::Int32(1)));
        assert_eq!(lookup(&d, "x"), Some(&Bson::Int32(2)));
        assert_eq!(lookup(&d, "x.y"), None);
        assert_eq!(lookup(&d, "a.q"), None);
    }

    #[test]
    fn object_id_keys_are_their_hex() {
        for _ in 0..100 {
            let id = mongodb::bson::oid::ObjectId::new();
            assert_eq!(id_key(&Bson::ObjectId(id)), id.to_hex());
        }
        let id =
            mongodb::bson::oid::ObjectId::from_bytes([0, 1, 0x0f, 0x10, 0x7f, 0x80, 0xa5, 0xfe, 0xff, 9, 0xab, 0xcd]);
        assert_eq!(id_key(&Bson::ObjectId(id)), "00010f107f80a5feff09abcd");
    }

    #[test]
    fn id_keys_are_distinct_safe_field_names() {
        let keys = [
            id_key(&Bson::Int32(7)),
            id_key(&Bson::Int64(8)),
            id_key(&Bson::String("joe".into())),
            id_key(&Bson::String("a.b".into())),
            id_key(&Bson::String("x1".into())),
            id_key(&Bson::String("".into())),
        ];
        for k in &keys {
            assert!(!k.is_empty() && !k.contains(['.', '$']), "{k}");
        }
        let mut unique = keys.to_vec();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), keys.len());
    }
}
