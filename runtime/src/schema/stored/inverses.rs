//! A reference array made two-way (issue 39, N:M one-way → two-way): the
//! new version declares `inverse = ..` on an array of references the
//! stored schema keeps one-way. That is no conflict: a publish keeps the
//! stored rule, and only `docrel schema apply` (an online change) publishes
//! the inverse, then builds it. From then on a program whose type still
//! declares the array one-way (the old version) adopts the stored inverse:
//! each of its writes of the array keeps the other side, in the write's
//! transaction, so the fleet never stops writing the array while it
//! becomes two-way.

use super::form::{StoredKind, StoredRelation, StoredType};
use serde::{Deserialize, Serialize};

/// An array of references a program makes two-way where the stored schema
/// keeps it one-way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InverseChange {
    /// The collection holding the array (`students`).
    pub collection: String,
    /// The array's stored name (`courses`).
    pub field: String,
    /// The collection it refers to (`courses`).
    pub target: String,
    /// The stored name of the other side (`students`).
    pub inverse: String,
}

impl InverseChange {
    /// Whether `collection.field` is one of its two ends.
    pub(crate) fn has_end(&self, collection: &str, field: &str) -> bool {
        (self.collection == collection && self.field == field) || (self.target == collection && self.inverse == field)
    }

    /// The change in words, with what each version sees.
    pub fn describe(&self) -> String {
        format!(
            "`{}.{}` becomes two-way with `{}.{}` (N:M one-way → two-way): once applied, every program keeps \
             both sides, a program declaring the array one-way in a transaction with each of its writes of it; \
             the change then builds `{}.{}` from the arrays, page by page",
            self.collection, self.field, self.target, self.inverse, self.target, self.inverse
        )
    }

    /// The change the other way (N:M two-way → one-way) in words, with
    /// what each version sees.
    pub fn describe_one_way(&self) -> String {
        format!(
            "`{}.{}` becomes one-way: `{}.{}` is no longer kept (N:M two-way → one-way). Until it is retired this \
             program keeps both sides, in a transaction with each of its writes of the array, so the old version \
             reads every link; `docrel schema retire --file <export>` takes `{}.{}` out of the stored schema once \
             no running program declares it, and `--drop-old` removes it from the documents",
            self.collection, self.field, self.target, self.inverse, self.target, self.inverse
        )
    }
}

/// The stored two-way arrays `program` makes one-way: it declares the
/// array without its inverse and links the other side's type without the
/// other side (the old version reads it, this one does not). A program
/// that does not link the other side's type says nothing of it.
pub(crate) fn retirements(stored: &[StoredType], program: &[StoredType]) -> Vec<InverseChange> {
    let declared = |collection: &str| program.iter().find(|t| t.collection == collection);
    let mut out = Vec::new();
    for s in stored {
        let Some(ours) = declared(&s.collection) else { continue };
        for r in s.relations.iter().filter(|r| plain_many(r)) {
            let (Some(target), Some(inverse)) = (&r.target, &r.inverse) else { continue };
            let one_way = relation(ours, &r.field).is_some_and(|o| plain_many(o) && o.inverse.is_none());
            let drops_side = declared(target).is_some_and(|t| relation(t, inverse).is_none());
            if one_way && drops_side {
                let (collection, field) = (s.collection.clone(), r.field.clone());
                out.push(InverseChange { collection, field, target: target.clone(), inverse: inverse.clone() });
            }
        }
    }
    out
}

/// A stored two-way array a linked type declares one-way: its writes keep
/// the other side (see the module's head).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AdoptedInverse {
    /// The collection holding the array.
    pub collection: String,
    /// The array's stored name.
    pub field: String,
    /// The collection it refers to.
    pub target: String,
    /// The stored name of the other side, an array of references back.
    pub inverse: String,
}

/// A plain array of references, the only kind a reference is made two-way
/// from (an array of `{id, ..}` elements or a single reference is not).
fn plain_many(r: &StoredRelation) -> bool {
    matches!(r.kind, StoredKind::RefMany { key: None, .. })
}

/// The relation of `of` declaring `field`.
fn relation<'t>(of: &'t StoredType, field: &str) -> Option<&'t StoredRelation> {
    of.relations.iter().find(|r| r.field == field)
}

/// The arrays `ours` makes two-way where `stored` keeps them one-way.
pub(crate) fn changes_of(stored: &StoredType, ours: &StoredType) -> Vec<InverseChange> {
    ours.relations
        .iter()
        .filter(|o| plain_many(o))
        .filter_map(|o| {
            let s = relation(stored, &o.field).filter(|s| plain_many(s) && s.inverse.is_none())?;
            Some(InverseChange {
                collection: ours.collection.clone(),
                field: o.field.clone(),
                target: s.target.clone().or_else(|| o.target.clone())?,
                inverse: o.inverse.clone()?,
            })
        })
        .collect()
}

