//! What an operator reads: the schema report.

pub mod report;
