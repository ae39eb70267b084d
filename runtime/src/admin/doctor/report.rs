//! What the doctor reports: the findings, the measurements behind them,
//! and the statistics the figures are made of.

use crate::error::{Error, Result};
use crate::schema::pattern::Pattern;
use serde::Serialize;
use std::collections::BTreeMap;

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
    /// The Rust type and field declaring it (`Post`, `comments`).
    pub rust: (String, String),
    /// The array's pattern; in JSON its one word (`embed`, `references`,
    /// `subset` or `bucket`).
    #[serde(serialize_with = "array_word")]
    pub kind: Pattern,
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

/// Sizes counted by power of two, as [`SizeStat::log2_counts`] holds them.
pub(super) fn log2_counts(sizes: &[u64]) -> Vec<u64> {
    let last = 24; // 16 MiB
    let mut counts = vec![0u64; (last - LOG2_FIRST) as usize];
    for s in sizes {
        let k = (63 - s.max(&1).leading_zeros()).clamp(LOG2_FIRST, last - 1);
        counts[(k - LOG2_FIRST) as usize] += 1;
    }
    counts
}

/// Mean length by age, oldest quarter first, from `(creation millis,
/// length)` of every document holding the array; `None` below 8 documents.
pub(super) fn trend(mut aged: Vec<(i64, u64)>) -> Option<Vec<f64>> {
    if aged.len() < 8 {
        return None;
    }
    aged.sort_by_key(|(t, _)| *t);
    let q = aged.len() / 4;
    let quarters = (0..4).map(|k| {
        let part = if k == 3 { &aged[3 * q..] } else { &aged[k * q..(k + 1) * q] };
        part.iter().map(|(_, l)| *l as f64).sum::<f64>() / part.len().max(1) as f64
    });
    Some(quarters.collect())
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
    /// Where the figures come from: `profiler`, `top` or `not measured`.
    pub measured_from: String,
    /// The writes counted, by the command that carried them and the
    /// counter read: `{"bulkWrite (admin.system.profile)": 6}`; the
    /// commands that set no copied field are left out.
    pub writes_by: BTreeMap<String, u64>,
}

impl CopyUse {
    /// Where the write figure comes from, command by command:
    /// `profiler: 6 bulkWrite (admin.system.profile)`.
    pub fn writes_from(&self) -> String {
        if self.writes_by.is_empty() {
            return self.measured_from.clone();
        }
        let by: Vec<String> = self.writes_by.iter().map(|(carrier, n)| format!("{n} {carrier}")).collect();
        format!("{}: {}", self.measured_from, by.join(", "))
    }
}

/// The two sides of an N:M two-way reference, measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BalanceStat {
    /// `authors.books <-> books.authors`
    pub pair: String,
    /// Per side: `(collection.field, declared max, p99, max)`.
    pub sides: Vec<(String, Option<u64>, u64, u64)>,
}

/// What a reference whose target is missing is called (in JSON, the
/// lowercase word).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Missing {
    /// A reference to a document that does not exist.
    Dangling,
    /// A child whose parent (`#[parent_ref]`) does not exist.
    Orphans,
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(match self {
            Missing::Dangling => "dangling",
            Missing::Orphans => "orphans",
        })
    }
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
    /// What a missing target makes of its holders.
    pub kind: Missing,
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
}

fn array_word<S: serde::Serializer>(pattern: &Pattern, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(pattern.array_word())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distributions_rank_the_nearest_value_and_bin_up_to_the_top() {
        let d = Distribution::of((1..=100).collect(), 200);
        assert_eq!((d.n, d.p50, d.p99, d.max), (100, 50, 99, 100));
        assert_eq!(d.histogram.len(), 10);
        assert_eq!((d.histogram[0].lo, d.histogram[9].hi), (0, 200));
        assert_eq!(d.histogram.iter().map(|b| b.count).sum::<u64>(), 100);
        assert_eq!(Distribution::of(Vec::new(), 5), Distribution::default());
    }

    #[test]
    fn sizes_count_by_power_of_two_and_lengths_by_age() {
        let counts = log2_counts(&[1, 32, 63, 64, 1 << 30]);
        assert_eq!((counts[0], counts[1], *counts.last().unwrap()), (3, 1, 1));
        assert_eq!(trend(vec![(0, 1); 7]), None, "too few to tell");
        let aged: Vec<(i64, u64)> = (0..8).rev().map(|t| (t, t as u64)).collect();
        assert_eq!(trend(aged), Some(vec![0.5, 2.5, 4.5, 6.5]), "oldest quarter first");
    }
}
