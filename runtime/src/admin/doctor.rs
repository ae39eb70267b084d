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
//!   bound and the rule-3 thresholds ([`EMBED_THRESHOLD`],
//!   [`REFERENCE_THRESHOLD`]);
//! - document sizes: p50, p99, max against 16 MiB, naming the largest
//!   field of the largest document;
//! - rule 5, for every denormalized copy: writes of the source against
//!   reads of the documents holding the copy, from the profiler when it is
//!   on for the database, else from the server's `top` counters, saying
//!   which (see [`CopyUse::measured_from`]);
//! - the balance of N:M two-way references: each side's measured lengths
//!   against its bound and [`BALANCE_THRESHOLD`];
//! - dangling references and orphan children (parent references to
//!   parents that do not exist), counted;
//! - indexes the relationships need but lack, and declared ones that
//!   `$indexStats` says were never used (where the server tracks it).
//!
//! Each problem is a [`Finding`] naming the rule, the field, the figure
//! and the fix, with a [`Severity`].
//!
//! # Bounded time
//!
//! A collection of more than [`Options::sample`] documents (10,000 by
//! default) is read through `$sample` of that many, and the report says
//! so per collection; smaller ones are read whole. Only lengths and sizes
//! travel (computed by the server with `$size` and `$bsonSize`), plus the
//! referenced ids for the dangling check (at most [`Options::max_ids`] per
//! reference, checked with `$in` reads of 500).

use crate::bson_compat;
use crate::denormalize::fanout::targets_of;
use crate::error::{show_id, Error, Result, MAX_DOCUMENT_BYTES};
use crate::relations::inverse_check::{pairs, Shape as PairShape};
use crate::schema::document::{Relation, RelationKind, Schema};
use crate::schema::graph::{graph, Shape};
use crate::schema::indexes::needed_by;
use crate::schema::registry::sorted;
use mongodb::bson::{self, doc, Bson, Document as BsonDoc};
use mongodb::Database;
use serde::Serialize;
use std::collections::BTreeMap;

/// Rule 3 for embedded arrays: "a couple of hundred" at most.
pub const EMBED_THRESHOLD: u64 = 200;
/// Rule 3 for arrays of references: "a few thousand" at most (the
/// compile-time warning's 5,000).
pub const REFERENCE_THRESHOLD: u64 = 5000;
/// An N:M side holding this many ids is better kept one-way (the
/// compile-time `docrel_relationship_balance` warning's 1,000).
pub const BALANCE_THRESHOLD: u64 = 1000;
/// Rule 5 says nothing below this many writes of a source: too little to judge.
pub const MIN_WRITES: u64 = 10;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; nothing to do yet.
    Info,
    /// Against a rule of thumb: plan the fix.
    Warning,
    /// Wrong now (a bound passed, a unique index missing): fix it.
    Error,
}

impl Severity {
    /// `info`, `warning`, `error`.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl std::str::FromStr for Severity {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "info" => Ok(Severity::Info),
            "warning" | "warn" => Ok(Severity::Warning),
            "error" => Ok(Severity::Error),
            other => Err(Error::Invalid {
                what: crate::error::Misuse::Severity,
                message: format!("`{other}` is not a severity: use info, warning or error"),
            }),
        }
    }
}

/// One problem the doctor found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// How bad it is.
    pub severity: Severity,
    /// The rule (`rule 3`, `rule 5`, `16 MiB`, `balance`, `dangling`, `orphans`, `index`, `bound`).
    pub rule: String,
    /// The field or collection (`hosts.logmsgs`).
    pub field: String,
    /// What was measured (`max 250 elements, p99 250; rule 3: a couple of hundred`).
    pub figure: String,
    /// What to do.
    pub fix: String,
}

/// A histogram bin: values in `[lo, hi]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bin {
    /// Lowest value of the bin.
    pub lo: u64,
    /// Highest value of the bin.
    pub hi: u64,
    /// How many values fell in it.
    pub count: u64,
}

/// The distribution of a measured value.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Distribution {
    /// How many values.
    pub n: u64,
    /// Median.
    pub p50: u64,
    /// 99th percentile (nearest rank).
    pub p99: u64,
    /// Largest.
    pub max: u64,
    /// Up to 10 bins of equal width from 0 to `top`.
    pub histogram: Vec<Bin>,
}

impl Distribution {
    /// The distribution of `values`, binned from 0 up to `top` (at least the max).
    pub fn of(mut values: Vec<u64>, top: u64) -> Self {
        values.sort_unstable();
        let n = values.len() as u64;
        if n == 0 {
            return Distribution::default();
        }
        let rank = |p: f64| values[((p * n as f64).ceil() as usize).clamp(1, values.len()) - 1];
        let max = *values.last().unwrap_or(&0);
        let top = top.max(max).max(1);
        let bins = 10u64.min(top + 1);
        let width = (top + 1).div_ceil(bins);
        let mut histogram: Vec<Bin> =
            (0..bins).map(|i| Bin { lo: i * width, hi: ((i + 1) * width - 1).min(top), count: 0 }).collect();
        for v in &values {
            let i = ((v / width) as usize).min(histogram.len() - 1);
            histogram[i].count += 1;
        }
        histogram.retain(|b| b.lo <= top);
        Distribution { n, p50: rank(0.5), p99: rank(0.99), max, histogram }
    }
}

/// How a collection was read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Coverage {
    /// Documents in the collection.
    pub documents: u64,
    /// Documents read.
    pub read: u64,
    /// Whether they were a `$sample`.
    pub sampled: bool,
}

