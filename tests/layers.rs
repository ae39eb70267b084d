//! The runtime's modules form layers and data flows one way: a module may
//! use its own folder and the layers below it, never one above, so the
//! import graph has no cycle. This test reads every `crate::` path in
//! `runtime/src` (in `use` lines and inline) and checks it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Each top-level module of the runtime and its layer (higher uses lower).
const LAYERS: &[(&str, u8)] = &[
    ("error", 0),
    ("bson_compat", 0),
    ("id", 1),
    ("kept", 1),
    ("schema", 2),
    ("client", 2),
    ("store", 3),
    ("patterns", 4),
    ("denormalize", 5),
    ("relations", 6),
    ("admin", 7),
    ("repository", 8),
    ("testing", 8),
    ("__private", 9),
    ("lib", 10),
];

fn layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read runtime/src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to (`relations/join.rs` -> `relations`).
fn owner(root: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(root).expect("under root");
    let first = rel.components().next().expect("a component").as_os_str().to_string_lossy().into_owned();
    first.trim_end_matches(".rs").to_owned()
}

/// Every `crate::x` in the code (comments are skipped: a doc link may
/// point the reader at the facade that uses a module).
fn crate_paths(text: &str) -> Vec<String> {
    let code: String = text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
    let mut out = Vec::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("crate::") {
        let tail = &rest[i + "crate::".len()..];
        let name: String = tail.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        // `use crate::{a, b}` lists: read each name.
        if tail.starts_with('{') {
            let end = tail.find('}').unwrap_or(tail.len());
            for part in tail[1..end].split(',') {
                let n: String = part.trim().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if !n.is_empty() {
                    out.push(n);
                }
            }
        } else if !name.is_empty() {
            out.push(name);
        }
        rest = &rest[i + "crate::".len()..];
    }
    out
}

#[test]
fn runtime_imports_only_flow_downward() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime/src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    assert!(files.len() > 20, "found only {} files under {}", files.len(), root.display());
    let mut violations = Vec::new();
    let mut edges: BTreeMap<(String, String), usize> = BTreeMap::new();
    for file in &files {
        let from = owner(&root, file);
        let Some(from_layer) = layer(&from) else {
            violations.push(format!("{}: module `{from}` has no layer in tests/layers.rs", file.display()));
            continue;
        };
        let text = std::fs::read_to_string(file).expect("read source");
        for to in crate_paths(&text) {
            if to == from {
                continue;
            }
            // Root re-exports (`crate::Repository`) hide where a name lives: not allowed below the facade.
            let Some(to_layer) = layer(&to) else {
                if from_layer < 8 {
                    violations.push(format!(
                        "{}: `crate::{to}` goes through the crate root; name the module it lives in",
                        file.display()
                    ));
                }
                continue;
            };
            *edges.entry((from.clone(), to.clone())).or_default() += 1;
            if to_layer >= from_layer {
                violations.push(format!(
                    "{}: `{from}` (layer {from_layer}) uses `crate::{to}` (layer {to_layer}): imports must go down",
                    file.display()
                ));
            }
        }
    }
    assert!(violations.is_empty(), "layering violations:\n{}", violations.join("\n"));
    // The check saw the imports it is about (it would pass vacuously on an empty scan).
    assert!(edges.contains_key(&("repository".into(), "denormalize".into())), "{edges:?}");
    assert!(edges.contains_key(&("relations".into(), "store".into())), "{edges:?}");
}

#[test]
fn the_check_catches_an_upward_import() {
    let paths = crate_paths("use crate::repository::Repository; use crate::{error::Error, store::query};");
    assert_eq!(paths, ["repository", "error", "store"]);
    assert!(layer("repository") > layer("patterns"));
}
