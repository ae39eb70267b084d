//! Generate: the code for checked models. Nothing here reports user errors.

pub mod copies;
pub mod document;
pub mod fallback;
pub mod relations;
pub mod view;
pub mod warn;
