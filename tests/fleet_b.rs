//! Program B of the fleet tests (see tests/fleet_a.rs): it links `Part`
//! and every type that derives data from it (copies of part names, a
//! subset of a bin's best parts, a cascade and a restrict on parts), and
//! people and tasks kept two-way (`Task.owner` and `Person.tasks`). Its
//! exported schema is kept in tests/fixtures/fleet_b_schema.json, which
//! program A publishes as B would: this test keeps that file true.

#[path = "fleet/types.rs"]
mod types;

use docrel::bson::oid::ObjectId;
use docrel::{Document, Embedded, View};
use serde::{Deserialize, Serialize};
use types::Part;

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "fl_bins")]
pub struct Bin {
    #[serde(rename = "_id")]
    id: i32,
    #[embed(max = 3, subset_of = Part, sort = "-rank", key = code)]
    top: Vec<PartLine>,
}

#[derive(View, Serialize, Deserialize, Debug, Clone)]
#[view(of = Part)]
struct PartLine {
    code: i32,
    name: String,
    rank: i32,
}

#[derive(Embedded, Serialize, Deserialize, Debug, Clone)]
struct PartRef {
    id: ObjectId,
    #[denormalize(from = Part::name)]
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "fl_products")]
struct Product {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = Part, max = 50, on_delete = pull)]
    parts: Vec<PartRef>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "fl_stickers")]
struct Sticker {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Part, on_delete = cascade)]
    part: ObjectId,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "fl_orders")]
struct Order {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Part, on_delete = restrict)]
    part: ObjectId,
}

/// A person lists the tasks they own; each task names its owner. The
/// two-way rule is B's alone: program A links tasks with a plain `owner`,
/// program C (tests/fleet_c.rs) people with a plain `tasks`.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "fl_people")]
struct Person {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    #[serde(default)]
    #[reference(many, to = Task, inverse = owner, max = 100)]
    tasks: Vec<ObjectId>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "fl_tasks")]
struct Task {
    #[serde(rename = "_id")]
    id: ObjectId,
    title: String,
    #[reference(to = Person, inverse = tasks)]
    owner: Option<ObjectId>,
}

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fleet_b_schema.json");

/// B's exported schema is the fixture program A publishes. After a change
/// to B's types, write it again with `DOCREL_WRITE_FIXTURES=1`.
#[test]
fn the_fixture_is_this_programs_export() {
    let export = docrel::schema::export();
    if std::env::var_os("DOCREL_WRITE_FIXTURES").is_some() {
        std::fs::write(FIXTURE, &export).expect("write the fixture");
    }
    let fixture = std::fs::read_to_string(FIXTURE).expect("tests/fixtures/fleet_b_schema.json");
    assert_eq!(export, fixture, "B's schema changed: run this test with DOCREL_WRITE_FIXTURES=1");
}
