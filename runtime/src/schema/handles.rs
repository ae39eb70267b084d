//! The value `fields()` and `rels()` return: their generated handles
//! struct, behind a `'static` reference.

use std::fmt;
use std::ops::Deref;

/// The typed handles of a document, as `Part::fields()` and
/// `Part::rels()` return them: read a handle as a field of it
/// (`Part::fields().name`, `Product::rels().parts`).
///
/// The handles struct itself is generated beside the document, with one
/// public field per stored field (or relationship); this wrapper gives it
/// `Copy`, `Clone` and `Debug` once for every document, instead of three
/// generated impls per handles struct, which a crate of documents pays
/// for in compile time.
///
/// ```
/// use docrel::{Document, bson::oid::ObjectId};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "parts")]
/// struct Part { #[serde(rename = "_id")] id: ObjectId, name: String }
///
/// let f = Part::fields();
/// let g = f; // `Copy`
/// assert_eq!(f.name.path(), "name");
/// assert_eq!(g.id.path(), "_id");
/// assert!(format!("{f:?}").starts_with("PartFields"));
/// ```
pub struct Handles<T: 'static>(&'static T);

impl<T> Handles<T> {
    /// Wraps the handles of a document (generated code calls this).
    #[doc(hidden)]
    pub const fn new(handles: &'static T) -> Self {
        Handles(handles)
    }
}

impl<T> Deref for Handles<T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.0
    }
}

impl<T> Clone for Handles<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Handles<T> {}

/// Names the handles struct only (`PartFields`): its fields are handles
/// whose paths `Debug` of each shows.
impl<T> fmt::Debug for Handles<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = std::any::type_name::<T>();
        f.write_str(name.rsplit("::").next().unwrap_or(name))
    }
}
