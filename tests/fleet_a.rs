//! Program A of the fleet tests (issue 28): it links only `Part` (and a
//! `Bin` with no subset), while program B (tests/fleet_b.rs) also links
//! the types that derive data from parts: product copies of part names
//! (`on_delete = pull`), a subset of each bin's best parts, stickers that
//! cascade and orders that restrict. B publishes its schema (replayed here
//! from B's own export, tests/fixtures/fleet_b_schema.json); A obeys it,
//! and A's inserts, renames and deletes of parts leave B's documents
//! exactly right, read back with the raw driver.

#[path = "fleet/types.rs"]
mod types;

use docrel::bson::{doc, oid::ObjectId, Bson, Document as BsonDoc};
use docrel::schema::stored::{self, StoredType};
use docrel::testing::TestDb;
use docrel::{Document, Error};
use serde::{Deserialize, Serialize};
use types::Part;

/// A's bin: the same collection as B's, without B's subset.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "fl_bins")]
pub struct Bin {
    #[serde(rename = "_id")]
    id: i32,
}

fn b_schema() -> Vec<StoredType> {
    let json = include_str!("fixtures/fleet_b_schema.json");
    let value: serde_json::Value = serde_json::from_str(json).expect("B's export");
    serde_json::from_value(value["types"].clone()).expect("stored types")
}

async fn raw(t: &TestDb, collection: &str, id: impl Into<Bson>) -> Option<BsonDoc> {
    t.db.collection::<BsonDoc>(collection).find_one(doc! {"_id": id.into()}).await.expect("find")
}

fn names(d: &BsonDoc, field: &str) -> Vec<String> {
    d.get_array(field).unwrap().iter().map(|e| e.as_document().unwrap().get_str("name").unwrap().to_owned()).collect()
}

#[tokio::test]
async fn a_program_that_links_only_parts_obeys_the_rules_another_published() -> docrel::Result<()> {
    let t = TestDb::new("fleet").await?;
    stored::publish_types(&t.db, &b_schema()).await?;
    docrel::schema::publish(&t.db).await?;
    let obeyed = docrel::schema::obey(&t.db).await?;
    assert_eq!(obeyed.stored_only, ["fl_orders", "fl_products", "fl_stickers"]);
    assert_eq!(obeyed.supplemented, ["fl_bins"]);
    assert!(obeyed.differences.iter().any(|d| d.contains("`fl_bins`") && d.contains("relation `top`")));

    // A writes bins and parts; B's subset of the best parts follows.
    Bin::repo(&t.db).insert(&Bin { id: 1 }).await?;
    let part = |code, name: &str, rank| Part { id: ObjectId::new(), code, name: name.into(), rank, bin: 1 };
    let (bolt, nut, gear) = (part(1, "bolt", 5), part(2, "nut", 7), part(3, "gear", 6));
    Part::repo(&t.db).insert_many(&[bolt.clone(), nut.clone(), gear.clone()]).await?;
    assert_eq!(names(&raw(&t, "fl_bins", 1).await.unwrap(), "top"), ["nut", "gear", "bolt"]);

    // B's documents, as B stored them.
    let id_name = |p: &Part| doc! {"id": p.id, "name": &p.name};
    let product = ObjectId::new();
    t.db.collection::<BsonDoc>("fl_products")
        .insert_one(doc! {"_id": product, "parts": [id_name(&bolt), id_name(&nut)]})
        .await
        .expect("insert");
    let sticker = ObjectId::new();
    t.db.collection::<BsonDoc>("fl_stickers").insert_one(doc! {"_id": sticker, "part": nut.id}).await.expect("insert");
    let order = ObjectId::new();
    t.db.collection::<BsonDoc>("fl_orders").insert_one(doc! {"_id": order, "part": bolt.id}).await.expect("insert");

    // A renames a part: B's copies and B's subset follow.
    Part::repo(&t.db).update_by_id(&nut.id, Part::fields().name.set("hex nut".to_owned())).await?;
    assert_eq!(names(&raw(&t, "fl_products", product).await.unwrap(), "parts"), ["bolt", "hex nut"]);
    assert_eq!(names(&raw(&t, "fl_bins", 1).await.unwrap(), "top"), ["hex nut", "gear", "bolt"]);

    // A deletes a part an order refers to: B's restrict refuses it.
    let err = Part::repo(&t.db).delete_by_id(&bolt.id).await.unwrap_err();
    assert!(matches!(err, Error::StillReferenced { .. }), "{err}");
    assert!(raw(&t, "fl_parts", bolt.id).await.is_some());

    // A deletes the nut: B's sticker goes (cascade), B's product lets go of
    // it (pull), B's subset is rebuilt without it.
    assert!(Part::repo(&t.db).delete_by_id(&nut.id).await?);
    assert!(raw(&t, "fl_stickers", sticker).await.is_none());
    assert_eq!(names(&raw(&t, "fl_products", product).await.unwrap(), "parts"), ["bolt"]);
    assert_eq!(names(&raw(&t, "fl_bins", 1).await.unwrap(), "top"), ["gear", "bolt"]);
    Ok(())
}