impl Coverage {
    /// `all 120 documents` / `$sample of 10,000 of 1,234,567 documents`
    pub fn describe(&self) -> String {
        if self.sampled {
            format!("$sample of {} of {} documents", self.read, self.documents)
        } else {
            format!("all {} documents", self.read)
        }
    }
}

/// The lengths of one array field.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArrayStat {
    /// The collection.
    pub collection: String,
    /// The array.
    pub field: String,
    /// `embed`, `references`, `subset` or `bucket`.
    pub kind: String,
    /// The declared bound (`max`, or a bucket's `size`).
    pub declared_max: Option<u64>,
    /// The rule-3 threshold that applies.
    pub threshold: Option<u64>,
    /// How the collection was read.
    pub coverage: Coverage,
    /// The lengths (documents holding the array).
    pub lengths: Distribution,
    /// Mean length by age of the documents, oldest quarter first (where
    /// `_id` carries a creation time and at least 8 documents hold the array).
    pub trend: Option<Vec<f64>>,
}

/// The sizes of a collection's documents.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeStat {
    /// The collection.
    pub collection: String,
    /// How it was read.
    pub coverage: Coverage,
    /// BSON sizes in bytes.
    pub bytes: Distribution,
    /// The largest document read: its `_id`.
    pub largest_id: Option<String>,
    /// Its largest top-level field, and that field's size in bytes.
    pub largest_field: Option<(String, u64)>,
    /// Sizes counted by power of two: entry `i` counts documents of
    /// `2^(LOG2_FIRST + i)` bytes up to the next power (first and last
    /// entries also take what is below and above), up to 16 MiB.
    pub log2_counts: Vec<u64>,
}

/// The first power of two of [`SizeStat::log2_counts`]: 32 bytes.
pub const LOG2_FIRST: u32 = 5;

fn log2_counts(sizes: &[u64]) -> Vec<u64> {
    let last = 24; // 16 MiB
    let mut counts = vec![0u64; (last - LOG2_FIRST) as usize];
    for s in sizes {
        let k = (63 - s.max(&1).leading_zeros()).clamp(LOG2_FIRST, last - 1);
        counts[(k - LOG2_FIRST) as usize] += 1;
    }
    counts
}

/// Rule 5 for one denormalized copy: writes of its source, reads of its holders.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CopyUse {
    /// The source collection.
    pub source: String,
    /// The copied source fields.
    pub fields: Vec<String>,
    /// The holder collection and where the copies sit (`products.parts[].name`).
    pub copy: String,
    /// The holder collection.
    pub holder: String,
    /// Writes of the source counted (`None`: not measurable).
    pub writes: Option<u64>,
    /// Reads of the holders counted.
    pub reads: Option<u64>,
    /// Where the figures come from, in words.
    pub measured_from: String,
}

/// The two sides of an N:M two-way reference, measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BalanceStat {
    /// `authors.books <-> books.authors`
    pub pair: String,
    /// Per side: `(collection.field, declared max, p99, max)`.
    pub sides: Vec<(String, Option<u64>, u64, u64)>,
}

/// References of one field checked for targets that exist.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RefStat {
    /// The collection holding the references.
    pub collection: String,
    /// The field.
    pub field: String,
    /// The collection referred to.
    pub target: String,
    /// `dangling` (references) or `orphans` (parent references).
    pub kind: String,
    /// How the holding collection was read.
    pub coverage: Coverage,
    /// Distinct ids checked.
    pub ids_checked: u64,
    /// Ids whose document does not exist.
    pub missing_ids: u64,
    /// Documents holding at least one of them.
    pub documents: u64,
    /// A few of the missing ids.
    pub examples: Vec<String>,
}

/// One index, declared or present.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IndexStat {
    /// The collection.
    pub collection: String,
    /// `{parts.id: 1}`
    pub keys: String,
    /// Whether it is (or must be) unique.
    pub unique: bool,
    /// `ok`, `missing`, `not unique`, `unused`.
    pub state: String,
    /// Uses counted by `$indexStats`, where the server tracks them.
    pub uses: Option<u64>,
}

/// Everything the doctor measured and found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DoctorReport {
    /// The database examined.
    pub database: String,
    /// When.
    pub at: String,
    /// Collections above this many documents were sampled.
    pub sample_limit: u64,
    /// What the server could and could not tell, and how each figure was had.
    pub notes: Vec<String>,
    /// Array lengths.
    pub arrays: Vec<ArrayStat>,
    /// Document sizes.
    pub sizes: Vec<SizeStat>,
    /// Rule 5.
    pub copies: Vec<CopyUse>,
    /// N:M balance.
    pub balance: Vec<BalanceStat>,
    /// Dangling references and orphans.
    pub references: Vec<RefStat>,
    /// Indexes.
    pub indexes: Vec<IndexStat>,
    /// The findings, worst first.
    pub findings: Vec<Finding>,
}

/// What the doctor reads.
#[derive(Debug, Clone)]
pub struct Options {
    /// Collections above this many documents are read through `$sample`
    /// of this many (10,000).
    pub sample: u64,
    /// At most this many distinct ids per reference are checked for
    /// existence (20,000).
    pub max_ids: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options { sample: 10_000, max_ids: 20_000 }
    }
}

impl DoctorReport {
    /// The worst severity found, if any finding.
    pub fn worst(&self) -> Option<Severity> {
        self.findings.iter().map(|f| f.severity).max()
    }

    /// How many findings are at `severity` or worse.
    pub fn at_least(&self, severity: Severity) -> usize {
        self.findings.iter().filter(|f| f.severity >= severity).count()
    }

