//! The catalog's documents: parts, and products listing their parts with a
//! copy of each part's name (so a product page needs no join for names),
//! the parts' prices loaded with one query when a page shows them.
//!
//! ```text
//! parts:    {_id, partno, name, price}
//! products: {_id, name, parts: [{id, name}]}
//! ```

use docrel::bson::oid::ObjectId;
use docrel::{Document, Embedded, View};
use serde::{Deserialize, Serialize};

// ANCHOR: schema
/// A part; `partno` is unique (`ensure_indexes` at startup creates the index).
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "parts")]
pub struct Part {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[document(unique)]
    pub partno: String,
    pub name: String,
    pub price: f64,
}

/// An element of `products.parts`: the part's id and a copy of its name,
/// filled in on insert and rewritten when the part is renamed.
#[derive(Embedded, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct PartRef {
    pub id: ObjectId,
    #[denormalize(from = Part::name)]
    pub name: String,
}

/// A product made of at most 50 parts; a part in use cannot be deleted.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "products")]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
    #[reference(many, to = Part, max = 50, on_delete = restrict)]
    pub parts: Vec<PartRef>,
}

/// What a product page shows of each part besides its name: only these
/// fields travel.
#[derive(View, Deserialize, Debug)]
#[view(of = Part)]
pub struct PartPrice {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub partno: String,
    pub price: f64,
}
// ANCHOR_END: schema
