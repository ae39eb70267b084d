//! Parse and validate: the attributes as written (`ast`, `attr`), then the
//! rules across them (`check`, `relation`), into one model (`model`).

pub mod advice;
pub mod ast;
pub mod attr;
pub mod check;
pub mod model;
pub mod relation;
pub mod serde_names;
pub mod symbol;
pub mod ty;