/// `ours` as a publish over `stored` compares it: an array one side
/// declares two-way and the other one-way is the same rule (the stored
/// one is kept; a change publishes the program's).
pub(crate) fn as_stored(stored: &StoredType, ours: &StoredType) -> StoredType {
    let mut out = ours.clone();
    for o in out.relations.iter_mut().filter(|o| plain_many(o)) {
        if let Some(s) = relation(stored, &o.field).filter(|s| plain_many(s)) {
            if s.inverse.is_none() || o.inverse.is_none() {
                o.inverse.clone_from(&s.inverse);
            }
        }
    }
    out
}

/// The stored two-way arrays of `stored` that `mine` (a linked type)
/// declares one-way: its writes of them keep the other side.
pub(crate) fn adopted(stored: &StoredType, mine: &StoredType) -> Vec<AdoptedInverse> {
    mine.relations
        .iter()
        .filter(|m| plain_many(m) && m.inverse.is_none())
        .filter_map(|m| {
            let s = relation(stored, &m.field).filter(|s| plain_many(s))?;
            Some(AdoptedInverse {
                collection: stored.collection.clone(),
                field: m.field.clone(),
                target: s.target.clone()?,
                inverse: s.inverse.clone()?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array(inverse: Option<&str>) -> StoredRelation {
        StoredRelation {
            field: "courses".into(),
            rust_field: "courses".into(),
            kind: StoredKind::RefMany { max: None, key: None },
            target: Some("courses".into()),
            target_type: Some("Course".into()),
            inverse: inverse.map(str::to_owned),
            on_delete: "nothing".into(),
            order: Vec::new(),
            copies: Vec::new(),
            elements: Vec::new(),
            subset: None,
            bucket: None,
            warn_above: None,
        }
    }

    fn student(inverse: Option<&str>) -> StoredType {
        StoredType {
            collection: "students".into(),
            rust_name: "Student".into(),
            module: "m".into(),
            fields: Vec::new(),
            relations: vec![array(inverse)],
            indexes: Vec::new(),
            copies: Vec::new(),
            shard_key: Vec::new(),
        }
    }

    #[test]
    fn an_inverse_declared_on_one_side_only_is_a_change_not_a_conflict() {
        let (one_way, two_way) = (student(None), student(Some("students")));
        let changes = changes_of(&one_way, &two_way);
        assert_eq!(changes.len(), 1);
        assert_eq!((changes[0].target.as_str(), changes[0].inverse.as_str()), ("courses", "students"));
        assert!(changes[0].describe().contains("`students.courses` becomes two-way with `courses.students`"));
        assert!(changes_of(&two_way, &one_way).is_empty());
        assert_eq!(as_stored(&one_way, &two_way), one_way);
        assert_eq!(as_stored(&two_way, &one_way), two_way);
        // Two different inverses stay different: that is a conflict.
        assert_eq!(as_stored(&student(Some("a")), &two_way), two_way);
        let kept = adopted(&two_way, &one_way);
        assert_eq!(kept.len(), 1);
        assert_eq!((kept[0].field.as_str(), kept[0].inverse.as_str()), ("courses", "students"));
        assert!(adopted(&one_way, &one_way).is_empty() && adopted(&two_way, &two_way).is_empty());
    }

    fn course(students: bool) -> StoredType {
        let mut r = array(Some("courses"));
        (r.field, r.rust_field, r.target) = ("students".into(), "students".into(), Some("students".into()));
        let relations = if students { vec![r] } else { Vec::new() };
        StoredType { collection: "courses".into(), rust_name: "Course".into(), relations, ..student(None) }
    }

    #[test]
    fn a_program_makes_a_two_way_array_one_way_only_by_dropping_the_other_side() {
        let stored = [student(Some("students")), course(true)];
        let gone = retirements(&stored, &[student(None), course(false)]);
        assert_eq!(gone.len(), 1);
        assert_eq!((gone[0].collection.as_str(), gone[0].inverse.as_str()), ("students", "students"));
        assert!(gone[0].describe_one_way().contains("`courses.students` is no longer kept"));
        // Declaring the other side still, or not linking its type, or
        // keeping the array two-way, retires nothing.
        assert!(retirements(&stored, &[student(None), course(true)]).is_empty());
        assert!(retirements(&stored, &[student(None)]).is_empty());
        assert!(retirements(&stored, &[student(Some("students")), course(false)]).is_empty());
        assert!(retirements(&[student(None), course(false)], &[student(None), course(false)]).is_empty());
    }
}
