//! The ids a history names, the same in every run of a seed, and the
//! documents operations write (copies left stale for docrel to fill).

use super::schema::*;
use docrel::bson::{oid::ObjectId, DateTime};

/// The ids a history names, the same in every run of a seed (so a shrunk
/// or repeated run means the same documents): tag byte, then the index.
#[derive(Clone, Debug)]
pub struct Universe;

fn oid(tag: u8, i: usize) -> ObjectId {
    let mut b = [0u8; 12];
    b[0] = tag;
    b[10] = (i >> 8) as u8;
    b[11] = i as u8;
    ObjectId::from_bytes(b)
}

impl Universe {
    pub fn part(i: usize) -> ObjectId {
        oid(0xa1, i)
    }
    pub fn product(i: usize) -> ObjectId {
        oid(0xa2, i)
    }
    pub fn person(i: usize) -> ObjectId {
        oid(0xb1, i)
    }
    pub fn task(i: usize) -> ObjectId {
        oid(0xb2, i)
    }
    pub fn review(i: usize) -> ObjectId {
        oid(0xc1, i)
    }
    pub fn rid(i: usize) -> i32 {
        100 + i as i32
    }
    pub fn item(i: usize) -> i32 {
        i as i32 + 1
    }
    pub fn post(i: usize) -> i32 {
        i as i32 + 1
    }
    /// A part no operation names: the deferred histories' drain marker.
    pub fn sentinel_part() -> ObjectId {
        oid(0xe1, 0)
    }
    pub fn sentinel_product() -> ObjectId {
        oid(0xe2, 0)
    }
}

/// `text` with the universe's ids shown by name: `ObjectId("a1...03")` as
/// `P3`, `ObjectId("b2...05")` as `T5`, and so on.
pub fn short_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("ObjectId(\"") {
        out.push_str(&rest[..at]);
        let hex = &rest[at + 10..];
        let name = hex.get(..24).filter(|_| hex.get(24..26) == Some("\")")).and_then(|h| {
            let prefix = match &h[..2] {
                "a1" => "P",
                "a2" => "R",
                "b1" => "H",
                "b2" => "T",
                "c1" => "V",
                "e1" => "sentinel-P",
                "e2" => "sentinel-R",
                _ => return None,
            };
            let n = usize::from_str_radix(&h[20..], 16).ok()?;
            h[2..20].bytes().all(|b| b == b'0').then(|| format!("{prefix}{n}"))
        });
        match name {
            Some(n) => {
                out.push_str(&n);
                rest = &hex[26..];
            }
            None => {
                out.push_str("ObjectId(\"");
                rest = hex;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A copy's value as a caller would write it without knowing the source:
/// docrel has to fill it.
pub const STALE: &str = "(stale)";

/// A part as a caller writes it: its copies stale, no label.
pub fn part_doc(p: usize, name: &str, product: usize) -> Part {
    Part {
        id: Universe::part(p),
        name: name.to_owned(),
        product: Universe::product(product),
        product_name: STALE.into(),
        qty: 1,
        label: None,
    }
}

/// The elements of `products.parts` for these parts, their copies stale
/// (a quantity no part has, so that a copy left as written shows).
pub fn part_refs(parts: &[usize]) -> Vec<PartRef> {
    parts.iter().map(|p| PartRef { id: Universe::part(*p), name: STALE.into(), qty: -1000, label: None }).collect()
}

/// The notes of a task written by people `by`, in order, their texts
/// `<text>.<k>` (unique to the operation) and their copies stale.
pub fn notes(by: &[usize], text: &str) -> Vec<Note> {
    by.iter()
        .enumerate()
        .map(|(k, h)| Note { text: format!("{text}.{k}"), by: Universe::person(*h), by_name: STALE.into() })
        .collect()
}

/// Notes as read, their copies made stale again: the caller writes them
/// back without knowing the names, docrel has to fill them.
pub fn restaled(notes: Vec<Note>) -> Vec<Note> {
    notes.into_iter().map(|n| Note { by_name: STALE.into(), ..n }).collect()
}

/// Review `v` of item `i`.
pub fn review_doc(v: usize, i: usize, text: &str, date: i64) -> Review {
    Review {
        id: Universe::review(v),
        review_id: Universe::rid(v),
        product_id: Universe::item(i),
        author: format!("a{v}"),
        text: text.to_owned(),
        published_date: DateTime::from_millis(date),
        item_name: String::new(),
        reviewer: Some(Universe::person(v % super::setup::SETUP_PEOPLE)),
        reviewer_name: Some(STALE.into()),
    }
}
