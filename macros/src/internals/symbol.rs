//! Every attribute name, named once.

pub const DOCUMENT: &str = "document";
pub const EMBED: &str = "embed";
pub const REFERENCE: &str = "reference";
pub const PARENT_REF: &str = "parent_ref";
pub const SERDE: &str = "serde";
pub const VIEW: &str = "view";
pub const DENORMALIZE: &str = "denormalize";
pub const BUCKET: &str = "bucket";
pub const EMBEDDED: &str = "embedded";

/// The attributes that declare a relationship on a field; at most one per field.
pub const RELATIONSHIP_ATTRS: &[&str] = &[EMBED, REFERENCE, PARENT_REF, BUCKET];
