//! The moves between patterns in progress in a database, as its graph
//! knows them: each write of a call reads them from the graph the call
//! began with, so one call never mixes two states of a move.

use super::graph::Graph;
use super::stored::inverses::AdoptedInverse;
use super::stored::moves_state::{ActiveMove, MoveState, OldArray};

/// Which side of a move a collection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// Its documents hold the old array.
    Array,
    /// Its documents are the moved elements.
    Collection,
}

impl Graph {
    /// The bound writes of `collection` keep to on its array `field`: the
    /// lower of the one its type declares (`declared`) and the stored one
    /// (a bound changed by `docrel schema apply`, or declared only there).
    pub(crate) fn bound(&self, collection: &str, field: &str, declared: Option<u32>) -> Option<u32> {
        let stored = self.bounds.iter().find(|(c, f, _)| c == collection && f == field).map(|b| b.2);
        match (declared, stored) {
            (Some(d), Some(s)) => Some(d.min(s)),
            (d, s) => d.or(s),
        }
    }

    /// The stored bounds of `collection` its types' own do not already
    /// keep to: (field, max).
    pub(crate) fn stored_bounds<'c>(
        &'static self,
        collection: &'c str,
    ) -> impl Iterator<Item = (&'static str, u32)> + 'c {
        self.bounds.iter().filter(move |(c, _, _)| c == collection).map(|(_, f, m)| (f.as_str(), *m))
    }

    /// The moves whose two shapes are both kept, with the side `collection`
    /// is of each: until a move is retired, a write of either shape is
    /// applied to the other.
    pub(crate) fn mirrored(&self, collection: &str) -> Vec<(&ActiveMove, Side)> {
        let kept = self.moves.iter().filter(|m| m.state < MoveState::Retired);
        kept.filter_map(|m| {
            if m.spec.from.collection == collection {
                Some((m, Side::Array))
            } else if m.spec.to.collection == collection {
                Some((m, Side::Collection))
            } else {
                None
            }
        })
        .collect()
    }

    /// Whether the move of `from.rust_field` into `to` is listed at all, in
    /// any state.
    pub(crate) fn lists_move(&self, from: &str, rust_field: &str, to: &str) -> bool {
        self.moves.iter().any(|m| {
            m.spec.from.collection == from
                && m.spec.from.rust_field.as_deref() == Some(rust_field)
                && m.spec.to.collection == to
        })
    }

    /// Whether a type of `collection` (linked, or as stored) still declares
    /// the array whose Rust name is `rust_field`.
    pub(crate) fn holds_array(&self, collection: &str, rust_field: &str) -> bool {
        self.types_of(collection).iter().any(|s| s.relations.iter().any(|r| r.rust_field == rust_field))
    }

    /// The fields of `collection` a move keeps that `schema` does not
    /// declare, which a replace keeps as stored: the old array, for the new
    /// version's type; the parent reference of documents an array of ids
    /// names, for the old version's (its documents get it from the move).
    pub(crate) fn kept_by_moves(&self, schema: &super::document::Schema) -> Vec<&str> {
        let declares = |field: &str| schema.fields.iter().any(|f| f.bson == field);
        self.mirrored(schema.collection)
            .into_iter()
            .filter_map(|(m, side)| match side {
                Side::Array if !schema.relations.iter().any(|r| r.field == m.field) => Some(m.field.as_str()),
                Side::Collection if m.old == OldArray::Ids && !declares(&m.spec.parent_field) => {
                    Some(m.spec.parent_field.as_str())
                }
                _ => None,
            })
            .collect()
    }
}

