//! A bound raised or lowered (issue 39's last kind of move): the stored
//! schema keeps the bound every process follows, a program declaring
//! another one is not in conflict with it, and only `docrel schema apply`
//! (an online change) publishes the program's. Until then, and in every
//! process, a write keeps to the lower of the bound its type declares and
//! the stored one, so a fleet running two versions never grows an array
//! past the bound the database publishes.

use super::form::{StoredKind, StoredType};
use serde::{Deserialize, Serialize};

/// A bound a program declares differently from the stored schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoundChange {
    /// The collection.
    pub collection: String,
    /// The array's stored name.
    pub field: String,
    /// The stored bound (`None`: unbounded).
    pub stored: Option<u32>,
    /// The program's bound (`None`: unbounded).
    pub declared: Option<u32>,
}

impl BoundChange {
    /// Whether the program allows more elements than the stored schema.
    pub fn raised(&self) -> bool {
        match (self.stored, self.declared) {
            (Some(s), Some(d)) => d > s,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }

    /// The change in words, with what each version's writes keep to.
    pub fn describe(&self) -> String {
        let show = |b: Option<u32>| b.map_or_else(|| "unbounded".to_owned(), |m| m.to_string());
        let (from, to) = (show(self.stored), show(self.declared));
        let whose = if self.raised() {
            "raised: once applied, a program declaring the old bound still keeps to it, and a document grown past \
             it by the new version is read whole but cannot be saved whole by the old one"
        } else {
            "lowered: once applied, every program keeps to it, whatever it declares; documents over it stay as they \
             are (none is trimmed), and writes that would grow them are refused until they shrink"
        };
        format!("`{}.{}`: bound {from} → {to} ({whose})", self.collection, self.field)
    }
}

/// The bound of an array relation's kind (`None` for other kinds too).
pub(crate) fn bound_of(kind: &StoredKind) -> Option<u32> {
    match kind {
        StoredKind::Embed { many: true, max } | StoredKind::RefMany { max, .. } => *max,
        _ => None,
    }
}

/// Whether a relation's kind is an array that can carry a bound.
fn bounded_kind(kind: &StoredKind) -> bool {
    matches!(kind, StoredKind::Embed { many: true, .. } | StoredKind::RefMany { .. })
}

/// `kind` with its bound erased: two declarations that differ only there
/// are the same rule (a bound change, not a conflict).
pub(crate) fn unbounded(kind: &mut StoredKind) {
    if let StoredKind::Embed { many: true, max } | StoredKind::RefMany { max, .. } = kind {
        *max = None;
    }
}

/// The bounds `ours` declares differently from `stored`, for each array
/// relation both declare.
pub(crate) fn changes_of(stored: &StoredType, ours: &StoredType) -> Vec<BoundChange> {
    let mut out = Vec::new();
    for o in ours.relations.iter().filter(|r| bounded_kind(&r.kind)) {
        let Some(s) = stored.relations.iter().find(|s| s.field == o.field && bounded_kind(&s.kind)) else { continue };
        let (was, now) = (bound_of(&s.kind), bound_of(&o.kind));
        if was != now {
            out.push(BoundChange {
                collection: ours.collection.clone(),
                field: o.field.clone(),
                stored: was,
                declared: now,
            });
        }
    }
    out
}

/// The stored bounds of the arrays of `stored` that a linked type (in
/// `ours`) declares with another bound or not at all: (collection, field,
/// max). Its writes keep to them as well as to its own.
pub(crate) fn followed(stored: &StoredType, mine: &StoredType) -> Vec<(String, String, u32)> {
    let declared = |field: &str| mine.relations.iter().find(|r| r.field == field).and_then(|r| bound_of(&r.kind));
    stored
        .relations
        .iter()
        .filter_map(|r| Some((r, bound_of(&r.kind)?)))
        .filter(|(r, max)| declared(&r.field).is_none_or(|d| d > *max))
        .map(|(r, max)| (stored.collection.clone(), r.field.clone(), max))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::BoundChange;

    fn change(stored: Option<u32>, declared: Option<u32>) -> BoundChange {
        BoundChange { collection: "posts".into(), field: "tags".into(), stored, declared }
    }

    #[test]
    fn raised_and_lowered_count_unbounded_as_infinite() {
        assert!(change(Some(10), Some(20)).raised());
        assert!(change(Some(10), None).raised());
        assert!(!change(Some(20), Some(10)).raised());
        assert!(!change(None, Some(10)).raised());
        assert!(change(Some(10), Some(20)).describe().contains("bound 10 → 20 (raised"));
        assert!(change(None, Some(5)).describe().contains("bound unbounded → 5 (lowered"));
    }
}
