//! The plan of a write of a document type, owned by the capability of
//! derived data: from the update (or the document) and the schema graph it
//! decides once what the write touches (copies elsewhere, subset summaries,
//! copies and references it holds, its version) and how it runs (plain,
//! stamped, read back, page by page, in a transaction), then runs it. The
//! repository hands a write over in one call and gets one outcome back.
//!
//! The version contract the plan keeps is stated in [`super::fanout`].

mod bulk;
mod document;
mod encode;
mod image;
mod insert;
mod landed;
mod outcome;
mod put;
mod replace;
mod route;
mod sides;
mod update;
mod update_ways;
mod upsert;

pub(crate) use insert::{InsertPlan, Inserted};
pub(crate) use sides::{Linking, TwoWaySides};
pub(crate) use update::UpdatePlan;
pub(crate) use upsert::Upserted;

pub(crate) use outcome::{Mode, Scope};
pub use outcome::{UpdateOutcome, UpsertOutcome};
