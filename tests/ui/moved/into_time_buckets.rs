use docrel::bson::{oid::ObjectId, DateTime};
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "sensors")]
struct Sensor {
    #[serde(rename = "_id")]
    id: i32,
}

#[derive(Serialize, Deserialize, Clone)]
struct Reading {
    t: DateTime,
    value: f64,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "hours", moved_from = Sensor::readings)]
struct Hour {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Sensor)]
    sensor: i32,
    start: DateTime,
    count: i32,
    #[bucket(by = t, window = "hour")]
    readings: Vec<Reading>,
}

fn main() {}
