//! `docrel`: the admin tool of docrel, for any database whose programs
//! published their schema (`docrel::schema::publish(&db)`); it links no
//! document type of its own. Install it with `cargo install --path cli`.
//!
//! ```text
//! docrel schema  --uri mongodb://HOST/DB     the stored schema (Markdown; --json)
//! docrel indexes plan|apply --uri ...        declared indexes against the live ones
//! docrel verify  --uri ... [COLLECTION]      derived data checked, exit 1 when stale
//! docrel repair  --uri ... [COLLECTION]      derived data fixed, resumable
//! docrel sync    --uri ...                   the sync worker of deferred fan-outs
//! docrel doctor  --uri ...                   the rules of thumb against the live data
//! ```
//!
//! The database is the URI's path, or `--db NAME`; exit codes are those
//! of `docrel::admin` (0 fine, 1 found something, 2 usage, 3 failed).

fn main() -> std::process::ExitCode {
    docrel::admin::main()
}
