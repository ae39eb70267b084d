//! Two programs' parts of one collection's schema, merged rule by rule:
//! a rule only one of them declares is added, the same rule declared
//! differently is a conflict. Rust names (of types and fields) are each
//! program's own and never conflict; stored names and rules do.

use super::form::{StoredCopy, StoredField, StoredIndex, StoredRelation, StoredType};

/// The same rule, declared differently by the stored schema and by this
/// program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The collection.
    pub collection: String,
    /// Which rule (`relation `parts``, `copy `product_name``, `shard key`).
    pub rule: String,
    /// The stored rule, as JSON.
    pub stored: String,
    /// This program's rule, as JSON.
    pub ours: String,
}

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{}`, {}: stored {} but this program declares {}",
            self.collection, self.rule, self.stored, self.ours
        )
    }
}

/// The merged type and the rules this program adds to the stored one, or
/// every conflict between them.
pub(crate) fn merge(stored: &StoredType, ours: &StoredType) -> Result<(StoredType, Vec<String>), Vec<Conflict>> {
    let mut merged = stored.clone();
    let mut added = Vec::new();
    let mut clash = Vec::new();
    let fields = linked_fields(&mut merged.fields, &ours.fields, &mut added);
    union(&mut merged.fields, &fields, |f| f.bson.clone(), field_rule, "field", &mut added, &mut clash);
    // An array made two-way on one side only is an inverse change, which
    // `docrel schema apply` publishes ([`super::inverses`]).
    let compared = super::inverses::as_stored(stored, ours);
    union(
        &mut merged.relations,
        &compared.relations,
        |r| r.field.clone(),
        relation_rule,
        "relation",
        &mut added,
        &mut clash,
    );
    union(&mut merged.copies, &ours.copies, |c| c.field.clone(), copy_rule, "copy", &mut added, &mut clash);
    union(&mut merged.indexes, &ours.indexes, index_name, index_rule, "index", &mut added, &mut clash);
    if merged.shard_key.is_empty() && !ours.shard_key.is_empty() {
        merged.shard_key = ours.shard_key.clone();
        added.push("shard key".to_owned());
    } else if !ours.shard_key.is_empty() && merged.shard_key != ours.shard_key {
        clash.push(("shard key".to_owned(), json(&merged.shard_key), json(&ours.shard_key)));
    }
    if clash.is_empty() {
        return Ok((merged, added));
    }
    let collection = &stored.collection;
    Err(clash
        .into_iter()
        .map(|(rule, s, o)| Conflict { collection: collection.clone(), rule, stored: s, ours: o })
        .collect())
}

/// Adds to `into` the rules of `ours` it lacks; a rule both hold that
/// differs (as `rule` sees it) is a clash: (which rule, stored, ours).
fn union<T: Clone + serde::Serialize>(
    into: &mut Vec<T>,
    ours: &[T],
    name: impl Fn(&T) -> String,
    rule: impl Fn(&T) -> T,
    what: &str,
    added: &mut Vec<String>,
    clash: &mut Vec<(String, String, String)>,
) {
    for o in ours {
        let n = name(o);
        match into.iter().find(|s| name(s) == n) {
            None => {
                into.push(o.clone());
                added.push(format!("{what} `{n}`"));
            }
            Some(s) => {
                let (s, o) = (json(&rule(s)), json(&rule(o)));
                if s != o {
                    clash.push((format!("{what} `{n}`"), s, o));
                }
            }
        }
    }
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|e| format!("<{e}>"))
}

/// `ours` fields, where a plain field declares no rule: one program's
/// reference on a field the other declares plain is the field's rule (as a
/// relation only one program declares is), not a clash, so a program that
/// does not follow a reference, or a version adding one to an existing
/// field, publishes. A stored plain field `ours` makes a reference becomes it.
fn linked_fields(stored: &mut [StoredField], ours: &[StoredField], added: &mut Vec<String>) -> Vec<StoredField> {
    const PLAIN: &str = "plain";
    let mut out = ours.to_vec();
    for o in &mut out {
        match stored.iter_mut().find(|s| s.bson == o.bson) {
            Some(s) if o.kind == PLAIN && s.kind != PLAIN => *o = s.clone(),
            Some(s) if s.kind == PLAIN && o.kind != PLAIN => {
                *s = o.clone();
                added.push(format!("field `{}`", o.bson));
            }
            _ => {}
        }
    }
    out
}

/// A field as a rule: its stored name, kind and target.
fn field_rule(f: &StoredField) -> StoredField {
    StoredField { rust: String::new(), rust_type: String::new(), ..f.clone() }
}

/// A relationship as a rule: without the Rust names, and without its
/// bound: a bound declared differently is a bound change, which the stored
/// schema keeps until `docrel schema apply` ([`super::bounds`]).
fn relation_rule(r: &StoredRelation) -> StoredRelation {
    let mut r = r.clone();
    r.rust_field.clear();
    super::bounds::unbounded(&mut r.kind);
    r.target_type = None;
    if let Some(s) = r.subset.as_mut() {
        s.child_type.clear();
    }
    for c in &mut r.copies {
        c.source_type.clear();
    }
    for e in &mut r.elements {
        e.rust_field.clear();
        e.target_type.clear();
        for c in &mut e.copies {
            c.source_type.clear();
        }
    }
    r
}

fn copy_rule(c: &StoredCopy) -> StoredCopy {
    StoredCopy { source_type: String::new(), ..c.clone() }
}

fn index_name(i: &StoredIndex) -> String {
    let keys = i.keys.iter().map(|(f, d)| format!("{f}_{d}"));
    keys.chain(i.text.iter().map(|(f, _)| format!("{f}_text"))).collect::<Vec<_>>().join("_")
}

fn index_rule(i: &StoredIndex) -> StoredIndex {
    i.clone()
}

#[cfg(test)]
mod tests {
    use super::{merge, StoredField, StoredType};

    fn task(kind: &str, target: Option<&str>) -> StoredType {
        let owner = StoredField {
            rust: "owner".into(),
            bson: "owner".into(),
            rust_type: "Option<ObjectId>".into(),
            kind: kind.into(),
            target: target.map(Into::into),
        };
        StoredType {
            collection: "tasks".into(),
            rust_name: "Task".into(),
            module: "m".into(),
            fields: vec![owner],
            relations: Vec::new(),
            indexes: Vec::new(),
            copies: Vec::new(),
            shard_key: Vec::new(),
        }
    }

    #[test]
    fn a_plain_field_declares_no_rule_and_a_reference_on_it_is_added() {
        let (plain, reference) = (task("plain", None), task("one", Some("people")));
        let (merged, added) = merge(&reference, &plain).expect("a plain field over a reference");
        assert_eq!((merged.fields[0].kind.as_str(), added.len()), ("one", 0));
        let (merged, added) = merge(&plain, &reference).expect("a reference over a plain field");
        assert_eq!((merged.fields[0].kind.as_str(), added), ("one", vec!["field `owner`".to_owned()]));
        assert!(merge(&reference, &task("one", Some("teams"))).is_err(), "two targets still clash");
    }
}