impl Graph {
    /// The stored two-way arrays of `collection` that its linked type
    /// declares one-way: its writes of them keep the other side.
    pub(crate) fn adopted_inverses(&'static self, collection: &str) -> Vec<&'static AdoptedInverse> {
        self.adopted.iter().filter(|a| a.collection == collection).collect()
    }

    /// The adopted inverses `collection` holds the other side of: a whole
    /// document written there keeps that side as stored, which must not
    /// race the reconciles writing it.
    pub(crate) fn adopted_into(&'static self, collection: &str) -> Vec<&'static AdoptedInverse> {
        self.adopted.iter().filter(|a| a.target == collection).collect()
    }

    /// The other sides of arrays made two-way in `collection` that are
    /// not built yet: read from the arrays naming each document.
    pub(crate) fn read_from_arrays(&self, collection: &str) -> Vec<&super::stored::transitions::BuildingInverse> {
        self.building.iter().filter(|b| b.collection == collection).collect()
    }

    /// The fields of `collection` that one-to-one documents are moving
    /// back into and that are not read as stored yet: under way and not
    /// switched, or declared by this program and not applied. Each is read
    /// from the old collection, as a side not built yet is.
    pub(crate) fn read_embedded(&self, collection: &str) -> Vec<super::stored::transitions::BuildingInverse> {
        let side = |field: &str, to: &str, parent: &str| super::stored::transitions::BuildingInverse {
            collection: collection.to_owned(),
            field: field.to_owned(),
            from_collection: to.to_owned(),
            from_field: parent.to_owned(),
        };
        let mut out: Vec<_> = self
            .moves
            .iter()
            .filter(|m| m.spec.kind.is_back() && m.spec.from.collection == collection && m.state < MoveState::Switched)
            .map(|m| side(&m.field, &m.spec.to.collection, &m.spec.parent_field))
            .collect();
        for m in super::moves::declared().filter(|m| m.kind.is_back() && m.from_collection == collection) {
            if self.lists_move(m.from_collection, m.from_rust_field, m.to_collection) {
                continue;
            }
            let linked = self
                .types_of(collection)
                .iter()
                .flat_map(|s| s.relations.iter())
                .find(|r| r.rust_field == m.from_rust_field);
            if let (Some(parent), Some(field)) = (self.back_parent(m.to_collection, collection), linked) {
                out.push(side(field.field, m.to_collection, parent));
            }
        }
        out
    }

    /// The parent reference to `parent` that a type of `old` (linked, or
    /// as stored) declares: the old shape of a move back, while kept.
    pub(crate) fn back_parent(&self, old: &str, parent: &str) -> Option<&'static str> {
        let found = self
            .types_of(old)
            .iter()
            .flat_map(|s| s.relations.iter())
            .find(|r| matches!(r.kind, super::document::RelationKind::ParentRef) && r.target == Some(parent));
        found.map(|r| r.field)
    }

    /// The bound writes keep the other side of an adopted inverse to.
    pub(crate) fn inverse_bound(&self, a: &AdoptedInverse) -> Option<u32> {
        let types = self.types_of(&a.target);
        let rel = types.iter().flat_map(|s| s.relations.iter()).find(|r| r.field == a.inverse);
        let declared = match rel.map(|r| r.kind) {
            Some(super::document::RelationKind::RefMany { max, .. }) => max,
            _ => None,
        };
        self.bound(&a.target, &a.inverse, declared)
    }
}

/// How the documents of a collection a move fills are read before its
/// reads are switched: from the parents' array, which holds every element
/// until then (the collection holds only what was copied or mirrored).
#[derive(Debug, Clone)]
pub(crate) struct ReadThrough {
    /// The move, as exported.
    pub(crate) spec: super::stored::moves::StoredMove,
    /// The array's stored name.
    pub(crate) field: String,
    /// What the array holds.
    pub(crate) old: OldArray,
}

impl Graph {
    /// The move into buckets that fills `collection`, listed and not
    /// retired: an append is then made to the parent's array, and the
    /// pages follow it.
    pub(crate) fn filling_pages(&self, collection: &str) -> Option<&ActiveMove> {
        self.moves
            .iter()
            .find(|m| m.spec.to.collection == collection && m.spec.buckets.is_some() && m.state < MoveState::Retired)
    }

    /// Why `collection`'s pages cannot be read yet: a move into buckets
    /// fills it and has not made every page (`moved`), or this program
    /// declares one that is not under way while the database keeps the
    /// array. A page made from an array has no `_id` until it is stored,
    /// so such a read is refused rather than made up.
    pub(crate) fn unmade_pages(&self, collection: &str) -> Option<String> {
        if let Some(m) = self.filling_pages(collection) {
            return (m.state < MoveState::Moved).then(|| {
                format!(
                    "`{}` is moving into buckets ({}): its pages are read once every one is made (`moved`); \
                     `docrel schema apply` takes it there",
                    m.spec.label(),
                    m.state
                )
            });
        }
        let declared = super::moves::declared().find(|m| m.to_collection == collection && m.buckets.is_some())?;
        let pending = !self.lists_move(declared.from_collection, declared.from_rust_field, collection)
            && self.holds_array(declared.from_collection, declared.from_rust_field);
        pending.then(|| {
            format!(
                "`{}` was declared `moved_from = {}::{}`, and the database still keeps `{}.{}` with no move under \
                 way: run `docrel schema apply --file <this program's export>` first",
                declared.to_type,
                declared.from_type,
                declared.from_rust_field,
                declared.from_collection,
                declared.from_rust_field
            )
        })
    }

    /// How `collection` is read now: through the old shape when a move
    /// fills it and its reads are not switched yet, whether the move is
    /// under way or only declared by this program (`None`: as stored).
    pub(crate) fn read_through(&self, collection: &str) -> Option<ReadThrough> {
        let paged = |kind: super::moves::MoveKind| kind == super::moves::MoveKind::EmbedToBuckets;
        let filling = |m: &&ActiveMove| m.spec.to.collection == collection && !m.spec.kind.is_back();
        if let Some(m) = self.moves.iter().find(filling) {
            if paged(m.spec.kind) {
                return None;
            }
            return (m.state < MoveState::Switched).then(|| ReadThrough {
                spec: m.spec.clone(),
                field: m.field.clone(),
                old: m.old,
            });
        }
        // Declared, not under way: the array still holds every element
        // while the database keeps it (a move not applied yet).
        let declared =
            super::moves::declared().filter(|m| m.to_collection == collection && !m.kind.is_back() && !paged(m.kind));
        declared.into_iter().find_map(|m| {
            let types = self.types_of(m.from_collection);
            let rel = types.iter().flat_map(|s| s.relations.iter()).find(|r| r.rust_field == m.from_rust_field)?;
            let old = match rel.kind {
                super::document::RelationKind::RefMany { .. } => OldArray::Ids,
                super::document::RelationKind::Embed { many: false, .. } => OldArray::One,
                _ => OldArray::Elements,
            };
            Some(ReadThrough { spec: super::stored::moves::StoredMove::from(m), field: rel.field.to_owned(), old })
        })
    }
}
