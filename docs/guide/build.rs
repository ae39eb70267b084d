//! Prepares the book's pages for rustdoc, which runs their snippets as
//! doctests (`lib.rs`):
//!
//! - expands mdBook's `{{#include PATH}}` and `{{#include PATH:ANCHOR}}`
//!   (paths relative to the page, anchors as `// ANCHOR: name` /
//!   `// ANCHOR_END: name` lines, which are dropped), so a snippet is the
//!   examples' code itself, exactly as `mdbook build` shows it;
//! - collects each JSON block announced by `<!-- stored: NAME -->` into a
//!   constant `shown::NAME`, which the page's doctest compares with the
//!   document it reads back from the server, so the JSON cannot drift.
//!
//! A missing file or anchor fails the build, naming the page and line.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let src = here.join("src");
    println!("cargo:rerun-if-changed={}", src.display());
    let mut pages = Vec::new();
    collect(&src, &mut pages);
    pages.sort();
    let mut shown = String::new();
    for page in &pages {
        println!("cargo:rerun-if-changed={}", page.display());
        let text = std::fs::read_to_string(page).unwrap_or_else(|e| panic!("reading {}: {e}", page.display()));
        let expanded = expand(page, &text);
        collect_shown(page, &expanded, &mut shown);
        let rel = page.strip_prefix(&src).expect("a page under src");
        let dest = out.join("pages").join(rel);
        std::fs::create_dir_all(dest.parent().expect("a page has a folder")).expect("creating OUT_DIR/pages");
        std::fs::write(&dest, expanded).expect("writing an expanded page");
    }
    std::fs::write(out.join("shown.rs"), shown).expect("writing shown.rs");
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

/// The page with every `{{#include ..}}` replaced by the text it names.
fn expand(page: &Path, text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        match trimmed.strip_prefix("{{#include ").and_then(|rest| rest.strip_suffix("}}")) {
            Some(target) => {
                let target = target.trim();
                // `path:anchor`; a path has no `:` of its own here.
                let (path, anchor) = match target.split_once(':') {
                    Some((p, a)) => (p, Some(a)),
                    None => (target, None),
                };
                let file = page.parent().expect("a page has a folder").join(path);
                println!("cargo:rerun-if-changed={}", file.display());
                let body = std::fs::read_to_string(&file)
                    .unwrap_or_else(|e| panic!("{}:{}: cannot include {}: {e}", page.display(), n + 1, file.display()));
                let region = match anchor {
                    None => body.lines().filter(|l| !is_anchor_line(l)).map(|l| format!("{l}\n")).collect(),
                    Some(anchor) => region(&body, anchor).unwrap_or_else(|| {
                        panic!("{}:{}: {} has no anchor `{anchor}`", page.display(), n + 1, file.display())
                    }),
                };
                out.push_str(&region);
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

fn is_anchor_line(line: &str) -> bool {
    line.contains("ANCHOR:") || line.contains("ANCHOR_END:")
}

/// The lines between `ANCHOR: name` and `ANCHOR_END: name`, without anchor lines.
fn region(body: &str, anchor: &str) -> Option<String> {
    let start = format!("ANCHOR: {anchor}");
    let end = format!("ANCHOR_END: {anchor}");
    let mut lines = body.lines();
    lines.by_ref().find(|l| l.trim_end().ends_with(&start))?;
    let mut out = String::new();
    for l in lines {
        if l.trim_end().ends_with(&end) {
            return Some(out);
        }
        if !is_anchor_line(l) {
            out.push_str(l);
            out.push('\n');
        }
    }
    None
}

/// `<!-- stored: NAME -->` then a ```json block: `pub const NAME: &str`.
fn collect_shown(page: &Path, text: &str, out: &mut String) {
    let mut lines = text.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        let Some(name) = line.trim().strip_prefix("<!-- stored:").and_then(|r| r.strip_suffix("-->")) else {
            continue;
        };
        let name = name.trim();
        match lines.next() {
            Some((_, fence)) if fence.trim() == "```json" => {}
            _ => panic!("{}:{}: `<!-- stored: {name} -->` must be followed by a ```json block", page.display(), n + 1),
        }
        let mut json = String::new();
        for (_, l) in lines.by_ref() {
            if l.trim() == "```" {
                break;
            }
            json.push_str(l);
            json.push('\n');
        }
        let _ = writeln!(out, "/// The JSON shown in `{}`.", page.file_name().and_then(|f| f.to_str()).unwrap_or("?"));
        let _ = writeln!(out, "pub const {name}: &str = r####\"{json}\"####;");
    }
}
