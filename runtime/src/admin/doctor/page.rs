//! The doctor's report as one self-contained HTML page (inline SVG, no
//! script, nothing fetched): the findings, histograms of array lengths
//! against their bound and rule-3 threshold and of document sizes against
//! 16 MiB, the other measurements, and the schema diagram.

use super::report::{Bin, DoctorReport, Severity, LOG2_FIRST};
use super::text::unknown;
use crate::admin::html::{escape, page, rich, schema_svg};
use crate::error::MAX_DOCUMENT_BYTES;

/// The SVG histogram of array lengths against the declared bound and the
/// rule-3 threshold (vertical lines).
pub fn length_histogram(bins: &[Bin], bound: Option<u64>, threshold: Option<u64>, p99: u64) -> String {
    let (w, h, left, bottom) = (340.0, 130.0, 34.0, 22.0);
    let top_value = bins.last().map_or(1, |b| b.hi + 1).max(bound.unwrap_or(0)).max(1) as f64;
    let x = |v: f64| left + (w - left - 8.0) * v / top_value;
    let most = bins.iter().map(|b| b.count).max().unwrap_or(1).max(1) as f64;
    let mut svg = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' viewBox='0 0 {w} {h}' role='img'>\
         <line x1='{left}' y1='{y0}' x2='{x1}' y2='{y0}' stroke='#8a93a3'/>",
        y0 = h - bottom,
        x1 = w - 8.0
    );
    for b in bins {
        let bh = (h - bottom - 14.0) * b.count as f64 / most;
        let (x0, x1) = (x(b.lo as f64), x((b.hi + 1) as f64));
        svg.push_str(&format!(
            "<rect x='{:.1}' y='{:.1}' width='{:.1}' height='{:.1}' fill='#4a78c2'><title>{}-{}: {}</title></rect>",
            x0 + 0.5,
            h - bottom - bh,
            (x1 - x0 - 1.0).max(1.0),
            bh,
            b.lo,
            b.hi,
            b.count
        ));
    }
    let mut mark = |v: u64, color: &str, label: &str| {
        let xv = x(v as f64);
        svg.push_str(&format!(
            "<line x1='{xv:.1}' y1='8' x2='{xv:.1}' y2='{:.1}' stroke='{color}' stroke-width='2' \
             stroke-dasharray='4 3'/><text x='{:.1}' y='12' font-size='10' fill='{color}' text-anchor='end'>{}</text>",
            h - bottom,
            xv - 3.0,
            escape(label)
        ));
    };
    if let Some(t) = threshold.filter(|t| (*t as f64) <= top_value) {
        mark(t, "#e08a00", &format!("rule 3: {t}"));
    }
    if let Some(b) = bound {
        mark(b, "#c62828", &format!("max {b}"));
    }
    let p = x(p99 as f64);
    svg.push_str(&format!(
        "<line x1='{p:.1}' y1='{:.1}' x2='{p:.1}' y2='{:.1}' stroke='#1d2330' stroke-width='2'/>\
         <text x='{left}' y='{:.1}' font-size='10' fill='#5b6474'>0</text>\
         <text x='{:.1}' y='{:.1}' font-size='10' fill='#5b6474' text-anchor='end'>{}</text>\
         <text x='{:.1}' y='{:.1}' font-size='10' fill='#1d2330' text-anchor='middle'>p99</text></svg>",
        h - bottom,
        h - bottom + 6.0,
        h - 6.0,
        w - 8.0,
        h - 6.0,
        top_value as u64,
        p,
        h - 6.0
    ));
    svg
}

