//! The doctor's report as text for a terminal: the findings, then one
//! section per measurement, then how each figure was had.

use super::report::{Bin, DoctorReport, Severity};
use crate::error::MAX_DOCUMENT_BYTES;

impl DoctorReport {
    /// The report as text for a terminal.
    pub fn to_text(&self) -> String {
        let mut out = format!("docrel doctor: database `{}`, {}\n", self.database, self.at);
        self.findings_text(&mut out);
        self.arrays_text(&mut out);
        self.sizes_text(&mut out);
        self.copies_text(&mut out);
        self.balance_text(&mut out);
        self.references_text(&mut out);
        self.indexes_text(&mut out);
        if !self.notes.is_empty() {
            out.push_str("\nHow it was measured\n");
            for n in &self.notes {
                out.push_str(&format!("  - {n}\n"));
            }
        }
        out
    }

    fn findings_text(&self, out: &mut String) {
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
    }

    fn arrays_text(&self, out: &mut String) {
        if self.arrays.is_empty() {
            return;
        }
        out.push_str("\nArray lengths (declared bound, rule-3 threshold)\n");
        let show = |v: Option<u64>| v.map_or_else(|| "-".into(), |m| m.to_string());
        for a in &self.arrays {
            out.push_str(&format!(
                "  {:<28} {:<10} p50 {:>5}  p99 {:>5}  max {:>5}  bound {:>5}  rule 3 {:>5}  {}  ({})\n",
                format!("{}.{}", a.collection, a.field),
                a.kind.array_word(),
                a.lengths.p50,
                a.lengths.p99,
                a.lengths.max,
                show(a.declared_max),
                show(a.threshold),
                spark(&a.lengths.histogram),
                a.coverage.describe()
            ));
            if let Some(trend) = &a.trend {
                let t: Vec<String> = trend.iter().map(|m| format!("{m:.1}")).collect();
                out.push_str(&format!("  {:<28} mean length by age, oldest quarter first: {}\n", "", t.join(" -> ")));
            }
        }
    }

    fn sizes_text(&self, out: &mut String) {
        if self.sizes.is_empty() {
            return;
        }
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

    fn copies_text(&self, out: &mut String) {
        if self.copies.is_empty() {
            return;
        }
        out.push_str("\nRule 5: writes of each copied source against reads of its copies\n");
        for c in &self.copies {
            out.push_str(&format!(
                "  {:<40} writes {:>6}  reads {:>6}  ({})\n",
                format!("{}.{} -> {}", c.source, c.fields.join(","), c.copy),
                unknown(c.writes),
                unknown(c.reads),
                c.writes_from()
            ));
        }
    }

    fn balance_text(&self, out: &mut String) {
        if self.balance.is_empty() {
            return;
        }
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

    fn references_text(&self, out: &mut String) {
        if self.references.is_empty() {
            return;
        }
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

    fn indexes_text(&self, out: &mut String) {
        if self.indexes.is_empty() {
            return;
        }
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
}

/// A count the server may not have given: `?` then.
pub(super) fn unknown(v: Option<u64>) -> String {
    v.map_or_else(|| "?".into(), |v| v.to_string())
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

/// `1234567` as `1,234,567`.
pub(super) fn group(n: u64) -> String {
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
