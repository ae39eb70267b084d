//! The doctor: the rules of thumb of the reference texts checked against
//! the live data, for every declared relationship.
//!
//! The compiler already warns about a schema that goes against the rules;
//! but the rules are about data that grows ("more than a couple of
//! hundred", "a few thousand", "a high ratio of reads to updates"), and
//! only the data can say whether an array declared `max = 2000` is now at
//! a p99 of 1,900. The doctor measures, per collection of the program:
//!
//! - the length of every `#[embed]`, `#[reference(many)]`, subset and
//!   bucket array: p50, p99, max, a histogram, and the mean length by age
//!   of the documents (oldest to newest quarter, where `_id` is an
//!   ObjectId and so carries its creation time), against the declared
//!   bound and the field's rule-3 threshold: its `warn_above`, else
//!   [`EMBED_WARN_ABOVE`] or [`REFERENCE_WARN_ABOVE`], the numbers the
//!   compile-time advice uses (the schema carries each field's);
//! - document sizes: p50, p99, max against 16 MiB, naming the largest
//!   field of the largest document;
//! - rule 5, for every denormalized copy: writes of the source against
//!   reads of the documents holding the copy, from the profiler when it is
//!   on for the database, else from the server's `top` counters, saying
//!   which (see [`CopyUse::measured_from`]);
//! - the balance of N:M two-way references: each side's measured lengths
//!   against its bound and [`TWO_WAY_WARN_FROM`];
//! - dangling references and orphan children (parent references to
//!   parents that do not exist), counted;
//! - indexes the relationships need but lack, and declared ones that
//!   `$indexStats` says were never used (where the server tracks it).
//!
//! Each problem is a [`Finding`] naming the rule, the field, the figure
//! and the fix, with a [`Severity`]. A finding on a field whose attribute
//! acknowledged the rule (`allow_large`, `allow_unbounded`,
//! `allow_two_way`) keeps its severity and says so: the acknowledgement
//! was about the declared shape, the finding is about the data.
//!
//! The doctor reads (`measure`), judges with pure rules from the figures
//! and the schema (`rules`, `declared`), and renders
//! ([`DoctorReport::to_text`], [`doctor_page`]).
//!
//! # Bounded time
//!
//! A collection of more than [`Options::sample`] documents (10,000 by
//! default) is read through `$sample` of that many, and the report says
//! so per collection; smaller ones are read whole. Only lengths and sizes
//! travel (computed by the server with `$size` and `$bsonSize`), plus the
//! referenced ids for the dangling check (at most [`Options::max_ids`] per
//! reference, checked with `$in` reads of 500).

mod declared;
mod measure;
pub(crate) use measure::as_u64;
pub mod page;
mod report;
mod rules;
mod text;

pub use crate::schema::document::{EMBED_WARN_ABOVE, REFERENCE_WARN_ABOVE, TWO_WAY_WARN_FROM};
pub use page::doctor_page;
#[cfg(feature = "admin")]
pub(crate) use page::doctor_page_of;
pub use report::{
    ArrayStat, BalanceStat, Bin, CopyUse, Coverage, Distribution, DoctorReport, Finding, IndexStat, Options, RefStat,
    Severity, SizeStat, LOG2_FIRST,
};
pub use rules::MIN_WRITES;

use crate::error::Result;
use crate::schema::document::Schema;
use mongodb::bson;
use mongodb::Database;

