//! Every diagnostic of the derives, pinned with its exact text.
//! Refresh with `TRYBUILD=overwrite cargo test --test ui` and read the diff
//! (with `--features bson-3` too, for the cases in `tests/ui_bson3`).
//! `tests/ui_bson3/driver` is a user's crate built with cargo, whose driver
//! is on bson 3 while docrel is on bson 2.

use std::path::{Path, PathBuf};
use std::process::Command;

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    for case in cases(Path::new("tests/ui")) {
        t.compile_fail(bson_variant(case));
    }
    // Acknowledged advice builds clean under `#![deny(warnings)]`, and the
    // generated code under the lints a library may deny (`strict_lints.rs`).
    t.pass("tests/ui_pass/*.rs");
}

/// The `.rs` files of the folders of `dir`, in order.
fn cases(dir: &Path) -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("tests/ui")
        .flat_map(|group| std::fs::read_dir(group.expect("a group").path()).expect("a group folder"))
        .map(|file| file.expect("a case").path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .collect();
    cases.sort();
    cases
}

/// Under bson 3, the case of `tests/ui_bson3` where there is one: rustc
/// lists some of the types that implement a missing trait, and bson 3's
/// differ (`&CStr` implements `Serialize`). Same source, other expectation.
fn bson_variant(case: PathBuf) -> PathBuf {
    if cfg!(feature = "bson-3") {
        let variant = Path::new("tests/ui_bson3").join(case.strip_prefix("tests/ui").expect("under tests/ui"));
        if variant.exists() {
            return variant;
        }
    }
    case
}

/// A crate whose other dependency turns on the driver's `bson-3` while
/// docrel's stays off (`tests/ui_bson3/driver`), built with cargo: one
/// error, the one saying to turn docrel's `bson-3` on too, and nothing else
/// of docrel's code written for bson 2.
#[test]
fn a_driver_on_bson_3_under_docrel_on_bson_2_is_one_error() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().expect("the target directory");
    let dir = target.join("tests/driver-bson-3-fixture");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::copy(root.join("tests/ui_bson3/driver/main.rs"), dir.join("src/main.rs")).unwrap();
    let manifest = format!(
        "[package]\nname = \"driver-bson-3-fixture\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
         [dependencies]\ndocrel = {{ path = {:?} }}\nmongodb = {{ version = \"3\", features = [\"bson-3\"] }}\n\
         serde = {{ version = \"1\", features = [\"derive\"] }}\n\n[workspace]\n",
        root.display().to_string()
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    // The workspace's lock file: the same versions. Not `--offline`: the
    // driver's bson 3 is downloaded only by a build that turns on `bson-3`,
    // so on a fresh machine this is the first build that needs it.
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    let out = Command::new(env!("CARGO"))
        .args(["check", "--quiet", "--message-format=short"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", target.join("tests/trybuild"))
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "docrel on bson 2 under a driver on bson 3 must not build:\n{stderr}");
    let errors: Vec<&str> =
        stderr.lines().filter(|l| l.contains("error") && !l.starts_with("error: could not compile")).collect();
    assert_eq!(errors.len(), 1, "one error:\n{stderr}");
    assert!(
        errors[0].contains("the driver's bson is bson 3")
            && errors[0].contains("turn on docrel's `bson-3` feature too"),
        "the error says to turn on docrel's `bson-3`:\n{stderr}"
    );
}
