//! The admin command of the example schemas: the three lines a program
//! needs (`fn main` calling `docrel::admin::main()`), with the types of
//! every example linked in. Try:
//!
//! ```sh
//! export MONGODB_URI=mongodb://127.0.0.1:27017 DOCREL_DB=docrel_catalog
//! cargo run --example catalog                   # some data to look at
//! cargo run --example admin_cli -- --help
//! cargo run --example admin_cli -- schema --html schema.html
//! cargo run --example admin_cli -- indexes plan
//! cargo run --example admin_cli -- verify
//! cargo run --example admin_cli -- repair parts --dry-run
//! cargo run --example admin_cli -- doctor --html doctor.html --fail-on warning
//! cargo run --example admin_cli -- sync         # until Ctrl-C
//! ```
#![allow(clippy::duplicate_mod, reason = "each example includes examples/common; here they are modules of one program")]

// The document types of the examples (their own `main`s are not used).
#[allow(dead_code)]
#[path = "blog.rs"]
mod blog;
#[allow(dead_code)]
#[path = "catalog.rs"]
mod catalog;
#[allow(dead_code)]
#[path = "library.rs"]
mod library;
#[allow(dead_code)]
#[path = "logging.rs"]
mod logging;
#[allow(dead_code)]
#[path = "patrons.rs"]
mod patrons;
#[allow(dead_code)]
#[path = "reviews.rs"]
mod reviews;
#[allow(dead_code)]
#[path = "tasks.rs"]
mod tasks;

fn main() -> std::process::ExitCode {
    docrel::admin::main()
}
