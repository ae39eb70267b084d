//! Parse and validate: attributes into a model, then the rules across it.

pub mod advice;
pub mod ast;
pub mod attr;
pub mod check;
pub mod serde_names;
pub mod symbol;
