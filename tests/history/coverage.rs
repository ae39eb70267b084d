//! What the checker must generate, read from docrel's sources: the public
//! methods of the repository, of the relation handles and of the update
//! builders. A simple reader (comments and literals blanked, braces
//! counted), like the house checker's: it finds every inherent `impl` of a
//! type, including those written inside `macro_rules!` for several types,
//! and the `pub fn`s directly inside it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The types whose public methods are writes unless [`NOT_WRITES`] says
/// otherwise, and the folders (under `runtime/src`) that implement them.
pub const WRITERS: &[(&str, &str)] = &[
    ("Repository", "repository"),
    ("Call", "repository"),
    ("RefMany", "relations"),
    ("RefOne", "relations"),
    ("ParentRef", "relations"),
    ("LinkWrite", "relations"),
    ("Subset", "patterns"),
    ("Bucket", "patterns"),
];

/// Public methods of [`WRITERS`] that write no document: reads, handles'
/// descriptions, setup. Every entry must still exist (the coverage test
/// checks), so the list cannot go stale; a new method is a write until
/// it is listed here.
pub const NOT_WRITES: &[(&str, &str)] = &[
    ("Repository", "new"),
    ("Repository", "database"),
    ("Repository", "collection"),
    ("Repository", "raw"),
    ("Repository", "find"),
    ("Repository", "get"),
    ("Repository", "require"),
    ("Repository", "count"),
    ("Repository", "ensure_indexes"),
    ("Repository", "ensure_validator"),
    ("RefMany", "new"),
    ("RefMany", "relation"),
    ("RefMany", "for_each_id"),
    ("RefMany", "ids"),
    ("RefMany", "of"),
    ("RefMany", "load"),
    ("RefMany", "load_where"),
    ("RefMany", "with_parents"),
    ("RefMany", "referrers_of_many"),
    ("RefMany", "referrers"),
    ("RefOne", "new"),
    ("RefOne", "relation"),
    ("RefOne", "for_each_id"),
    ("RefOne", "ids"),
    ("RefOne", "of"),
    ("RefOne", "load"),
    ("RefOne", "load_where"),
    ("RefOne", "with_parents"),
    ("RefOne", "referrers_of_many"),
    ("ParentRef", "new"),
    ("ParentRef", "relation"),
    ("ParentRef", "for_each_id"),
    ("ParentRef", "ids"),
    ("ParentRef", "children_of"),
    ("ParentRef", "children_of_many"),
    ("ParentRef", "latest_per_parent"),
    ("ParentRef", "parent_of"),
    ("ParentRef", "filter"),
    ("ParentRef", "order"),
    ("Subset", "new"),
    ("Subset", "relation"),
    ("Subset", "check"),
    ("Bucket", "new"),
    ("Bucket", "relation"),
    ("Bucket", "page"),
    ("Bucket", "latest"),
    ("Bucket", "all"),
    ("Bucket", "range"),
];

/// A public method of an inherent `impl`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Method {
    /// The implementing type (`Repository`), or `$name` inside a macro.
    pub ty: String,
    pub name: String,
    /// The signature, from `pub` to the body's `{` (whitespace collapsed).
    pub signature: String,
}

