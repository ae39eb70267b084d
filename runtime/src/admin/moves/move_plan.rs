//! A move's plan: what `docrel schema diff` shows of it, in words and as
//! JSON, whichever kind of move it is.

use super::copy::Estimate;
use super::count::MoveCounts;
use crate::schema::moves::MoveKind;
use crate::schema::stored::{OldArray, StoredMove, StoredType};
use serde::Serialize;

/// One move, planned.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MovePlan {
    /// The move's stable name.
    pub id: String,
    /// The change of pattern.
    pub kind: MoveKind,
    /// What the old array holds: elements, or ids of the new collection's
    /// documents.
    #[serde(default, skip_serializing_if = "OldArray::is_elements")]
    pub old: OldArray,
    /// The old array, `collection.field` as stored.
    pub from: String,
    /// The new collection.
    pub to: String,
    /// The old shape, as the reference texts name it, with its bound.
    pub old_shape: String,
    /// The new shape: the new collection and what the parent keeps.
    pub new_shape: Vec<String>,
    /// What moves, counted on the live data (none when refused before).
    pub counts: Option<MoveCounts>,
    /// The indexes the move and the new type need that the database lacks.
    pub index_builds: Vec<String>,
    /// Bounds that limit writes during the move or that the data violates.
    pub bounds: Vec<String>,
    /// The derived data that moves with the elements.
    pub derived: Vec<String>,
    /// The time the copy should take at the rate measured on this server.
    pub estimate: Option<Estimate>,
    /// What a reader of the old version sees, during and after.
    pub readers: Vec<String>,
    /// Why the move cannot run as it stands; empty when it can.
    pub refusals: Vec<String>,
}

impl MovePlan {
    /// The plan in words, one line per item.
    pub fn to_text(&self) -> String {
        let describe = match self.old {
            _ if self.kind.is_back() => self.kind.describe(),
            OldArray::Elements => self.kind.describe(),
            OldArray::Ids => "array of child references → a parent reference on the children",
            OldArray::One => "one-to-one embedded document → a document of its own whose `_id` is its parent's",
        };
        let mut out = format!("move {}.. {} → {}: {describe}\n", &self.id[..8.min(self.id.len())], self.from, self.to);
        out.push_str(&format!("  old shape: {}\n", self.old_shape));
        for s in &self.new_shape {
            out.push_str(&format!("  new shape: {s}\n"));
        }
        match &self.counts {
            Some(c) if self.kind.is_back() => out.push_str(&format!(
                "  to move: {} document(s) into their parents, {} bytes (largest {} bytes); {} naming no stored \
                 parent are not moved\n",
                c.elements, c.bytes, c.largest_document, c.orphans
            )),
            Some(c) if self.old == OldArray::One => out.push_str(&format!(
                "  to move: {} document(s), one per parent, {} bytes as documents of their own (largest {} \
                 bytes); {} bytes freed in the parents once retired\n",
                c.elements, c.bytes, c.largest_document, c.array_bytes
            )),
            Some(c) if self.kind == MoveKind::EmbedToBuckets => out.push_str(&format!(
                "  to move: {} element(s) of {} parent(s) into {} page(s), {} bytes as pages (largest array {}, \
                 largest page {} bytes); {} bytes freed in the parents once retired\n",
                c.elements, c.parents, c.pages, c.bytes, c.largest_array, c.largest_document, c.array_bytes
            )),
            Some(c) if self.old == OldArray::Ids => out.push_str(&format!(
                "  to move: {} id(s) of {} parent(s), each the parent reference of the document it names (largest \
                 array {}); {} bytes freed in the parents once retired\n",
                c.elements, c.parents, c.largest_array, c.array_bytes
            )),
            Some(c) => out.push_str(&format!(
                "  to move: {} element(s) of {} parent(s), {} bytes as documents (largest array {}, largest \
                 document {} bytes); {} bytes freed in the parents once retired\n",
                c.elements, c.parents, c.bytes, c.largest_array, c.largest_document, c.array_bytes
            )),
            None => {}
        }
        if let Some(c) = self.counts.as_ref().filter(|c| c.dangling > 0) {
            out.push_str(&format!("  dangling: {} id(s) name no `{}` document\n", c.dangling, self.to));
        }
        if let Some(c) = self.counts.as_ref().filter(|c| c.orphans > 0 && self.old == OldArray::Ids) {
            out.push_str(&format!("  unnamed: {} `{}` document(s) no array names get no parent\n", c.orphans, self.to));
        }
        let lines = [("index build", &self.index_builds), ("bound", &self.bounds), ("derived", &self.derived)];
        for (label, items) in lines {
            for i in items {
                out.push_str(&format!("  {label}: {i}\n"));
            }
        }
        match &self.estimate {
            Some(e) => {
                let unit = if self.kind == MoveKind::EmbedToBuckets { "page" } else { "element" };
                out.push_str(&format!(
                    "  time: about {:.1} s ({:.0} {unit}s/s measured on {} {unit}(s))\n",
                    e.seconds, e.elements_per_second, e.probed_elements
                ))
            }
            None => out.push_str("  time: nothing to copy\n"),
        }
        for r in &self.readers {
            out.push_str(&format!("  old readers: {r}\n"));
        }
        for r in &self.refusals {
            out.push_str(&format!("  refused: {r}\n"));
        }
        out
    }
}

/// The plan of `mv` before anything is looked at.
pub(super) fn blank(program: &[StoredType], mv: &StoredMove) -> MovePlan {
    let rust_field = mv.from.rust_field.clone().unwrap_or_default();
    MovePlan {
        id: mv.id.clone(),
        kind: mv.kind,
        old: OldArray::Elements,
        from: format!("{}.{rust_field}", mv.from.collection),
        to: mv.to.collection.clone(),
        old_shape: String::new(),
        new_shape: super::shapes::new_shape(program, mv),
        counts: None,
        index_builds: Vec::new(),
        bounds: Vec::new(),
        derived: Vec::new(),
        estimate: None,
        readers: Vec::new(),
        refusals: Vec::new(),
    }
}