    /// The report as JSON (pretty-printed), for CI.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// The report as text for a terminal.
    pub fn to_text(&self) -> String {
        let mut out = format!("docrel doctor: database `{}`, {}\n", self.database, self.at);
        let count = |s: Severity| self.findings.iter().filter(|f| f.severity == s).count();
        out.push_str(&format!(
            "\nFindings: {} error(s), {} warning(s), {} info\n",
            count(Severity::Error),
            count(Severity::Warning),
            count(Severity::Info)
        ));
        if self.findings.is_empty() {
            out.push_str("  none: the data follows the rules of thumb\n");
        }
        for f in &self.findings {
            out.push_str(&format!(
                "  {:<7} {:<8} {}\n          {}\n          fix: {}\n",
                f.severity.name().to_uppercase(),
                f.rule,
                f.field,
                f.figure,
                f.fix
            ));
        }
        if !self.arrays.is_empty() {
            out.push_str("\nArray lengths (declared bound, rule-3 threshold)\n");
            for a in &self.arrays {
                out.push_str(&format!(
                    "  {:<28} {:<10} p50 {:>5}  p99 {:>5}  max {:>5}  bound {:>5}  rule 3 {:>5}  {}  ({})\n",
                    format!("{}.{}", a.collection, a.field),
                    a.kind,
                    a.lengths.p50,
                    a.lengths.p99,
                    a.lengths.max,
                    a.declared_max.map_or_else(|| "-".into(), |m| m.to_string()),
                    a.threshold.map_or_else(|| "-".into(), |m| m.to_string()),
                    spark(&a.lengths.histogram),
                    a.coverage.describe()
                ));
                if let Some(trend) = &a.trend {
                    let t: Vec<String> = trend.iter().map(|m| format!("{m:.1}")).collect();
                    out.push_str(&format!(
                        "  {:<28} mean length by age, oldest quarter first: {}\n",
                        "",
                        t.join(" -> ")
                    ));
                }
            }
        }
        if !self.sizes.is_empty() {
            out.push_str("\nDocument sizes (16 MiB = 16,777,216 bytes)\n");
            for s in &self.sizes {
                out.push_str(&format!(
                    "  {:<16} p50 {:>9}  p99 {:>9}  max {:>9} ({:.3}% of 16 MiB)  largest field: {}  ({})\n",
                    s.collection,
                    s.bytes.p50,
                    s.bytes.p99,
                    s.bytes.max,
                    s.bytes.max as f64 * 100.0 / MAX_DOCUMENT_BYTES as f64,
                    s.largest_field.as_ref().map_or_else(|| "-".into(), |(f, b)| format!("`{f}` {b} bytes")),
                    s.coverage.describe()
                ));
            }
        }
        if !self.copies.is_empty() {
            out.push_str("\nRule 5: writes of each copied source against reads of its copies\n");
            for c in &self.copies {
                let show = |v: Option<u64>| v.map_or_else(|| "?".into(), |v| v.to_string());
                out.push_str(&format!(
                    "  {:<40} writes {:>6}  reads {:>6}  ({})\n",
                    format!("{}.{} -> {}", c.source, c.fields.join(","), c.copy),
                    show(c.writes),
                    show(c.reads),
                    c.measured_from
                ));
            }
        }
        if !self.balance.is_empty() {
            out.push_str("\nN:M balance\n");
            for b in &self.balance {
                let sides: Vec<String> = b
                    .sides
                    .iter()
                    .map(|(s, bound, p99, max)| {
                        format!("{s} p99 {p99} max {max} (bound {})", bound.map_or("none".into(), |b| b.to_string()))
                    })
                    .collect();
                out.push_str(&format!("  {}: {}\n", b.pair, sides.join("; ")));
            }
        }
        if !self.references.is_empty() {
            out.push_str("\nReferences to documents that exist\n");
            for r in &self.references {
                out.push_str(&format!(
                    "  {:<28} -> {:<12} {} {} of {} ids ({} documents)  ({})\n",
                    format!("{}.{}", r.collection, r.field),
                    r.target,
                    r.kind,
                    r.missing_ids,
                    r.ids_checked,
                    r.documents,
                    r.coverage.describe()
                ));
            }
        }
        if !self.indexes.is_empty() {
            out.push_str("\nIndexes the relationships need\n");
            for i in &self.indexes {
                out.push_str(&format!(
                    "  {:<16} {:<36} {:<10}{}\n",
                    i.collection,
                    format!("{}{}", i.keys, if i.unique { " unique" } else { "" }),
                    i.state,
                    i.uses.map(|u| format!(" {u} uses")).unwrap_or_default()
                ));
            }
        }
        if !self.notes.is_empty() {
            out.push_str("\nHow it was measured\n");
            for n in &self.notes {
                out.push_str(&format!("  - {n}\n"));
            }
        }
        out
    }
}

/// A histogram as a line of block characters.
fn spark(bins: &[Bin]) -> String {
    const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let top = bins.iter().map(|b| b.count).max().unwrap_or(0).max(1);
    bins.iter()
        .map(|b| if b.count == 0 { ' ' } else { BLOCKS[((b.count * 7).div_ceil(top)) as usize] })
        .collect::<String>()
        .replace(' ', "·")
}

/// `{parts.id: 1, time: -1}`
fn show_keys(keys: &BsonDoc) -> String {
    let parts: Vec<String> = keys.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    format!("{{{}}}", parts.join(", "))
}

fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One array relation of a collection, as the doctor measures it.
#[derive(Debug, Clone, Copy)]
struct ArrayField {
    field: &'static str,
    kind: &'static str,
    max: Option<u64>,
    threshold: Option<u64>,
}

