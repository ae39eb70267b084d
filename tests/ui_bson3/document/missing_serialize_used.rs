// The case of tests/ui/document/missing_serialize_used.rs under bson 3, whose
// `&CStr` joins the implementations of `Serialize` that rustc lists.
include!("../../ui/document/missing_serialize_used.rs");
