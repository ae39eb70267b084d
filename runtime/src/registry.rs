//! The link-time registry of every derived document type of the program.
//!
//! Each `#[derive(Document)]` submits its [`Schema`] with `inventory`, so a
//! source finds the documents that refer to it wherever they are declared,
//! in any module or crate linked into the program.

use crate::document::{Relation, Schema};

/// One registered schema (generated code submits these; users read them).
#[derive(Debug)]
pub struct Registered(pub &'static Schema);

inventory::collect!(Registered);

/// Every document type linked into the program.
///
/// ```
/// #[derive(docrel::Document, serde::Serialize, serde::Deserialize)]
/// #[document(collection = "hosts")]
/// struct Host { #[serde(rename = "_id")] id: i64, name: String }
///
/// assert!(docrel::registry::schemas().any(|s| s.collection == "hosts"));
/// ```
pub fn schemas() -> impl Iterator<Item = &'static Schema> {
    inventory::iter::<Registered>.into_iter().map(|r| r.0)
}

/// Every reference, from any document type, whose target is `collection`,
/// with the schema declaring it.
pub fn references_to(collection: &str) -> impl Iterator<Item = (&'static Schema, &'static Relation)> + '_ {
    schemas().flat_map(move |s| {
        s.relations.iter().filter(move |r| r.target == Some(collection) && r.is_reference()).map(move |r| (s, r))
    })
}
