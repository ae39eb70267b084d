//! What the schema declares that the doctor checks the data against: the
//! arrays of each collection with their bounds and rule-3 thresholds, the
//! denormalized copies, the two-way N:M pairs, and what the attributes
//! acknowledge. The numbers are the derive's own (each relation carries
//! its effective `warn_above`), so the compile-time advice and the doctor
//! draw the line at one place.

use crate::relations::inverse_check::{pairs_in, Shape as PairShape, Side};
use crate::schema::document::{RelationKind, Schema, TWO_WAY_WARN_FROM};
use crate::schema::graph::{Graph, Shape};
use crate::schema::pattern::Pattern;
use std::collections::BTreeMap;

/// One array relation of a collection, as the doctor measures it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ArrayField {
    /// The stored name.
    pub field: &'static str,
    /// The Rust names of the type and field declaring it, for the
    /// attribute a finding names.
    pub rust: (&'static str, &'static str),
    /// Its pattern (one that keeps an array).
    pub kind: Pattern,
    /// The declared bound (`max`, or a bucket's `size`).
    pub max: Option<u64>,
    /// Rule 3's threshold, as the derive computed it (`warn_above` or the default).
    pub threshold: Option<u64>,
    /// The `allow_..` key that acknowledges rule 3 on it at compile time.
    pub acknowledged: Option<&'static str>,
}

/// The collections of the program, each with the types stored in it.
pub(super) fn collections(g: &'static Graph) -> BTreeMap<&'static str, Vec<&'static Schema>> {
    let mut out: BTreeMap<&'static str, Vec<&'static Schema>> = BTreeMap::new();
    for s in g.types() {
        out.entry(s.collection).or_default().push(s);
    }
    out
}

/// The array relations of the types of one collection, each field once.
pub(super) fn array_fields(types: &[&'static Schema]) -> Vec<ArrayField> {
    let mut fields: Vec<ArrayField> = Vec::new();
    for s in types {
        for f in s.relations.iter().filter_map(|rel| array_field(s, rel)) {
            if !fields.iter().any(|x| x.field == f.field) {
                fields.push(f);
            }
        }
    }
    fields
}

fn array_field(schema: &Schema, rel: &crate::schema::document::Relation) -> Option<ArrayField> {
    // A counter holds no array: nothing of rule 3 to measure.
    let kind = rel.pattern();
    if !kind.is_array() {
        return None;
    }
    let max = match rel.kind {
        RelationKind::Embed { max, .. } | RelationKind::RefMany { max, .. } => max,
        _ => rel.bucket.as_ref().and_then(|b| b.size),
    };
    let rule_3 = ["docrel_rule_3_large_embed", "docrel_rule_3_large_references"];
    let unbounded = ["docrel_rule_3_unbounded_embed", "docrel_rule_3_unbounded_references"];
    let acknowledged = acknowledged(schema, rel.rust_field, &rule_3)
        .map(|_| "allow_large")
        .or_else(|| acknowledged(schema, rel.rust_field, &unbounded).map(|_| "allow_unbounded"));
    Some(ArrayField {
        field: rel.field,
        rust: (schema.rust_name, rel.rust_field),
        kind,
        max: max.map(u64::from),
        threshold: rel.warn_above.map(u64::from),
        acknowledged,
    })
}

/// The first of `rules` that applies to `rust_field` of `schema` and that
/// its attribute acknowledges.
fn acknowledged(schema: &Schema, rust_field: &str, rules: &[&str]) -> Option<&'static str> {
    schema
        .advice
        .iter()
        .find(|a| a.field == rust_field && a.acknowledged && rules.contains(&a.rule) && (a.applies)())
        .map(|a| a.rule)
}

/// One denormalized copy whose source or holder exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct DeclaredCopy {
    /// The source collection.
    pub source: &'static str,
    /// The copied source fields.
    pub fields: Vec<&'static str>,
    /// Where the copies sit (`products.parts[].name`).
    pub copy: String,
    /// The holder collection.
    pub holder: &'static str,
}

