//! The derives take no name from the user's module: types named like the
//! helpers they generate (`Probe`, `Holds`, `Not`, `Select`, `PartFields`,
//! `PartRels`) live next to the documents, and one of them is a field.
//! Types that come through `macro_rules!` (`$t:ty`) read as written, and
//! `crate = ".."` reaches docrel through another path.
#![deny(warnings)]
// `(Vec<ObjectId>)` below is the point: a type in parentheses.
#![allow(unused_parens)]
use docrel::bson::oid::ObjectId;
use docrel::{Document, Embedded};
use serde::{Deserialize, Serialize};

#[allow(dead_code)]
struct Probe<T>(T);
#[allow(dead_code)]
trait Holds {}
#[allow(dead_code)]
trait Not {}
#[allow(dead_code)]
struct Select;
#[derive(Serialize, Deserialize, Clone, Copy, Debug)]
struct PartFields {
    weight: u32,
}
#[allow(dead_code)]
struct PartRels;

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    fields: PartFields,
    #[embed(allow_document)]
    spare: Option<Box<Part>>,
}

/// A renamed dependency, as `[dependencies] my_docrel = { package = "docrel" }` gives.
mod my_docrel {
    pub use docrel::*;
}

macro_rules! document {
    ($name:ident, $coll:literal, $max:literal, $tags:ty, $part:ty, $parts:ty, $copy:ty) => {
        #[derive(Document, Serialize, Deserialize)]
        #[document(collection = $coll, crate = "my_docrel")]
        #[allow(unused_parens)]
        struct $name {
            #[serde(rename = "_id")]
            id: ObjectId,
            #[embed(max = $max)]
            tags: $tags,
            #[reference(to = Part)]
            part: $part,
            #[reference(many, to = Part, max = 10)]
            parts: $parts,
            #[denormalize(from = Part::name, via = part)]
            part_name: $copy,
        }
    };
}

document!(Kit, "kits", 5, Vec<String>, Option<ObjectId>, (Vec<ObjectId>), Option<String>);

#[derive(Embedded, Serialize, Deserialize)]
#[embedded(crate = "my_docrel")]
struct PartRef {
    id: ObjectId,
    #[denormalize(from = Part::name)]
    name: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "products")]
struct Product {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = Part, max = 10)]
    parts: Vec<PartRef>,
}

fn main() {
    let _: Probe<()> = Probe(());
    let _ = (Part::fields().fields, Kit::fields().tags.path(), Kit::rels().parts, Product::rels().parts);
    let _ = PartFields { weight: 1 }.weight;
}
