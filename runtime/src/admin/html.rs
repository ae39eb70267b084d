//! Pictures for where people would rather look than read: the schema as
//! one self-contained HTML page (inline SVG, no script, nothing fetched),
//! readable offline and in a headless browser, and the pieces the doctor's
//! page ([`crate::admin::doctor::doctor_page`]) is made of too.

use crate::admin::report::{entity_of, module_name};
use crate::schema::document::{RelationKind, Schema};
use crate::schema::registry::describe;

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
pub(crate) fn rich(text: &str) -> String {
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
    for node in &nodes {
        let shared = schemas.iter().filter(|o| o.collection == node.schema.collection).count() > 1;
        svg.push_str(&node_box(node, shared));
    }
    svg.push_str(&edges(schemas, &nodes));
    svg.push_str("</svg>");
    svg
}

/// The arrows of the diagram, each from the box of the type declaring the
/// relationship to the box of the type it leads to.
fn edges(schemas: &[&'static Schema], nodes: &[Node]) -> String {
    let mut edges = String::new();
    // Edges already drawn between two boxes: the next one is drawn beside them.
    let mut drawn: Vec<(usize, usize)> = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        for rel in node.schema.relations {
            let (target, label) = match (rel.kind, &rel.subset) {
                (_, Some(sub)) => (
                    entity_of(schemas, sub.child, Some(sub.child_type), node.schema),
                    format!("{} (subset)", rel.field),
                ),
                (RelationKind::RefMany { .. } | RelationKind::RefOne { .. } | RelationKind::ParentRef, _) => {
                    (rel.target.and_then(|t| entity_of(schemas, t, rel.target_type, node.schema)), rel.field.to_owned())
                }
                _ => (None, String::new()),
            };
            let Some(j) = target.filter(|j| *j != i) else { continue };
            let pair = (i.min(j), i.max(j));
            let beside = drawn.iter().filter(|p| **p == pair).count() as f64;
            drawn.push(pair);
            edges.push_str(&arrow(&nodes[i], &nodes[j], beside, rel.subset.is_some(), &label));
        }
    }
    edges
}

/// An arrow from the edge of box `a` to the edge of box `b`, set 14 px
/// aside per earlier arrow between them (`beside`), dashed for a subset.
fn arrow(a: &Node, b: &Node, beside: f64, dashed: bool, label: &str) -> String {
    let (ax, ay) = (a.x + a.w / 2.0, a.y + a.h / 2.0);
    let (bx, by) = (b.x + b.w / 2.0, b.y + b.h / 2.0);
    let clip = |cx: f64, cy: f64, n: &Node, dx: f64, dy: f64| {
        let sx = if dx != 0.0 { (n.w / 2.0) / dx.abs() } else { f64::INFINITY };
        let sy = if dy != 0.0 { (n.h / 2.0) / dy.abs() } else { f64::INFINITY };
        let s = sx.min(sy);
        (cx + dx * s, cy + dy * s)
    };
    let (dx, dy) = (bx - ax, by - ay);
    let len = (dx * dx + dy * dy).sqrt().max(1.0);
    let (ox, oy) = (-dy / len * 14.0 * beside, dx / len * 14.0 * beside);
    let (x1, y1) = clip(ax, ay, a, dx, dy);
    let (x2, y2) = clip(bx, by, b, -dx, -dy);
    let (x1, y1, x2, y2) = (x1 + ox, y1 + oy, x2 + ox, y2 + oy);
    let dash = if dashed { " stroke-dasharray='5 3'" } else { "" };
    format!(
        "<line x1='{x1:.1}' y1='{y1:.1}' x2='{x2:.1}' y2='{y2:.1}' stroke='#5b6474' stroke-width='1.4'{dash} \
         marker-end='url(#arrow)'/><text x='{:.1}' y='{:.1}' font-size='11' fill='#1d2330' \
         text-anchor='middle' paint-order='stroke' stroke='#fff' stroke-width='3'>{}</text>",
        (x1 + x2) / 2.0,
        (y1 + y2) / 2.0 - 3.0,
        escape(label)
    )
}

/// The box of one type: its collection, its name (with its module when
/// another type shares the collection, outlined in orange), its
/// relationships and its copies.
fn node_box(node: &Node, shared: bool) -> String {
    let s = node.schema;
    let mut svg = format!(
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
        escape(&format!("{}{}", s.rust_name, if shared { format!(" ({})", module_name(s)) } else { String::new() }))
    );
    let mut y = node.y + 48.0;
    for rel in s.relations {
        let line: String = format!("{}: {}", rel.field, describe(rel)).chars().take(34).collect();
        svg.push_str(&format!("<text x='{}' y='{y}' font-size='11'>{}</text>", node.x + 8.0, escape(&line)));
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
    svg
}

/// A page of `body` with the house style.
pub(crate) fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>{}</title><style>{STYLE}</style></head>\
         <body>{body}</body></html>\n",
        escape(title)
    )
}

/// The schema as one HTML page: the diagram, then the Markdown report.
pub fn schema_page() -> String {
    schema_page_of(&crate::schema::graph::graph().types())
}

/// [`schema_page`] of `schemas` (a database's types, with those other
/// programs published there).
pub(crate) fn schema_page_of(schemas: &[&'static Schema]) -> String {
    let body = format!(
        "<h1>Schema</h1><p class='sub'>{} document types; boxes are types (a collection two types share is drawn \
         twice, outlined in orange), arrows are references, parent references and subsets (dashed).</p>{}\
         <h2>Report</h2><pre>{}</pre>",
        schemas.len(),
        schema_svg(schemas),
        escape(&crate::admin::report::report_of(schemas))
    );
    page("docrel schema", &body)
}
