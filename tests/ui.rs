//! Every diagnostic of the derives, pinned with its exact text.
//! Refresh with `TRYBUILD=overwrite cargo test --test ui` and read the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*/*.rs");
    // Acknowledged advice builds clean under `#![deny(warnings)]`.
    t.pass("tests/ui_pass/*.rs");
}
