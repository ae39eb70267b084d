//! What an operator runs: the schema report, the index plan, verify and
//! repair of all derived data, the doctor (the rules of thumb checked
//! against the live data, as text, JSON or an HTML page), and, with the
//! `admin` cargo feature, the command line that puts them together
//! (`main`).
//!
//! A program gets the admin command for its own schema in three lines (the
//! registry of document types lives in the program, so the tool is a
//! library entry point):
//!
//! ```no_run
//! // src/bin/admin.rs, with `docrel = { .., features = ["admin"] }`
//! // and the crate declaring the document types linked in.
//! fn main() -> std::process::ExitCode {
//!     docrel::admin::main()
//! }
//! ```

mod backfilled;
pub mod change;
pub mod change_preview;
pub(crate) mod check;
pub mod checks;
#[cfg(feature = "admin")]
pub mod cli;
pub mod doctor;
pub mod html;
pub mod index_plan;
mod index_shape;
mod inverse_build;
mod inverse_counts;
mod missing_indexes;
pub mod moves;
pub mod report;

#[cfg(feature = "admin")]
pub use cli::{main, run, shutdown_signal, Console, Exit};
