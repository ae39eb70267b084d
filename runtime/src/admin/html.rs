//! Pictures for where people would rather look than read: the doctor's
//! report and the schema as one self-contained HTML page each (inline SVG,
//! no script, nothing fetched), readable offline and in a headless browser.

use crate::admin::doctor::{Bin, DoctorReport, Severity};
use crate::error::MAX_DOCUMENT_BYTES;
use crate::schema::document::{RelationKind, Schema};
use crate::schema::registry::sorted;

/// Escapes text for HTML and SVG.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Escapes text, and shows its `backticked` spans as code.
fn rich(text: &str) -> String {
    let mut out = String::new();
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 1 {
            out.push_str(&format!("<code>{}</code>", escape(part)));
        } else {
            out.push_str(&escape(part));
        }
    }
    out
}

const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#1d2330;\
max-width:1140px}h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid \
#dde2ea;padding-bottom:4px}.sub{color:#5b6474;font-size:13px}table{border-collapse:collapse;font-size:13px;width:100%}\
td,th{border-bottom:1px solid #e6e9ef;padding:4px 6px;text-align:left;vertical-align:top}td.k{white-space:nowrap}th{background:#f4f6f9}\
.sev{font-weight:600;border-radius:3px;padding:1px 6px;font-size:12px;color:#fff}.error{background:#c62828}\
.warning{background:#e08a00}.info{background:#3d6fb6}.grid{display:flex;flex-wrap:wrap;gap:12px}.card{border:1px \
solid #dde2ea;border-radius:6px;padding:8px 10px}.card h3{font-size:13px;margin:0 0 2px}.card p{margin:0;font-size:\
12px;color:#5b6474}code{font-size:12px}ul{font-size:13px;margin:4px 0}";

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
    let lo = crate::admin::doctor::LOG2_FIRST;
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

/// An entity of the diagram: one document type (a collection shared by
/// two types has two, never merged).
struct Node {
    schema: &'static Schema,
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

/// The schema as an SVG diagram: one box per document type, with its
/// relationship fields, and an arrow per reference, parent reference and
/// subset.
pub fn schema_svg(schemas: &[&'static Schema]) -> String {
    let n = schemas.len().max(1);
    let cols = (n as f64).sqrt().ceil() as usize;
    let (cw, ch, bw) = (270.0, 190.0, 210.0);
    let mut nodes: Vec<Node> = Vec::new();
    for (i, s) in schemas.iter().enumerate() {
        let lines = 2 + s.relations.len() + s.copies.len();
        let h = 20.0 + 15.0 * lines as f64;
        nodes.push(Node { schema: s, x: 20.0 + (i % cols) as f64 * cw, y: 20.0 + (i / cols) as f64 * ch, w: bw, h });
    }
    let width = 40.0 + cols as f64 * cw;
    let height = 40.0 + n.div_ceil(cols) as f64 * ch;
    let mut svg = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' viewBox='0 0 {width} {height}' \
         role='img' font-family='system-ui,sans-serif'><defs><marker id='arrow' viewBox='0 0 10 10' refX='9' refY='5' \
         markerWidth='7' markerHeight='7' orient='auto-start-reverse'><path d='M0,0 L10,5 L0,10 z' fill='#5b6474'/>\
         </marker></defs>"
    );
    let find = |collection: &str, type_name: Option<&str>, from: &Schema| -> Option<usize> {
        let candidates: Vec<usize> =
            nodes.iter().enumerate().filter(|(_, n)| n.schema.collection == collection).map(|(i, _)| i).collect();
        let named: Vec<usize> =
            candidates.iter().copied().filter(|i| Some(nodes[*i].schema.rust_name) == type_name).collect();
        named
            .iter()
            .copied()
            .find(|i| nodes[*i].schema.module == from.module)
            .or_else(|| named.first().copied())
            .or_else(|| candidates.first().copied())
    };
    let mut edges = String::new();
    // Edges already drawn between two boxes: the next one is drawn beside them.
    let mut drawn: Vec<(usize, usize)> = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        for rel in node.schema.relations {
            let (target, label) = match (rel.kind, &rel.subset) {
                (_, Some(sub)) => {
                    (find(sub.child, Some(sub.child_type), node.schema), format!("{} (subset)", rel.field))
                }
                (RelationKind::RefMany { .. } | RelationKind::RefOne { .. } | RelationKind::ParentRef, _) => {
                    (rel.target.and_then(|t| find(t, rel.target_type, node.schema)), rel.field.to_owned())
                }
                _ => (None, String::new()),
            };
            let Some(j) = target else { continue };
            let (a, b) = (&nodes[i], &nodes[j]);
            let (ax, ay) = (a.x + a.w / 2.0, a.y + a.h / 2.0);
            let (bx, by) = (b.x + b.w / 2.0, b.y + b.h / 2.0);
            if i == j {
                continue;
            }
            // From the edge of one box to the edge of the other.
            let clip = |cx: f64, cy: f64, n: &Node, dx: f64, dy: f64| {
                let sx = if dx != 0.0 { (n.w / 2.0) / dx.abs() } else { f64::INFINITY };
                let sy = if dy != 0.0 { (n.h / 2.0) / dy.abs() } else { f64::INFINITY };
                let s = sx.min(sy);
                (cx + dx * s, cy + dy * s)
            };
            let pair = (i.min(j), i.max(j));
            let k = drawn.iter().filter(|p| **p == pair).count() as f64;
            drawn.push(pair);
            let (dx, dy) = (bx - ax, by - ay);
            let len = (dx * dx + dy * dy).sqrt().max(1.0);
            // Perpendicular offset of 14 px per earlier edge between the same boxes.
            let (ox, oy) = (-dy / len * 14.0 * k, dx / len * 14.0 * k);
            let (x1, y1) = clip(ax, ay, a, dx, dy);
            let (x2, y2) = clip(bx, by, b, -dx, -dy);
            let (x1, y1, x2, y2) = (x1 + ox, y1 + oy, x2 + ox, y2 + oy);
            let dash = if rel.subset.is_some() { " stroke-dasharray='5 3'" } else { "" };
            edges.push_str(&format!(
                "<line x1='{x1:.1}' y1='{y1:.1}' x2='{x2:.1}' y2='{y2:.1}' stroke='#5b6474' stroke-width='1.4'{dash} \
                 marker-end='url(#arrow)'/><text x='{:.1}' y='{:.1}' font-size='11' fill='#1d2330' \
                 text-anchor='middle' paint-order='stroke' stroke='#fff' stroke-width='3'>{}</text>",
                (x1 + x2) / 2.0,
                (y1 + y2) / 2.0 - 3.0,
                escape(&label)
            ));
        }
    }
    for node in &nodes {
        let s = node.schema;
        let shared = schemas.iter().filter(|o| o.collection == s.collection).count() > 1;
        svg.push_str(&format!(
            "<rect x='{}' y='{}' width='{}' height='{}' rx='6' fill='#f4f6f9' stroke='{}' stroke-width='1.5'/>\
             <text x='{}' y='{}' font-size='13' font-weight='600'>{}</text>\
             <text x='{}' y='{}' font-size='11' fill='#5b6474'>{}</text>",
            node.x,
            node.y,
            node.w,
            node.h,
            if shared { "#e08a00" } else { "#8a93a3" },
            node.x + 8.0,
            node.y + 17.0,
            escape(s.collection),
            node.x + 8.0,
            node.y + 32.0,
            escape(&format!(
                "{}{}",
                s.rust_name,
                if shared { format!(" ({})", s.module.rsplit("::").next().unwrap_or(s.module)) } else { String::new() }
            ))
        ));
        let mut y = node.y + 48.0;
        for rel in s.relations {
            svg.push_str(&format!(
                "<text x='{}' y='{y}' font-size='11'>{}</text>",
                node.x + 8.0,
                escape(
                    &format!("{}: {}", rel.field, crate::schema::registry::describe(rel))
                        .chars()
                        .take(34)
                        .collect::<String>()
                )
            ));
            y += 15.0;
        }
        for c in s.copies {
            svg.push_str(&format!(
                "<text x='{}' y='{y}' font-size='11' fill='#2f7a5e'>{}</text>",
                node.x + 8.0,
                escape(&format!("{} = {}.{}", c.field, c.source_type, c.source_field))
            ));
            y += 15.0;
        }
    }
    svg.push_str(&edges);
    svg.push_str("</svg>");
    svg
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>{}</title><style>{STYLE}</style></head>\
         <body>{body}</body></html>\n",
        escape(title)
    )
}

/// The schema as one HTML page: the diagram, then the Markdown report.
pub fn schema_page() -> String {
    let schemas = sorted();
    let body = format!(
        "<h1>Schema</h1><p class='sub'>{} document types; boxes are types (a collection two types share is drawn \
         twice, outlined in orange), arrows are references, parent references and subsets (dashed).</p>{}\
         <h2>Report</h2><pre>{}</pre>",
        schemas.len(),
        schema_svg(&schemas),
        escape(&crate::admin::report::schema_report())
    );
    page("docrel schema", &body)
}

/// The doctor's report as one HTML page: findings, histograms of array
/// lengths against their bounds and of document sizes against 16 MiB, the
/// other measurements, and the schema diagram.
pub fn doctor_page(report: &DoctorReport) -> String {
    let mut body = format!(
        "<h1>docrel doctor</h1><p class='sub'>database <code>{}</code> · {} · collections above {} documents \
         sampled</p>",
        escape(&report.database),
        escape(&report.at),
        report.sample_limit
    );
    body.push_str("<h2>Findings</h2>");
    if report.findings.is_empty() {
        body.push_str("<p>None: the data follows the rules of thumb.</p>");
    } else {
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
    if !report.arrays.is_empty() {
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
                escape(&a.kind),
                length_histogram(&a.lengths.histogram, a.declared_max, a.threshold, a.lengths.p99),
                a.lengths.p50,
                a.lengths.p99,
                a.lengths.max,
                escape(&a.coverage.describe())
            ));
        }
        body.push_str("</div>");
    }
    if !report.sizes.is_empty() {
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
    if !report.copies.is_empty() {
        body.push_str(
            "<h2>Rule 5: writes of copied sources, reads of their copies</h2><table><tr><th>copy</th>\
                       <th>source writes</th><th>holder reads</th><th>from</th></tr>",
        );
        for c in &report.copies {
            let show = |v: Option<u64>| v.map_or_else(|| "?".into(), |v| v.to_string());
            body.push_str(&format!(
                "<tr><td><code>{}</code> ← <code>{}.{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&c.copy),
                escape(&c.source),
                escape(&c.fields.join(", ")),
                show(c.writes),
                show(c.reads),
                escape(&c.measured_from)
            ));
        }
        body.push_str("</table>");
    }
    if !report.references.is_empty() {
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
                escape(&r.kind),
                r.ids_checked,
                r.documents,
                escape(&r.coverage.describe())
            ));
        }
        body.push_str("</table>");
    }
    if !report.indexes.is_empty() {
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
    body.push_str("<h2>Schema</h2>");
    body.push_str(&schema_svg(&sorted()));
    body.push_str("<h2>How it was measured</h2><ul>");
    for n in &report.notes {
        body.push_str(&format!("<li>{}</li>", rich(n)));
    }
    body.push_str("</ul>");
    page("docrel doctor", &body)
}
