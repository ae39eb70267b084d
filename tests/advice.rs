//! The rules of thumb as compiler warnings, seen as a user sees them: a
//! fixture crate built with cargo, once breaking every rule, once with every
//! break acknowledged, once following them all.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Each rule broken in `warned.rs`, by the field that breaks it.
const WARNED: [(&str, &str); 9] = [
    ("docrel_rule_2_embedded_document", "parts"),
    ("docrel_rule_3_large_embed", "log"),
    ("docrel_rule_3_unbounded_references", "spares"),
    ("docrel_rule_3_large_references", "bins"),
    ("docrel_rule_5_write_heavy_copy", "part_qty"),
    ("docrel_rule_5_write_heavy_copy", "qty"),
    ("docrel_rule_3_unbounded_embed", "addresses"),
    ("docrel_rule_3_unbounded_embed", "notes"),
    ("docrel_relationship_balance", "books"),
];

/// The fixture crate, laid out under `target/` with a manifest pointing at
/// this workspace; built in trybuild's target directory, whose dependencies
/// are already compiled.
fn fixture() -> (PathBuf, PathBuf) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The target directory in use (`CARGO_TARGET_DIR` or `target/`).
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().expect("the target directory");
    let dir = target.join("tests/advice-fixture");
    std::fs::create_dir_all(dir.join("src/bin")).unwrap();
    for bin in ["warned", "acknowledged", "clean"] {
        std::fs::copy(
            root.join(format!("tests/fixtures/advice/src/bin/{bin}.rs")),
            dir.join(format!("src/bin/{bin}.rs")),
        )
        .unwrap();
    }
    let manifest = format!(
        "[package]\nname = \"advice-fixture\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
         [dependencies]\ndocrel = {{ path = {:?} }}\nserde = {{ version = \"1\", features = [\"derive\"] }}\n\n[workspace]\n",
        root.display().to_string()
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    // The workspace's lock file: the same dependency versions. Not
    // `--offline`: a run of the suite with other features may not have
    // downloaded every crate this build needs.
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    (dir, target.join("tests/trybuild"))
}

fn check(bin: &str) -> String {
    let (dir, target) = fixture();
    let out = Command::new(env!("CARGO"))
        .args(["check", "--quiet", "--message-format=short", "--bin", bin])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", target)
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "the fixture `{bin}` must build:\n{stderr}");
    stderr
}

#[test]
fn each_rule_of_thumb_warns_at_its_attribute_and_acknowledging_silences_it() {
    let warned = check("warned");
    let source =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/advice/src/bin/warned.rs"))
            .unwrap();
    let deprecated: Vec<&str> = warned.lines().filter(|l| l.contains("warning: use of deprecated")).collect();
    for (rule, field) in WARNED {
        let lines: Vec<&&str> =
            deprecated.iter().filter(|l| l.contains(rule) && l.contains(&format!("`{field}`"))).collect();
        assert_eq!(lines.len(), 1, "`{rule}` on `{field}` warns exactly once:\n{warned}");
        let line = lines[0];
        // `src/bin/warned.rs:23:7: warning: ..`: the line is the attribute's.
        let at = line.strip_prefix("src/bin/warned.rs:").unwrap_or_else(|| panic!("in the user's file: {line}"));
        let number: usize = at.split(':').next().unwrap().parse().unwrap();
        let written = source.lines().nth(number - 1).unwrap();
        assert!(written.trim_start().starts_with("#["), "at the attribute, not `{written}`: {line}");
        // What the user reads first is the rule, as a method of their type:
        // "use of deprecated method `Kit::docrel_rule_3_large_embed`: rule 3, ..".
        let name = line.split("deprecated method `").nth(1).and_then(|r| r.split('`').next()).unwrap_or("");
        let (ty, method) = name.split_once("::").unwrap_or_else(|| panic!("`Type::rule`: {line}"));
        assert!(!ty.contains("::") && !ty.contains('_') && method.starts_with(rule), "{line}");
        assert!(line.contains("acknowledge with"), "names the fix: {line}");
    }
    assert_eq!(deprecated.len(), WARNED.len(), "{warned}");

    let acknowledged = check("acknowledged");
    assert!(!acknowledged.contains("warning"), "acknowledged advice is silent:\n{acknowledged}");
}

#[test]
fn a_schema_that_follows_the_rules_builds_without_a_warning() {
    let clean = check("clean");
    assert!(!clean.contains("warning"), "no noise for a clean schema:\n{clean}");
}
