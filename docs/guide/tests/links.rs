//! No broken link in the guide: every relative link of every page (and of
//! the repository's README, CONTRIBUTING.md, `docs/*.md` and the attribute
//! reference) names a file that exists, and its `#anchor` a
//! heading of that page (mdBook's ids: lower case, spaces to `-`,
//! punctuation dropped). Every page is in SUMMARY.md, and SUMMARY.md names
//! no missing page. External links (`http`, `https`, `mailto`) are not
//! fetched: the machine that runs the tests may be offline.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn pages(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("reading the guide's src").flatten() {
        let path = entry.path();
        if path.is_dir() {
            pages(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

/// The text outside fenced code blocks and inline code, line by line.
fn prose(text: &str) -> Vec<(usize, String)> {
    outside_fences(text).into_iter().map(|(n, line)| (n, without_code(&line))).collect()
}

/// The lines outside fenced code blocks.
fn outside_fences(text: &str) -> Vec<(usize, String)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        out.push((n + 1, line.to_owned()));
    }
    out
}

/// A line without its inline code spans.
fn without_code(line: &str) -> String {
    let mut kept = String::new();
    let mut in_code = false;
    for ch in line.chars() {
        if ch == '`' {
            in_code = !in_code;
        } else if !in_code {
            kept.push(ch);
        }
    }
    kept
}

/// The targets of `[text](target)` links on a line.
fn links(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        match after.find(')') {
            Some(j) => {
                let target = after[..j].split_whitespace().next().unwrap_or("").to_owned();
                out.push(target);
                rest = &after[j..];
            }
            None => break,
        }
    }
    out
}

/// mdBook's id of a heading.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown file: its headings' ids (repeated ones get
/// `-1`, `-2`, as mdBook does).
fn anchors(file: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let mut out = BTreeSet::new();
    for (_, line) in outside_fences(&text) {
        if let Some(h) = line.strip_prefix('#') {
            let base = slug(h.trim_start_matches('#'));
            let mut id = base.clone();
            let mut k = 1;
            while out.contains(&id) {
                id = format!("{base}-{k}");
                k += 1;
            }
            out.insert(id);
        }
    }
    out
}

fn check_file(file: &Path, problems: &mut Vec<String>) {
    let text = std::fs::read_to_string(file).expect("reading a page");
    for (n, line) in prose(&text) {
        for target in links(&line) {
            if target.is_empty() {
                problems.push(format!("{}:{n}: an empty link", file.display()));
                continue;
            }
            if target.starts_with("http://") || target.starts_with("https://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let dest = if path.is_empty() { file.to_path_buf() } else { file.parent().unwrap_or(file).join(path) };
            if !dest.exists() {
                problems.push(format!("{}:{n}: `{target}`: {} does not exist", file.display(), dest.display()));
                continue;
            }
            if let Some(anchor) = anchor {
                if dest.extension().is_some_and(|e| e == "md") && !anchors(&dest).contains(anchor) {
                    problems.push(format!(
                        "{}:{n}: `{target}`: no heading of {} has the id `{anchor}` (it has: {:?})",
                        file.display(),
                        dest.display(),
                        anchors(&dest)
                    ));
                }
            }
        }
    }
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let mut files = Vec::new();
    pages(&src(), &mut files);
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for doc in ["README.md", "CONTRIBUTING.md", "src/attributes.md"] {
        files.push(repo.join(doc));
    }
    for entry in std::fs::read_dir(repo.join("docs")).expect("reading docs/").flatten() {
        if entry.path().extension().is_some_and(|e| e == "md") {
            files.push(entry.path());
        }
    }
    let mut problems = Vec::new();
    for f in &files {
        check_file(f, &mut problems);
    }
    assert!(problems.is_empty(), "broken links:\n{}", problems.join("\n"));
}

#[test]
fn summary_lists_every_page() {
    let mut files = Vec::new();
    pages(&src(), &mut files);
    let summary = std::fs::read_to_string(src().join("SUMMARY.md")).expect("SUMMARY.md");
    let listed: BTreeSet<PathBuf> = prose(&summary)
        .iter()
        .flat_map(|(_, l)| links(l))
        .map(|t| src().join(t.split('#').next().unwrap_or("")))
        .collect();
    for f in files.iter().filter(|f| !f.ends_with("SUMMARY.md")) {
        assert!(listed.contains(f), "{} is not in SUMMARY.md", f.display());
    }
    for l in &listed {
        assert!(l.exists(), "SUMMARY.md names {}, which does not exist", l.display());
    }
}

#[test]
fn slugs_follow_mdbook() {
    assert_eq!(slug("Cost in round trips"), "cost-in-round-trips");
    assert_eq!(slug("N:M, two-way (`inverse`)"), "nm-two-way-inverse");
}
