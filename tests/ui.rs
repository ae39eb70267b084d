//! Every diagnostic of the derives, pinned with its exact text.
//! Refresh with `TRYBUILD=overwrite cargo test --test ui` and read the diff
//! (with `--features bson-3` too, for the cases in `tests/ui_bson3`).

use std::path::{Path, PathBuf};

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