fn array_field(rel: &Relation) -> Option<ArrayField> {
    let (kind, max, threshold) = match rel.kind {
        RelationKind::Embed { many: true, max } if rel.subset.is_some() => ("subset", max, Some(EMBED_THRESHOLD)),
        RelationKind::Embed { many: true, max } => ("embed", max, Some(EMBED_THRESHOLD)),
        RelationKind::RefMany { max, .. } => ("references", max, Some(REFERENCE_THRESHOLD)),
        RelationKind::Bucket => ("bucket", rel.bucket.as_ref().and_then(|b| b.size), None),
        _ => return None,
    };
    Some(ArrayField { field: rel.field, kind, max: max.map(u64::from), threshold })
}

/// The collections of the program, each with the types stored in it.
fn collections() -> BTreeMap<&'static str, Vec<&'static Schema>> {
    let mut out: BTreeMap<&'static str, Vec<&'static Schema>> = BTreeMap::new();
    for s in sorted() {
        out.entry(s.collection).or_default().push(s);
    }
    out
}

fn as_u64(v: Option<&Bson>) -> Option<u64> {
    match v? {
        Bson::Int32(i) => u64::try_from(*i).ok(),
        Bson::Int64(i) => u64::try_from(*i).ok(),
        Bson::Double(d) if *d >= 0.0 => Some(*d as u64),
        _ => None,
    }
}

async fn aggregate(db: &Database, collection: &str, pipeline: Vec<BsonDoc>) -> Result<Vec<BsonDoc>> {
    let mut cursor = db
        .collection::<BsonDoc>(collection)
        .aggregate(pipeline)
        .await
        .map_err(|e| Error::driver("aggregate", collection, e))?;
    let mut out = Vec::new();
    while cursor.advance().await.map_err(|e| Error::driver("aggregate", collection, e))? {
        out.push(cursor.deserialize_current().map_err(|e| Error::driver("aggregate", collection, e))?);
    }
    Ok(out)
}

/// The first stage of every read of `collection`: a `$sample` when it is
/// larger than the limit.
async fn coverage(db: &Database, collection: &str, limit: u64) -> Result<(Coverage, Vec<BsonDoc>)> {
    let documents = db
        .collection::<BsonDoc>(collection)
        .estimated_document_count()
        .await
        .map_err(|e| Error::driver("count", collection, e))?;
    if documents > limit {
        Ok((Coverage { documents, read: limit, sampled: true }, vec![doc! {"$sample": {"size": limit as i64}}]))
    } else {
        Ok((Coverage { documents, read: documents, sampled: false }, Vec::new()))
    }
}

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
            group(options.sample)
        )],
        arrays: Vec::new(),
        sizes: Vec::new(),
        copies: Vec::new(),
        balance: Vec::new(),
        references: Vec::new(),
        indexes: Vec::new(),
        findings: Vec::new(),
    };
    let existing: Vec<String> =
        db.list_collection_names().await.map_err(|e| Error::driver("listCollections", db.name(), e))?;
    // Rule 5 first: the doctor's own reads must not count as reads of the copies.
    rule_five(db, &existing, &mut report).await?;
    for (collection, types) in collections() {
        if !existing.iter().any(|c| c == collection) {
            continue;
        }
        measure(db, options, collection, &types, &mut report).await?;
        references(db, options, collection, &types, &mut report).await?;
    }
    indexes(db, &existing, &mut report).await?;
    let skipped: Vec<&str> = collections().into_keys().filter(|c| !existing.iter().any(|e| e == c)).collect();
    if !skipped.is_empty() {
        report
            .notes
            .push(format!("collections of the schema that do not exist yet, skipped: [{}]", skipped.join(", ")));
    }
    balance(&mut report);
    report.findings.sort_by(|a, b| b.severity.cmp(&a.severity).then_with(|| a.field.cmp(&b.field)));
    Ok(report)
}

