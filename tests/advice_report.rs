//! The schema advice at runtime: the registry tells, per document type, its
//! relationships and bounds, and which rules its attributes were warned
//! about or acknowledged.

use docrel::bson::oid::ObjectId;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    #[document(write_heavy)]
    qty: i32,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "kits")]
struct Kit {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[embed(max = 5, allow_document)]
    parts: Vec<Part>,
    #[embed(max = 1000, allow_large)]
    log: Vec<String>,
    #[reference(many, to = Part, max = 100, on_delete = pull)]
    spares: Vec<ObjectId>,
    #[reference(to = Part)]
    part: ObjectId,
    #[denormalize(from = Part::name, via = part)]
    part_name: String,
}

#[test]
fn the_registry_reports_relationships_bounds_and_advice() {
    let report = docrel::schema::registry::advice_report();
    let kit: Vec<&str> = report
        .lines()
        .skip_while(|l| !l.starts_with("Kit (`kits`)"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert_eq!(
        kit,
        [
            "  parts: embed, max 5",
            "  log: embed, max 1000",
            "  spares: references to Part, max 100, on_delete pull",
            "  part: reference to Part",
            "  part_name: copy of Part::name via `part`",
            "  ! docrel_rule_2_embedded_document on `parts`: acknowledged",
            "  ! docrel_rule_3_large_embed on `log`: acknowledged",
        ]
    );
    // Advice that does not apply (the copied `name` is not write-heavy) is not listed.
    assert!(!report.contains("docrel_rule_5"));
    let _ = (Kit::fields(), Part::fields());
}
