//! The rules of thumb as compiler warnings, seen as a user sees them: a
//! fixture crate built with cargo, once breaking every rule, once with every
//! break acknowledged, once following them all.

use std::path::{Path, PathBuf};
use std::process::Command;

const RULES: [&str; 7] = [
    "docrel_rule_2_embedded_document",
    "docrel_rule_3_large_embed",
    "docrel_rule_3_unbounded_references",
    "docrel_rule_3_large_references",
    "docrel_rule_5_write_heavy_copy",
    "docrel_rule_3_unbounded_embed",
    "docrel_relationship_balance",
];

/// The fixture crate, laid out under `target/` with a manifest pointing at
/// this workspace; built in trybuild's target directory, whose dependencies
/// are already compiled.
fn fixture() -> (PathBuf, PathBuf) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("target/tests/advice-fixture");
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
    // The workspace's lock file: the same dependency versions, no registry look-up.
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    (dir, root.join("target/tests/trybuild"))
}

fn check(bin: &str) -> String {
    let (dir, target) = fixture();
    let out = Command::new(env!("CARGO"))
        .args(["check", "--quiet", "--offline", "--message-format=short", "--bin", bin])
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
    for rule in RULES {
        let lines: Vec<&str> = warned.lines().filter(|l| l.contains(rule)).collect();
        assert_eq!(lines.len(), 1, "`{rule}` warns exactly once:\n{warned}");
        assert!(lines[0].starts_with("src/bin/warned.rs:"), "at the attribute: {}", lines[0]);
        assert!(lines[0].contains("warning: use of deprecated"), "{}", lines[0]);
        assert!(lines[0].contains("acknowledge with"), "names the fix: {}", lines[0]);
    }
    assert_eq!(warned.lines().filter(|l| l.contains("warning: use of deprecated")).count(), RULES.len(), "{warned}");

    let acknowledged = check("acknowledged");
    assert!(!acknowledged.contains("warning"), "acknowledged advice is silent:\n{acknowledged}");
}

#[test]
fn a_schema_that_follows_the_rules_builds_without_a_warning() {
    let clean = check("clean");
    assert!(!clean.contains("warning"), "no noise for a clean schema:\n{clean}");
}