/// The workspace's root (the `docrel` package).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`, sorted.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// `src` with comments, string and char literals blanked (same length,
/// newlines kept), so that braces can be counted and words found.
pub fn code_only(src: &str) -> String {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        match skipped_end(&b, i) {
            Some(end) => {
                out.extend(b[i..end].iter().map(|c| if *c == '\n' { '\n' } else { ' ' }));
                i = end;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    out
}

/// Where the comment or literal starting at `i` ends (just past it), if one does.
fn skipped_end(b: &[char], i: usize) -> Option<usize> {
    let at = |k: usize| b.get(k).copied();
    let end = match (b[i], at(i + 1)) {
        ('/', Some('/')) => (i..b.len()).find(|k| b[*k] == '\n').unwrap_or(b.len()),
        ('/', Some('*')) => {
            let (mut depth, mut k) = (0, i);
            while k < b.len() {
                match (b[k], at(k + 1)) {
                    ('/', Some('*')) => (depth, k) = (depth + 1, k + 2),
                    ('*', Some('/')) if depth == 1 => return Some(k + 2),
                    ('*', Some('/')) => (depth, k) = (depth - 1, k + 2),
                    _ => k += 1,
                }
            }
            b.len()
        }
        // A raw string: r"..", r#".."# (not the end of a word like `for`).
        ('r', Some('"' | '#')) if !(i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')) => {
            let hashes = b[i + 1..].iter().take_while(|c| **c == '#').count();
            let open = i + 1 + hashes;
            if at(open) != Some('"') {
                return None;
            }
            let closes = |k: usize| at(k) == Some('"') && (1..=hashes).all(|h| at(k + h) == Some('#'));
            let close = (open + 1..b.len()).find(|k| closes(*k)).unwrap_or(b.len());
            (close + 1 + hashes).min(b.len())
        }
        ('"', _) => {
            let mut k = i + 1;
            while k < b.len() && b[k] != '"' {
                k += if b[k] == '\\' { 2 } else { 1 };
            }
            (k + 1).min(b.len())
        }
        // A char literal ('x', '\n', '\u{..}'); a lifetime has no closing quote.
        ('\'', Some('\\')) => (i + 3..b.len()).find(|k| b[*k] == '\'').map_or(b.len(), |k| k + 1),
        ('\'', Some(_)) if at(i + 2) == Some('\'') => i + 3,
        _ => return None,
    };
    Some(end)
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// Whether `code[at..]` starts the word `w` (not inside a longer word).
fn word_at(code: &[char], at: usize, w: &str) -> bool {
    let n = w.chars().count();
    at + n <= code.len()
        && code[at..at + n].iter().copied().eq(w.chars())
        && (at == 0 || !is_word(code[at - 1]))
        && code.get(at + n).is_none_or(|c| !is_word(*c))
}

/// The index just past the group opened at `open` (`<`, `(`, `{` or `[`).
fn skip_group(code: &[char], open: usize) -> usize {
    let (o, c) = match code[open] {
        '<' => ('<', '>'),
        '(' => ('(', ')'),
        '[' => ('[', ']'),
        _ => ('{', '}'),
    };
    let mut depth = 0;
    let mut i = open;
    while i < code.len() {
        let ch = code[i];
        // `->` inside generics closes nothing.
        if ch == c && !(c == '>' && i > 0 && code[i - 1] == '-') {
            depth -= 1;
            if depth == 0 {
                return i + 1;
            }
        } else if ch == o {
            depth += 1;
        }
        i += 1;
    }
    code.len()
}

fn skip_space(code: &[char], mut i: usize) -> usize {
    while i < code.len() && code[i].is_whitespace() {
        i += 1;
    }
    i
}

/// Whether the `impl` at `at` starts an item: nothing before it but the end
/// of another item, a block's start or an attribute (not `-> impl Trait`).
fn starts_item(code: &[char], at: usize) -> bool {
    let before: String = code[..at].iter().rev().skip_while(|c| c.is_whitespace()).take(6).collect();
    match before.chars().next() {
        None => true,
        Some(c) => matches!(c, '}' | ';' | '{' | ']') || before.starts_with("efasnu"),
    }
}

/// The public methods of every inherent `impl` in `code` (see [`code_only`]).
pub fn public_methods(code: &str) -> Vec<Method> {
    let code: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < code.len() {
        if !(word_at(&code, i, "impl") && starts_item(&code, i)) {
            i += 1;
            continue;
        }
        let mut j = skip_space(&code, i + 4);
        if code.get(j) == Some(&'<') {
            j = skip_group(&code, j);
        }
        // The header up to the body, generics left out: `Type`,
        // `Trait for Type` or `Type where ..`.
        let mut head = String::new();
        let mut body = None;
        let mut k = j;
        while k < code.len() {
            match code[k] {
                '{' => {
                    body = Some(k);
                    break;
                }
                ';' => break,
                '<' | '(' | '[' => {
                    head.push(' ');
                    k = skip_group(&code, k);
                }
                c => {
                    head.push(c);
                    k += 1;
                }
            }
        }
        let words: Vec<&str> =
            head.split(|c: char| !is_word(c)).filter(|w| !w.is_empty()).take_while(|w| *w != "where").collect();
        let is_trait_impl = words.contains(&"for");
        let last = words.last().copied().unwrap_or_default().to_owned();
        let Some(open) = body else {
            i = k.max(i + 4);
            continue;
        };
        let close = skip_group(&code, open);
        if !is_trait_impl {
            out.extend(methods_in(&code[open + 1..close.saturating_sub(1)], &last));
        }
        i = close;
    }
    out
}

/// The `pub fn`s directly inside an impl's body.
fn methods_in(body: &[char], ty: &str) -> Vec<Method> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            '{' => i = skip_group(body, i),
            _ if word_at(body, i, "pub") && body.get(i + 3).is_some_and(|c| c.is_whitespace()) => {
                let mut j = skip_space(body, i + 3);
                for qualifier in ["const", "async", "unsafe"] {
                    if word_at(body, j, qualifier) {
                        j = skip_space(body, j + qualifier.len());
                    }
                }
                if word_at(body, j, "fn") {
                    let start = skip_space(body, j + 2);
                    let mut end = start;
                    while end < body.len() && is_word(body[end]) {
                        end += 1;
                    }
                    let mut sig_end = end;
                    while sig_end < body.len() && body[sig_end] != '{' && body[sig_end] != ';' {
                        if matches!(body[sig_end], '<' | '(') {
                            sig_end = skip_group(body, sig_end);
                        } else {
                            sig_end += 1;
                        }
                    }
                    let signature =
                        body[i..sig_end].iter().collect::<String>().split_whitespace().collect::<Vec<_>>().join(" ");
                    out.push(Method { ty: ty.to_owned(), name: body[start..end].iter().collect(), signature });
                    i = sig_end;
                } else {
                    i = j;
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// The types a `macro_rules! name` is invoked for: the last word of each
/// `name! { .. }` / `name!(..)` in `code`.
pub fn macro_invocations(code: &str, name: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let bang = format!("{name}!");
    let mut i = 0;
    while i < chars.len() {
        if word_at(&chars, i, name) && chars.get(i + name.len()) == Some(&'!') {
            let open = skip_space(&chars, i + bang.len());
            if matches!(chars.get(open), Some('{' | '(')) {
                let close = skip_group(&chars, open);
                let inner: String = chars[open + 1..close - 1].iter().collect();
                if let Some(w) = inner.split(|c: char| !is_word(c)).rfind(|w| !w.is_empty()) {
                    out.push(w.to_owned());
                }
                i = close;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// The public methods of [`WRITERS`] and of the update builders, as
/// `(Type, method)`: methods written for `$name` in a macro are given to
/// each type the macro is invoked for.
pub fn public_api() -> BTreeSet<(String, String)> {
    let src = root().join("runtime/src");
    let mut out = BTreeSet::new();
    let mut dirs: Vec<&str> = WRITERS.iter().map(|(_, d)| *d).collect();
    // The update builders; the bucket appends, which keep a move's array.
    dirs.extend(["store", "denormalize"]);
    dirs.dedup();
    for dir in dirs {
        for file in rust_files(&src.join(dir)) {
            let code = code_only(&std::fs::read_to_string(&file).expect("a source file"));
            for m in public_methods(&code) {
                let types = if m.ty.starts_with('$') {
                    macros_defining(&code, &m).into_iter().flat_map(|mac| macro_invocations(&code, &mac)).collect()
                } else {
                    vec![m.ty.clone()]
                };
                for ty in types {
                    let update_builder = (ty == "Field" || ty == "Update")
                        && file.ends_with("update.rs")
                        && (m.signature.contains("-> Update<") || (ty == "Update" && m.signature.contains("-> Self")));
                    if WRITERS.iter().any(|(w, _)| *w == ty) || update_builder {
                        out.insert((ty, m.name.clone()));
                    }
                }
            }
        }
    }
    out
}

/// The `macro_rules!` whose body holds `m`'s signature.
fn macros_defining(code: &str, m: &Method) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if word_at(&chars, i, "macro_rules") {
            let name_at = skip_space(&chars, i + "macro_rules!".len());
            let mut end = name_at;
            while end < chars.len() && is_word(chars[end]) {
                end += 1;
            }
            let open = skip_space(&chars, end);
            let close = skip_group(&chars, open);
            let body: String =
                chars[open..close].iter().collect::<String>().split_whitespace().collect::<Vec<_>>().join(" ");
            if body.contains(&m.signature) {
                out.push(chars[name_at..end].iter().collect());
            }
            i = close;
        } else {
            i += 1;
        }
    }
    out
}
