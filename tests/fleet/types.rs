// The parts both programs of the fleet tests link: the same declaration
// in each, as a shared crate of a real fleet would give them. Each
// program declares its own `Bin`.

use super::Bin;

#[derive(docrel::Document, serde::Serialize, serde::Deserialize, Debug, Clone)]
#[document(collection = "fl_parts")]
pub struct Part {
    #[serde(rename = "_id")]
    pub id: docrel::bson::oid::ObjectId,
    pub code: i32,
    pub name: String,
    pub rank: i32,
    #[parent_ref(to = Bin)]
    pub bin: i32,
}
