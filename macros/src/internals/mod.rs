//! Parse and validate: the attributes as written (`ast`, `attr`), then the
//! rules across them (`check`, which calls `relation` for each relationship
//! attribute), into one model (`model`). Every error goes into the one
//! context (`ctxt`), so parsing and checking never stop at the first.

pub mod advice;
pub mod ast;
pub mod attr;
pub mod bucket;
pub mod check;
pub mod counter;
pub mod ctxt;
pub mod element;
pub mod index_attr;
pub mod index_check;
pub mod index_values;
pub mod json;
pub mod model;
pub mod moved;
pub mod relation;
pub mod serde_names;
pub mod suggest;
pub mod symbol;
pub mod ty;