/// The SVG histogram of document sizes on a log scale from 32 bytes to
/// 16 MiB, the limit drawn at the right end; `counts` from
/// [`crate::admin::doctor::SizeStat::log2_counts`].
pub fn size_histogram(counts: &[u64]) -> String {
    let (w, h, left, bottom) = (340.0, 130.0, 10.0, 22.0);
    let lo = LOG2_FIRST;
    let counts = if counts.is_empty() { &[0][..] } else { counts };
    let most = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
    let bw = (w - left - 10.0) / counts.len() as f64;
    let mut svg = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' viewBox='0 0 {w} {h}' role='img'>\
         <line x1='{left}' y1='{y0}' x2='{x1}' y2='{y0}' stroke='#8a93a3'/>",
        y0 = h - bottom,
        x1 = w - 10.0
    );
    for (i, c) in counts.iter().enumerate() {
        let bh = (h - bottom - 14.0) * *c as f64 / most;
        svg.push_str(&format!(
            "<rect x='{:.1}' y='{:.1}' width='{:.1}' height='{:.1}' fill='#2f9e7a'><title>{}..{} bytes: {c}</title></rect>",
            left + i as f64 * bw + 0.5,
            h - bottom - bh,
            bw - 1.0,
            bh,
            1u64 << (i as u32 + lo),
            (1u64 << (i as u32 + lo + 1)) - 1
        ));
    }
    let xl = w - 10.0;
    svg.push_str(&format!(
        "<line x1='{xl}' y1='8' x2='{xl}' y2='{:.1}' stroke='#c62828' stroke-width='2'/>\
         <text x='{:.1}' y='12' font-size='10' fill='#c62828' text-anchor='end'>16 MiB</text>\
         <text x='{left}' y='{:.1}' font-size='10' fill='#5b6474'>32 B</text>\
         <text x='{:.1}' y='{:.1}' font-size='10' fill='#5b6474' text-anchor='middle'>1 KiB</text>\
         <text x='{:.1}' y='{:.1}' font-size='10' fill='#5b6474' text-anchor='middle'>1 MiB</text></svg>",
        h - bottom,
        xl - 3.0,
        h - 6.0,
        left + 5.0 * bw,
        h - 6.0,
        left + 15.0 * bw,
        h - 6.0
    ));
    svg
}

/// The doctor's report as one HTML page: findings, histograms of array
/// lengths against their bounds and of document sizes against 16 MiB, the
/// other measurements, and the schema diagram.
pub fn doctor_page(report: &DoctorReport) -> String {
    doctor_page_of(report, &crate::schema::graph::graph().types())
}

/// [`doctor_page`] drawing `schemas` (the examined database's types, with
/// those other programs published there).
pub(crate) fn doctor_page_of(report: &DoctorReport, schemas: &[&'static crate::schema::document::Schema]) -> String {
    let mut body = format!(
        "<h1>docrel doctor</h1><p class='sub'>database <code>{}</code> · {} · collections above {} documents \
         sampled</p>",
        escape(&report.database),
        escape(&report.at),
        report.sample_limit
    );
    findings(report, &mut body);
    arrays(report, &mut body);
    sizes(report, &mut body);
    copies(report, &mut body);
    references(report, &mut body);
    indexes(report, &mut body);
    body.push_str("<h2>Schema</h2>");
    body.push_str(&schema_svg(schemas));
    body.push_str("<h2>How it was measured</h2><ul>");
    for n in &report.notes {
        body.push_str(&format!("<li>{}</li>", rich(n)));
    }
    body.push_str("</ul>");
    page("docrel doctor", &body)
}

fn findings(report: &DoctorReport, body: &mut String) {
    body.push_str("<h2>Findings</h2>");
    if report.findings.is_empty() {
        body.push_str("<p>None: the data follows the rules of thumb.</p>");
        return;
    }
    body.push_str("<table><tr><th>severity</th><th>rule</th><th>field</th><th>figure</th><th>fix</th></tr>");
    for f in &report.findings {
        let class = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        };
        body.push_str(&format!(
            "<tr><td class='k'><span class='sev {class}'>{}</span></td><td class='k'>{}</td><td class='k'><code>{}\
             </code></td><td>{}</td><td>{}</td></tr>",
            f.severity.name(),
            escape(&f.rule),
            escape(&f.field),
            rich(&f.figure),
            rich(&f.fix)
        ));
    }
    body.push_str("</table>");
}