/// The copies rule 5 weighs, among the collections that exist.
pub(super) fn copies(g: &'static Graph, existing: &[String]) -> Vec<DeclaredCopy> {
    let mut out = Vec::new();
    for source in g.sources() {
        for t in g.targets_of(source) {
            if !existing.iter().any(|c| c == source || c == t.collection) {
                continue;
            }
            let names: Vec<&str> = t.fields.iter().map(|(c, _)| *c).collect();
            let copy = match t.shape {
                Shape::Top { .. } => format!("{}.{}", t.collection, names.join(",")),
                Shape::Array { array, .. } => format!("{}.{array}[].{}", t.collection, names.join(",")),
            };
            out.push(DeclaredCopy { source, fields: t.source_fields().collect(), copy, holder: t.collection });
        }
    }
    out
}

/// One side of a two-way N:M reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct BalanceSide {
    /// The collection.
    pub collection: &'static str,
    /// The stored field.
    pub field: &'static str,
    /// `collection.field`.
    pub label: String,
    /// The declared bound.
    pub declared: Option<u64>,
    /// From how many ids a side is out of balance.
    pub threshold: u64,
    /// Whether `allow_two_way` acknowledges it at compile time.
    pub acknowledged: bool,
}

/// The two-way N:M references: the label of each pair and its two sides.
pub(super) fn balance_pairs(g: &'static Graph) -> Vec<(String, [BalanceSide; 2])> {
    let side = |s: &Side| BalanceSide {
        collection: s.collection(),
        field: s.rel.field,
        label: s.label(),
        declared: match s.rel.kind {
            RelationKind::RefMany { max, .. } => max.map(u64::from),
            _ => None,
        },
        threshold: u64::from(TWO_WAY_WARN_FROM),
        acknowledged: acknowledged(s.schema, s.rel.rust_field, &["docrel_relationship_balance"]).is_some(),
    };
    pairs_in(g)
        .into_iter()
        .filter(|p| p.shape == PairShape::ManyToMany)
        .map(|p| (p.label(), [side(&p.a), side(&p.b)]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::document::{Advice, Relation, EMBED_WARN_ABOVE};
    use crate::schema::entries::embed_relation;

    /// An embed as its derive describes it (`Embed { many, max }`).
    const fn relation(field: &'static str, kind: RelationKind, warn_above: Option<u32>) -> Relation {
        let RelationKind::Embed { many, max } = kind else { panic!("an embed") };
        embed_relation(field, field, many, max, &[], warn_above)
    }

    /// `#[embed(max = 100, warn_above = 50)] notes`, `#[embed(max = 1000, allow_large)] log`,
    /// `#[embed] tags` (the default threshold), and a single embed.
    static JOURNAL: Schema = Schema {
        rust_name: "Journal",
        module: "tests",
        collection: "journals",
        fields: &[],
        relations: &[
            relation("notes", RelationKind::Embed { many: true, max: Some(100) }, Some(50)),
            relation("log", RelationKind::Embed { many: true, max: Some(1000) }, Some(EMBED_WARN_ABOVE)),
            relation("tags", RelationKind::Embed { many: true, max: None }, Some(EMBED_WARN_ABOVE)),
            relation("cover", RelationKind::Embed { many: false, max: None }, None),
        ],
        indexes: &[],
        copies: &[],
        advice: &[Advice {
            rule: "docrel_rule_3_large_embed",
            field: "log",
            note: "",
            acknowledged: true,
            applies: || true,
        }],
        shard_key: &[],
    };

    #[test]
    fn each_array_is_measured_against_the_threshold_its_schema_carries() {
        let fields = array_fields(&[&JOURNAL, &JOURNAL]);
        let found: Vec<_> = fields.iter().map(|f| (f.field, f.max, f.threshold, f.acknowledged)).collect();
        assert_eq!(
            found,
            [
                ("notes", Some(100), Some(50), None),
                ("log", Some(1000), Some(200), Some("allow_large")),
                ("tags", None, Some(200), None),
            ],
            "each field once, a single embed not at all"
        );
    }
}
