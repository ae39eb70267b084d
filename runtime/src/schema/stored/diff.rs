//! What publishing a program's schema would change in a database's stored
//! one: the collections and rules it adds, the data those rules need
//! before they can be relied on (backfills), and the rules it declares
//! differently (conflicts, which a publish refuses).

use super::form::{StoredRelation, StoredType};
use super::merge::{merge, Conflict};
use serde::{Deserialize, Serialize};

/// The difference between a program's schema and the stored one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diff {
    /// Collections the stored schema does not have.
    pub added_collections: Vec<String>,
    /// Rules added to collections it has: (collection, rule).
    pub added_rules: Vec<(String, String)>,
    /// The data the added rules need written before they hold: one line
    /// each, with the repair that writes it.
    pub backfills: Vec<String>,
    /// The collections whose repair writes the backfills, once the rules
    /// are published.
    pub repairs: Vec<String>,
    /// Bounds the program declares differently: a publish keeps the stored
    /// one, and `docrel schema apply` publishes the program's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bounds: Vec<super::bounds::BoundChange>,
    /// Arrays the program makes two-way: a publish keeps them one-way, and
    /// `docrel schema apply` publishes and builds their inverses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inverses: Vec<super::inverses::InverseChange>,
    /// Two-way arrays the program makes one-way: `docrel schema retire`
    /// takes the other side out once no running program declares it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub one_way: Vec<super::inverses::InverseChange>,
    /// Rules the program declares differently (a publish refuses them).
    #[serde(serialize_with = "conflicts_as_text", skip_deserializing)]
    pub conflicts: Vec<Conflict>,
}

fn conflicts_as_text<S: serde::Serializer>(c: &[Conflict], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(c.iter().map(ToString::to_string))
}

impl Diff {
    /// Whether publishing would change anything (or be refused).
    pub fn has_changes(&self) -> bool {
        !(self.added_collections.is_empty()
            && self.added_rules.is_empty()
            && self.bounds.is_empty()
            && self.inverses.is_empty()
            && self.one_way.is_empty()
            && self.conflicts.is_empty())
    }

    /// The diff in words, one line each.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for c in &self.added_collections {
            out.push_str(&format!("+ collection `{c}`\n"));
        }
        for (c, rule) in &self.added_rules {
            out.push_str(&format!("+ `{c}`: {rule}\n"));
        }
        for b in &self.backfills {
            out.push_str(&format!("backfill: {b}\n"));
        }
        for b in &self.bounds {
            out.push_str(&format!("bound: {}\n", b.describe()));
        }
        for i in &self.inverses {
            out.push_str(&format!("inverse: {}\n", i.describe()));
        }
        for i in &self.one_way {
            out.push_str(&format!("inverse: {}\n", i.describe_one_way()));
        }
        for c in &self.conflicts {
            out.push_str(&format!("conflict: {c}\n"));
        }
        if out.is_empty() {
            out.push_str("no change: the stored schema already holds every rule of this program\n");
        }
        out
    }
}

/// What publishing `program` over `stored` would change.
pub fn diff(stored: &[StoredType], program: &[StoredType]) -> Diff {
    diff_building(stored, program, None)
}

/// [`diff`], whose backfills leave out the two-way pairs of `building`
/// (the diff's own inverse changes when `None`): a change builds those.
pub(crate) fn diff_building(
    stored: &[StoredType],
    program: &[StoredType],
    building: Option<&[super::inverses::InverseChange]>,
) -> Diff {
    let mut d = Diff { one_way: super::inverses::retirements(stored, program), ..Diff::default() };
    for t in program {
        if let Some(s) = stored.iter().find(|s| s.collection == t.collection) {
            d.inverses.extend(super::inverses::changes_of(s, t));
        }
    }
    // The other sides of arrays made two-way are built by the change from
    // the arrays, in transactions; a repair, which reads and fixes apart,
    // could undo a link written between the two.
    let building = building.map_or_else(|| d.inverses.clone(), <[_]>::to_vec);
    for t in program {
        let Some(s) = stored.iter().find(|s| s.collection == t.collection) else {
            d.added_collections.push(t.collection.clone());
            backfills_of(t, &t.relations, &t.copies.iter().collect::<Vec<_>>(), &building, &mut d);
            continue;
        };
        d.bounds.extend(super::bounds::changes_of(s, t));
        match merge(s, t) {
            Err(conflicts) => d.conflicts.extend(conflicts),
            Ok((_, added)) => d.added_rules.extend(added.into_iter().map(|r| (t.collection.clone(), r))),
        }
        let relations: Vec<StoredRelation> =
            t.relations.iter().filter(|r| !s.relations.iter().any(|o| o.field == r.field)).cloned().collect();
        let copies: Vec<_> = t.copies.iter().filter(|c| !s.copies.iter().any(|o| o.field == c.field)).collect();
        backfills_of(t, &relations, &copies, &building, &mut d);
    }
    d.repairs.sort();
    d.repairs.dedup();
    d
}

/// The backfills new rules of `t` need: copies filled from their sources,
/// subsets built from their children, the sides of two-way references
/// agreeing (but for those `building` builds).
fn backfills_of(
    t: &StoredType,
    relations: &[StoredRelation],
    copies: &[&super::form::StoredCopy],
    building: &[super::inverses::InverseChange],
    d: &mut Diff,
) {
    for c in copies {
        d.repairs.push(c.source.clone());
        d.backfills.push(format!(
            "`{}.{}` copies `{}.{}`: `docrel repair {}` fills it",
            t.collection, c.field, c.source, c.source_field, c.source
        ));
    }
    for r in relations {
        for c in &r.copies {
            d.repairs.push(c.source.clone());
            d.backfills.push(format!(
                "`{}.{}[].{}` copies `{}.{}`: `docrel repair {}` fills it",
                t.collection, r.field, c.field, c.source, c.source_field, c.source
            ));
        }
        for e in &r.elements {
            for c in &e.copies {
                d.repairs.push(c.source.clone());
                d.backfills.push(format!(
                    "`{}.{}[].{}` copies `{}.{}` through `{}`: `docrel repair {}` fills it",
                    t.collection, r.field, c.field, c.source, c.source_field, e.field, c.source
                ));
            }
        }
        let built = building.iter().any(|c| c.has_end(&t.collection, &r.field));
        if let (Some(target), Some(inverse), false) = (&r.target, &r.inverse, built) {
            d.repairs.push(t.collection.clone());
            d.backfills.push(format!(
                "`{}.{}` is two-way with `{target}.{inverse}`: `docrel repair {}` makes the sides agree",
                t.collection, r.field, t.collection
            ));
        }
        if let Some(sub) = &r.subset {
            d.repairs.push(sub.child.clone());
            d.backfills.push(format!(
                "`{}.{}` keeps a subset of `{}`: `docrel repair {}` builds it",
                t.collection, r.field, sub.child, sub.child
            ));
        }
    }
}