fn arrays(report: &DoctorReport, body: &mut String) {
    if report.arrays.is_empty() {
        return;
    }
    body.push_str(
        "<h2>Array lengths</h2><p class='sub'>red: declared bound, orange: rule-3 threshold, black: p99</p>\
         <div class='grid'>",
    );
    for a in &report.arrays {
        body.push_str(&format!(
            "<div class='card'><h3>{}.{} <span class='sub'>{}</span></h3>{}<p>p50 {} · p99 {} · max {} · {}</p>\
             </div>",
            escape(&a.collection),
            escape(&a.field),
            escape(a.kind.array_word()),
            length_histogram(&a.lengths.histogram, a.declared_max, a.threshold, a.lengths.p99),
            a.lengths.p50,
            a.lengths.p99,
            a.lengths.max,
            escape(&a.coverage.describe())
        ));
    }
    body.push_str("</div>");
}

fn sizes(report: &DoctorReport, body: &mut String) {
    if report.sizes.is_empty() {
        return;
    }
    body.push_str(
        "<h2>Document sizes</h2><p class='sub'>log scale, 32 bytes to the 16 MiB limit</p><div class='grid'>",
    );
    for s in &report.sizes {
        body.push_str(&format!(
            "<div class='card'><h3>{}</h3>{}<p>p99 {} B · max {} B ({:.4}% of 16 MiB) · largest field {}</p></div>",
            escape(&s.collection),
            size_histogram(&s.log2_counts),
            s.bytes.p99,
            s.bytes.max,
            s.bytes.max as f64 * 100.0 / MAX_DOCUMENT_BYTES as f64,
            escape(&s.largest_field.as_ref().map_or_else(|| "-".into(), |(f, b)| format!("{f} ({b} B)")))
        ));
    }
    body.push_str("</div>");
}

fn copies(report: &DoctorReport, body: &mut String) {
    if report.copies.is_empty() {
        return;
    }
    body.push_str(
        "<h2>Rule 5: writes of copied sources, reads of their copies</h2><table><tr><th>copy</th>\
                   <th>source writes</th><th>holder reads</th><th>from</th></tr>",
    );
    for c in &report.copies {
        body.push_str(&format!(
            "<tr><td><code>{}</code> ← <code>{}.{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&c.copy),
            escape(&c.source),
            escape(&c.fields.join(", ")),
            unknown(c.writes),
            unknown(c.reads),
            escape(&c.writes_from())
        ));
    }
    body.push_str("</table>");
}

fn references(report: &DoctorReport, body: &mut String) {
    if report.references.is_empty() {
        return;
    }
    body.push_str(
        "<h2>References</h2><table><tr><th>field</th><th>target</th><th>missing</th><th>documents</th>\
                   <th>read</th></tr>",
    );
    for r in &report.references {
        body.push_str(&format!(
            "<tr><td><code>{}.{}</code></td><td>{}</td><td>{} {} of {}</td><td>{}</td><td>{}</td></tr>",
            escape(&r.collection),
            escape(&r.field),
            escape(&r.target),
            r.missing_ids,
            r.kind,
            r.ids_checked,
            r.documents,
            escape(&r.coverage.describe())
        ));
    }
    body.push_str("</table>");
}

fn indexes(report: &DoctorReport, body: &mut String) {
    if report.indexes.is_empty() {
        return;
    }
    body.push_str("<h2>Indexes</h2><table><tr><th>collection</th><th>keys</th><th>state</th></tr>");
    for i in &report.indexes {
        body.push_str(&format!(
            "<tr><td>{}</td><td><code>{}</code>{}</td><td>{}</td></tr>",
            escape(&i.collection),
            escape(&i.keys),
            if i.unique { " unique" } else { "" },
            escape(&i.state)
        ));
    }
    body.push_str("</table>");
}