/// Lengths and sizes of one collection: one aggregate.
async fn measure(
    db: &Database,
    options: &Options,
    collection: &'static str,
    types: &[&'static Schema],
    report: &mut DoctorReport,
) -> Result<()> {
    let mut fields: Vec<ArrayField> = Vec::new();
    for s in types {
        for rel in s.relations {
            if let Some(f) = array_field(rel) {
                if !fields.iter().any(|x| x.field == f.field) {
                    fields.push(f);
                }
            }
        }
    }
    let (coverage, mut pipeline) = coverage(db, collection, options.sample).await?;
    if coverage.documents == 0 {
        return Ok(());
    }
    let mut project = doc! {"_id": 1, "s": {"$bsonSize": "$$ROOT"}};
    for (i, f) in fields.iter().enumerate() {
        let path = format!("${}", f.field);
        project.insert(format!("a{i}"), doc! {"$cond": [{"$isArray": &path}, {"$size": &path}, Bson::Null]});
    }
    pipeline.push(doc! {"$project": project});
    let rows = aggregate(db, collection, pipeline).await?;
    let coverage = Coverage { read: rows.len() as u64, ..coverage };

    // Document sizes, and the largest field of the largest document.
    let sizes: Vec<u64> = rows.iter().filter_map(|r| as_u64(r.get("s"))).collect();
    let largest = rows.iter().max_by_key(|r| as_u64(r.get("s")).unwrap_or(0)).and_then(|r| r.get("_id")).cloned();
    let mut largest_field = None;
    if let Some(id) = &largest {
        let found = db
            .collection::<BsonDoc>(collection)
            .find_one(doc! {"_id": id.clone()})
            .await
            .map_err(|e| Error::driver("find", collection, e))?;
        if let Some(d) = found {
            largest_field = d
                .iter()
                .map(|(k, v)| {
                    let bytes =
                        bson_compat::to_vec(&doc! { k.clone(): v.clone() }).map_or(0, |b| b.len().saturating_sub(5));
                    (k.clone(), bytes as u64)
                })
                .max_by_key(|(_, b)| *b);
        }
    }
    let log2 = log2_counts(&sizes);
    let bytes = Distribution::of(sizes, 0);
    let fraction = bytes.max as f64 / MAX_DOCUMENT_BYTES as f64;
    if fraction >= 0.25 {
        let field = largest_field.as_ref().map_or_else(|| "?".to_owned(), |(f, _)| f.clone());
        report.findings.push(Finding {
            severity: if fraction >= 0.5 { Severity::Error } else { Severity::Warning },
            rule: "16 MiB".into(),
            field: format!("{collection}.{field}"),
            figure: format!(
                "largest document {} bytes ({:.0}% of 16 MiB), p99 {} bytes; its largest field is `{field}` ({})",
                group(bytes.max),
                fraction * 100.0,
                group(bytes.p99),
                coverage.describe()
            ),
            fix: format!(
                "move `{field}` out of the document: children with a `#[parent_ref]` (one-to-squillions), a subset \
                 of the newest kept in the parent, or buckets; or bound it with `max = N`"
            ),
        });
    }
    report.sizes.push(SizeStat {
        collection: collection.to_owned(),
        coverage: coverage.clone(),
        bytes,
        largest_id: largest.as_ref().map(show_id),
        largest_field,
        log2_counts: log2,
    });

    // Array lengths.
    for (i, f) in fields.iter().enumerate() {
        let key = format!("a{i}");
        let mut aged: Vec<(i64, u64)> = Vec::new();
        let mut lengths = Vec::new();
        for r in &rows {
            let Some(len) = as_u64(r.get(&key)) else { continue };
            lengths.push(len);
            if let Some(Bson::ObjectId(oid)) = r.get("_id") {
                aged.push((oid.timestamp().timestamp_millis(), len));
            }
        }
        if lengths.is_empty() {
            continue;
        }
        let trend = (aged.len() >= 8 && aged.len() == lengths.len()).then(|| {
            aged.sort_by_key(|(t, _)| *t);
            let q = aged.len() / 4;
            (0..4)
                .map(|k| {
                    let part = if k == 3 { &aged[3 * q..] } else { &aged[k * q..(k + 1) * q] };
                    part.iter().map(|(_, l)| *l as f64).sum::<f64>() / part.len().max(1) as f64
                })
                .collect()
        });
        let top = f.max.unwrap_or(0).max(f.threshold.unwrap_or(0).min(f.max.unwrap_or(u64::MAX)));
        let lengths = Distribution::of(lengths, top);
        let label = format!("{collection}.{}", f.field);
        if let Some(max) = f.max {
            if lengths.max > max {
                report.findings.push(Finding {
                    severity: Severity::Error,
                    rule: "bound".into(),
                    field: label.clone(),
                    figure: format!(
                        "{} elements in the longest array, over its declared max of {max} (p99 {}; {})",
                        lengths.max,
                        lengths.p99,
                        coverage.describe()
                    ),
                    fix: format!(
                        "something wrote past the bound outside docrel: trim those arrays, and call \
                         `ensure_validator` so the server refuses such writes ({} {})",
                        f.kind, f.field
                    ),
                });
            } else if lengths.p99 * 10 >= max * 9 && max > 1 && f.kind != "subset" {
                report.findings.push(Finding {
                    severity: Severity::Warning,
                    rule: "bound".into(),
                    field: label.clone(),
                    figure: format!(
                        "p99 {} of a declared max of {max} (max {}; {})",
                        lengths.p99,
                        lengths.max,
                        coverage.describe()
                    ),
                    fix: "the arrays are close to their bound, where writes start to fail with EmbedFull: raise `max` \
                          if they really grow so, or move the elements out (a child collection with a `#[parent_ref]`, \
                          a subset of the newest, or buckets)"
                        .into(),
                });
            }
        }
        if let Some(threshold) = f.threshold {
            if lengths.max > threshold {
                let (what, fix) = if f.kind == "references" {
                    (
                        "references: a few thousand at most",
                        "reference the parent from the children instead (`#[parent_ref]`, one-to-squillions) and \
                         read them with `children_of`",
                    )
                } else {
                    (
                        "embedded: a couple of hundred at most",
                        "move the elements into their own collection with a `#[parent_ref]` to this one, and keep \
                         only the newest here as a subset (`#[embed(max = N, subset_of = ..)]`), or bucket them",
                    )
                };
                report.findings.push(Finding {
                    severity: Severity::Warning,
                    rule: "rule 3".into(),
                    field: label.clone(),
                    figure: format!(
                        "max {} elements, p99 {}, p50 {}; rule 3 for {what} ({threshold}); {}",
                        lengths.max,
                        lengths.p99,
                        lengths.p50,
                        coverage.describe()
                    ),
                    fix: fix.into(),
                });
            }
        }
        report.arrays.push(ArrayStat {
            collection: collection.to_owned(),
            field: f.field.to_owned(),
            kind: f.kind.to_owned(),
            declared_max: f.max,
            threshold: f.threshold,
            coverage: coverage.clone(),
            lengths,
            trend,
        });
    }
    Ok(())
}

/// Dangling references and orphan children of one collection.
async fn references(
    db: &Database,
    options: &Options,
    collection: &'static str,
    types: &[&'static Schema],
    report: &mut DoctorReport,
) -> Result<()> {
    let mut seen: Vec<&str> = Vec::new();
    for s in types {
        for rel in s.relations.iter().filter(|r| r.is_reference()) {
            let Some(target) = rel.target else { continue };
            if seen.contains(&rel.field) {
                continue;
            }
            seen.push(rel.field);
            let (coverage, mut pipeline) = coverage(db, collection, options.sample).await?;
            if coverage.documents == 0 {
                continue;
            }
            let ids_expr: Bson = match rel.kind {
                // `$map` rather than `"$parts.id"`: correct on every server.
                RelationKind::RefMany { key: Some(key), .. } => Bson::Document(doc! {"$map": {
                    "input": {"$cond": [{"$isArray": format!("${}", rel.field)}, format!("${}", rel.field), []]},
                    "in": format!("$$this.{key}"),
                }}),
                _ => Bson::String(format!("${}", rel.field)),
            };
            pipeline.push(doc! {"$project": {"_id": 1, "r": ids_expr}});
            let rows = aggregate(db, collection, pipeline).await?;
            let mut held: Vec<(Bson, Vec<Bson>)> = Vec::new();
            let mut ids: Vec<Bson> = Vec::new();
            for r in &rows {
                let refs: Vec<Bson> = match r.get("r") {
                    Some(Bson::Array(a)) => a.iter().filter(|v| **v != Bson::Null).cloned().collect(),
                    Some(Bson::Null) | None => Vec::new(),
                    Some(v) => vec![v.clone()],
                };
                for id in &refs {
                    if ids.len() < options.max_ids && !ids.contains(id) {
                        ids.push(id.clone());
                    }
                }
                held.push((r.get("_id").cloned().unwrap_or(Bson::Null), refs));
            }
            let mut found: Vec<Bson> = Vec::new();
            for chunk in ids.chunks(500) {
                let rows = aggregate(
                    db,
                    target,
                    vec![doc! {"$match": {"_id": {"$in": chunk.to_vec()}}}, doc! {"$project": {"_id": 1}}],
                )
                .await?;
                found.extend(rows.into_iter().filter_map(|d| d.get("_id").cloned()));
            }
            let missing: Vec<&Bson> = ids.iter().filter(|id| !found.contains(id)).collect();
            let documents = held.iter().filter(|(_, refs)| refs.iter().any(|r| missing.contains(&r))).count() as u64;
            let orphans = rel.kind == RelationKind::ParentRef;
            let kind = if orphans { "orphans" } else { "dangling" };
            let stat = RefStat {
                collection: collection.to_owned(),
                field: rel.field.to_owned(),
                target: target.to_owned(),
                kind: kind.to_owned(),
                coverage: coverage.clone(),
                ids_checked: ids.len() as u64,
                missing_ids: missing.len() as u64,
                documents,
                examples: missing.iter().take(5).map(|id| show_id(id)).collect(),
            };
            if !missing.is_empty() {
                let examples = stat.examples.join(", ");
                report.findings.push(if orphans {
                    Finding {
                        severity: Severity::Warning,
                        rule: "orphans".into(),
                        field: format!("{collection}.{}", rel.field),
                        figure: format!(
                            "{documents} children of {} missing `{target}` parents (e.g. {examples}; {})",
                            missing.len(),
                            coverage.describe()
                        ),
                        fix: format!(
                            "delete the orphans or restore their parents; delete parents through docrel with \
                             `on_delete = cascade` on `{}` so their children go with them",
                            rel.field
                        ),
                    }
                } else {
                    Finding {
                        severity: Severity::Warning,
                        rule: "dangling".into(),
                        field: format!("{collection}.{}", rel.field),
                        figure: format!(
                            "{} of {} referenced ids do not exist in `{target}`, held by {documents} documents (e.g. \
                             {examples}; {})",
                            missing.len(),
                            ids.len(),
                            coverage.describe()
                        ),
                        fix: format!(
                            "remove them (`repair` pulls dangling ids from two-way arrays), and declare \
                             `on_delete = pull` (or `cascade`) on `{}` so deletes through docrel clean up",
                            rel.field
                        ),
                    }
                });
            }
            report.references.push(stat);
        }
    }
    Ok(())
}

/// Indexes needed but missing, and declared ones `$indexStats` says are unused.
async fn indexes(db: &Database, existing: &[String], report: &mut DoctorReport) -> Result<()> {
    let mut tracked = false;
    let mut untracked = false;
    for (collection, types) in collections() {
        // A collection that does not exist yet gets its indexes with its first document.
        if !existing.iter().any(|c| c == collection) {
            continue;
        }
        let mut needed: Vec<(BsonDoc, bool)> = Vec::new();
        for s in &types {
            for model in needed_by(s) {
                let unique = model.options.as_ref().and_then(|o| o.unique).unwrap_or(false);
                if !needed.iter().any(|(k, _)| *k == model.keys) {
                    needed.push((model.keys, unique));
                }
            }
        }
        if needed.is_empty() {
            continue;
        }
        let present: Vec<(BsonDoc, bool, String)> = {
            let mut cursor = db
                .collection::<BsonDoc>(collection)
                .list_indexes()
                .await
                .map_err(|e| Error::driver("listIndexes", collection, e))?;
            let mut out = Vec::new();
            while cursor.advance().await.map_err(|e| Error::driver("listIndexes", collection, e))? {
                let m = cursor.deserialize_current().map_err(|e| Error::driver("listIndexes", collection, e))?;
                let unique = m.options.as_ref().and_then(|o| o.unique).unwrap_or(false);
                let name = m.options.as_ref().and_then(|o| o.name.clone()).unwrap_or_default();
                out.push((m.keys, unique, name));
            }
            out
        };
        // Uses per index name, where the server counts them.
        let mut uses: BTreeMap<String, u64> = BTreeMap::new();
        if !present.is_empty() {
            match aggregate(db, collection, vec![doc! {"$indexStats": {}}]).await {
                Ok(rows) => {
                    for r in rows {
                        let accesses = r.get_document("accesses").ok();
                        let since = accesses.and_then(|a| a.get("since"));
                        if matches!(since, Some(Bson::DateTime(_))) {
                            tracked = true;
                            if let Ok(name) = r.get_str("name") {
                                uses.insert(name.to_owned(), as_u64(accesses.and_then(|a| a.get("ops"))).unwrap_or(0));
                            }
                        } else {
                            untracked = true;
                        }
                    }
                }
                Err(_) => untracked = true,
            }
        }
        for (keys, unique) in needed {
            let found = present.iter().find(|(k, _, _)| *k == keys);
            let label = show_keys(&keys);
            let (state, count) = match found {
                None => {
                    report.findings.push(Finding {
                        severity: if unique { Severity::Error } else { Severity::Warning },
                        rule: "index".into(),
                        field: collection.to_owned(),
                        figure: format!(
                            "`{label}`{} is needed by the declared relationships and missing",
                            if unique { " (unique)" } else { "" }
                        ),
                        fix: format!(
                            "create it: `admin indexes apply`, or `ensure_indexes()` on the repository{}",
                            if unique {
                                "; without it concurrent bucket appends or unique fields are not safe"
                            } else {
                                ""
                            }
                        ),
                    });
                    ("missing".to_owned(), None)
                }
                Some((_, present_unique, _)) if unique && !present_unique => {
                    report.findings.push(Finding {
                        severity: Severity::Error,
                        rule: "index".into(),
                        field: collection.to_owned(),
                        figure: format!("`{label}` exists but is not unique, and must be"),
                        fix: "drop it and create it unique (`admin indexes plan` shows the change)".into(),
                    });
                    ("not unique".to_owned(), None)
                }
                Some((_, _, name)) => match uses.get(name) {
                    Some(0) => {
                        report.findings.push(Finding {
                            severity: Severity::Info,
                            rule: "index".into(),
                            field: collection.to_owned(),
                            figure: format!("`{label}` has not been used since `$indexStats` started counting"),
                            fix: "check again after a representative period; if it stays unused, the relationship \
                                  it serves is not queried: drop the index (or the relationship)"
                                .into(),
                        });
                        ("unused".to_owned(), Some(0))
                    }
                    other => ("ok".to_owned(), other.copied()),
                },
            };
            report.indexes.push(IndexStat {
                collection: collection.to_owned(),
                keys: label,
                unique,
                state,
                uses: count,
            });
        }
    }
    report.notes.push(match (tracked, untracked) {
        (true, false) => "`$indexStats` counts index uses on this server: unused indexes are reported".into(),
        (true, true) => "`$indexStats` counts uses of some indexes only: unused ones are reported where it does".into(),
        (false, true) => "`$indexStats` answers but counts no uses on this server (`accesses.since` is null): unused \
                          indexes cannot be told and are not reported"
            .into(),
        (false, false) => "no index to check with `$indexStats`".into(),
    });
    Ok(())
}

/// Rule 5: writes of each copied source against reads of its holders.
async fn rule_five(db: &Database, existing: &[String], report: &mut DoctorReport) -> Result<()> {
    let g = graph();
    let mut copies: Vec<(&'static str, Vec<&'static str>, String, &'static str)> = Vec::new();
    for source in g.sources() {
        for t in targets_of(source) {
            if !existing.iter().any(|c| c == source || c == t.collection) {
                continue;
            }
            let fields: Vec<&'static str> = t.source_fields().collect();
            let copy = match t.shape {
                Shape::Top { .. } => {
                    let names: Vec<&str> = t.fields.iter().map(|(c, _)| *c).collect();
                    format!("{}.{}", t.collection, names.join(","))
                }
                Shape::Array { array, .. } => {
                    let names: Vec<&str> = t.fields.iter().map(|(c, _)| *c).collect();
                    format!("{}.{array}[].{}", t.collection, names.join(","))
                }
            };
            copies.push((source, fields, copy, t.collection));
        }
    }
    if copies.is_empty() {
        return Ok(());
    }
    let profiling = db
        .run_command(doc! {"profile": -1})
        .await
        .ok()
        .and_then(|r| as_u64(r.get("was")))
        .is_some_and(|level| level > 0);
    if profiling {
        let note = "rule 5 from the profiler (`system.profile` of this database, level > 0): writes are updates and \
                    findAndModify of the source that set a copied field; reads are finds and getMores of the holders";
        report.notes.push(note.into());
        for (source, fields, copy, holder) in copies {
            let namespaces = [format!("{}.{source}", db.name()), format!("{}.{holder}", db.name())];
            let mut cursor = db
                .collection::<BsonDoc>("system.profile")
                .find(doc! {"ns": {"$in": namespaces.to_vec()}})
                .projection(doc! {"ns": 1, "op": 1, "command": 1})
                .await
                .map_err(|e| Error::driver("find", "system.profile", e))?;
            let mut rows = Vec::new();
            while cursor.advance().await.map_err(|e| Error::driver("find", "system.profile", e))? {
                rows.push(cursor.deserialize_current().map_err(|e| Error::driver("find", "system.profile", e))?);
            }
            let mut writes = 0;
            let mut reads = 0;
            for r in rows {
                let ns = r.get_str("ns").unwrap_or_default();
                let op = r.get_str("op").unwrap_or_default();
                let command = r.get_document("command").cloned().unwrap_or_default();
                if ns.ends_with(&format!(".{source}")) && sets_any(&command, &fields) {
                    writes += 1;
                }
                if ns.ends_with(&format!(".{holder}")) && matches!(op, "query" | "getmore") {
                    reads += 1;
                }
            }
            push_copy(report, source, fields, copy, holder, Some(writes), Some(reads), "profiler");
        }
        return Ok(());
    }
    match db.client().database("admin").run_command(doc! {"top": 1}).await {
        Ok(top) => {
            report.notes.push(
                "rule 5 from the server's `top` counters (per collection, since the server started; the profiler is \
                 off): writes are update commands on the source collection, whichever field they set (some servers \
                 count findAndModify as a command, not an update), reads are queries and getMores on the holders"
                    .into(),
            );
            let totals = top.get_document("totals").cloned().unwrap_or_default();
            let count = |ns: &str, what: &str| -> u64 {
                totals
                    .get_document(ns)
                    .ok()
                    .and_then(|n| n.get_document(what).ok())
                    .and_then(|w| as_u64(w.get("count")))
                    .unwrap_or(0)
            };
            for (source, fields, copy, holder) in copies {
                let writes = count(&format!("{}.{source}", db.name()), "update");
                let holder_ns = format!("{}.{holder}", db.name());
                let reads = count(&holder_ns, "queries") + count(&holder_ns, "getmore");
                push_copy(report, source, fields, copy, holder, Some(writes), Some(reads), "top");
            }
        }
        Err(e) => {
            report.notes.push(format!(
                "rule 5 not measured: the profiler is off and `top` was refused ({e}); enable the profiler on the \
                 database (`db.setProfilingLevel(1)`) or grant `top`, and run the doctor again"
            ));
            for (source, fields, copy, holder) in copies {
                push_copy(report, source, fields, copy, holder, None, None, "not measured");
            }
        }
    }
    Ok(())
}

/// Whether an update or findAndModify command (as the profiler records
/// it) sets one of `fields`, through any operator, at any depth of its
/// update document (filters are not looked at).
fn sets_any(command: &BsonDoc, fields: &[&str]) -> bool {
    fn walk(v: &Bson, fields: &[&str]) -> bool {
        match v {
            Bson::Document(d) => d.iter().any(|(k, v)| {
                fields.iter().any(|f| k == f || k.starts_with(&format!("{f}.")) || f.starts_with(&format!("{k}.")))
                    || walk(v, fields)
            }),
            Bson::Array(a) => a.iter().any(|v| walk(v, fields)),
            _ => false,
        }
    }
    let updates = command.get_array("updates").map(|u| u.iter().filter_map(Bson::as_document).collect::<Vec<_>>());
    match updates {
        Ok(list) => list.iter().any(|u| u.get("u").is_some_and(|u| walk(u, fields))),
        Err(_) => command.get("update").filter(|_| !command.contains_key("updates")).is_some_and(|u| walk(u, fields)),
    }
}

#[allow(clippy::too_many_arguments)]
fn push_copy(
    report: &mut DoctorReport,
    source: &str,
    fields: Vec<&str>,
    copy: String,
    holder: &str,
    writes: Option<u64>,
    reads: Option<u64>,
    from: &str,
) {
    if let (Some(w), Some(r)) = (writes, reads) {
        if w >= MIN_WRITES && w > r {
            // `top` counts writes of any field: a hint, not a measure of the copied field.
            let exact = from == "profiler";
            report.findings.push(Finding {
                severity: if exact { Severity::Warning } else { Severity::Info },
                rule: "rule 5".into(),
                field: copy.clone(),
                figure: format!(
                    "`{source}` written {w} times{}, the copies' collection `{holder}` read {r} times (from {from}): \
                     the copy costs more writes than it saves reads",
                    if exact { format!(" in `{}`", fields.join("`, `")) } else { " (any field)".to_owned() }
                ),
                fix: format!(
                    "rule 5 denormalizes only what is read much more than written: drop the copy `{copy}` and load \
                     `{source}.{}` with the relation's loader, or mark the source field `#[document(write_heavy)]` so \
                     the compiler warns about copying it",
                    fields.join(", ")
                ),
            });
        }
    }
    report.copies.push(CopyUse {
        source: source.to_owned(),
        fields: fields.into_iter().map(str::to_owned).collect(),
        copy,
        holder: holder.to_owned(),
        writes,
        reads,
        measured_from: from.to_owned(),
    });
}

/// N:M balance, from the measured array lengths.
fn balance(report: &mut DoctorReport) {
    for pair in pairs().into_iter().filter(|p| p.shape == PairShape::ManyToMany) {
        let mut sides = Vec::new();
        let measured = |c: &str, f: &str| report.arrays.iter().any(|a| a.collection == c && a.field == f);
        if !measured(pair.a.collection(), pair.a.rel.field) && !measured(pair.b.collection(), pair.b.rel.field) {
            continue;
        }
        for side in [pair.a, pair.b] {
            let stat =
                report.arrays.iter().find(|a| a.collection == side.collection() && a.field == side.rel.field).cloned();
            let declared = match side.rel.kind {
                RelationKind::RefMany { max, .. } => max.map(u64::from),
                _ => None,
            };
            let (p99, max) = stat.as_ref().map_or((0, 0), |s| (s.lengths.p99, s.lengths.max));
            if max >= BALANCE_THRESHOLD {
                report.findings.push(Finding {
                    severity: Severity::Warning,
                    rule: "balance".into(),
                    field: side.label(),
                    figure: format!(
                        "up to {max} ids (p99 {p99}) on this side of the two-way N:M `{}`; balance: {}",
                        pair.label(),
                        BALANCE_THRESHOLD
                    ),
                    fix: format!(
                        "keep `{}` one-way: drop its `inverse` and find these documents from the other side with \
                         `referrers` (through the multikey index)",
                        side.label()
                    ),
                });
            }
            sides.push((side.label(), declared, p99, max));
        }
        report.balance.push(BalanceStat { pair: pair.label(), sides });
    }
}