/// Runs the doctor on `db`.
///
/// ```
/// # docrel::testing::doc_test(|db| async move {
/// # use docrel::{Document, bson::{doc, oid::ObjectId}};
/// # use serde::{Deserialize, Serialize};
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "patrons")]
/// struct Patron {
///     #[serde(rename = "_id")] id: i32,
///     #[embed(max = 3)] addresses: Vec<String>,
/// }
/// // Written behind docrel's back: 5 addresses where 3 are allowed.
/// db.collection("patrons").insert_one(doc! {"_id": 1, "addresses": ["a", "b", "c", "d", "e"]}).await.unwrap();
///
/// use docrel::admin::doctor::{run, Options, Severity};
/// let report = run(&db, &Options::default()).await?;
/// let bound = report.findings.iter().find(|f| f.field == "patrons.addresses").unwrap();
/// assert_eq!((bound.severity, bound.rule.as_str()), (Severity::Error, "bound"));
/// assert!(report.to_text().contains("patrons.addresses"));
/// # Ok(()) });
/// ```
pub async fn run(db: &Database, options: &Options) -> Result<DoctorReport> {
    let mut report = DoctorReport {
        database: db.name().to_owned(),
        at: bson::DateTime::now().try_to_rfc3339_string().unwrap_or_default(),
        sample_limit: options.sample,
        notes: vec![format!(
            "collections above {} documents are read through `$sample` of that many; smaller ones are read whole \
             (each figure says which). Only lengths and sizes travel, computed by the server",
            text::group(options.sample)
        )],
        arrays: Vec::new(),
        sizes: Vec::new(),
        copies: Vec::new(),
        balance: Vec::new(),
        references: Vec::new(),
        indexes: Vec::new(),
        findings: Vec::new(),
    };
    let existing = crate::admin::index_plan::existing_collections(db).await?;
    // Rule 5 first: the doctor's own reads must not count as reads of the copies.
    rule_five(db, &existing, &mut report).await?;
    let (present, skipped): (Vec<_>, Vec<_>) = declared::collections(crate::schema::graph::of(db))
        .into_iter()
        .partition(|(c, _)| existing.iter().any(|e| e == c));
    for (collection, types) in &present {
        shape(db, options, collection, types, &mut report).await?;
        for stat in measure::references(db, options, collection, types).await? {
            report.findings.extend(rules::reference(&stat));
            report.references.push(stat);
        }
    }
    indexes(db, present.iter().map(|(c, _)| *c), &mut report).await?;
    if !skipped.is_empty() {
        let names: Vec<&str> = skipped.iter().map(|(c, _)| *c).collect();
        report.notes.push(format!("collections of the schema that do not exist yet, skipped: [{}]", names.join(", ")));
    }
    for (pair, sides) in declared::balance_pairs(crate::schema::graph::of(db)) {
        if let Some((stat, findings)) = rules::balance(&pair, &sides, &report.arrays) {
            report.findings.extend(findings);
            report.balance.push(stat);
        }
    }
    rules::worst_first(&mut report.findings);
    Ok(report)
}

/// Rule 5: writes of each copied source against reads of its holders.
async fn rule_five(db: &Database, existing: &[String], report: &mut DoctorReport) -> Result<()> {
    let (copies, notes) = measure::copies(db, declared::copies(crate::schema::graph::of(db), existing)).await?;
    report.notes.extend(notes);
    for c in copies {
        report.findings.extend(rules::copy(&c));
        report.copies.push(c);
    }
    Ok(())
}

/// Document sizes and array lengths of one collection, judged.
async fn shape(
    db: &Database,
    options: &Options,
    collection: &str,
    types: &[&'static Schema],
    report: &mut DoctorReport,
) -> Result<()> {
    let fields = declared::array_fields(types);
    let Some((sizes, arrays)) = measure::shape(db, options, collection, &fields).await? else {
        return Ok(());
    };
    report.findings.extend(rules::size(&sizes));
    report.sizes.push(sizes);
    for (field, stat) in arrays {
        report.findings.extend(rules::array(&stat, field.acknowledged));
        report.arrays.push(stat);
    }
    Ok(())
}

/// The indexes the relationships need, judged, and what `$indexStats` could tell.
async fn indexes(
    db: &Database,
    collections: impl Iterator<Item = &'static str>,
    report: &mut DoctorReport,
) -> Result<()> {
    let (indexes, tracked, untracked) = measure::indexes(db, collections).await?;
    for read in indexes {
        let (stat, finding) = rules::index(read.collection, read.keys, read.unique, read.present);
        report.findings.extend(finding);
        report.indexes.push(stat);
    }
    report.notes.push(rules::index_note(tracked, untracked));
    Ok(())
}
