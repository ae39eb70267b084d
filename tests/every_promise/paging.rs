//! Keyset paging by `_id` reads every document whatever the types of the
//! ids: a delete rule walking referrers with ids of two types reaches all.

use docrel::bson::{doc, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "pg_owners")]
struct Owner {
    #[serde(rename = "_id")]
    id: i32,
}

/// Children whose ids are strings to this program, while the collection
/// also holds numbers and ObjectIds (written by an older generation, or
/// another program): the cascade pages by `_id` without decoding them.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "pg_items")]
struct Item {
    #[serde(rename = "_id")]
    id: String,
    #[parent_ref(to = Owner, on_delete = cascade)]
    owner: i32,
}

#[tokio::test]
async fn a_cascade_pages_through_ids_of_every_type() -> docrel::Result<()> {
    let t = TestDb::new("pg_types").await?;
    Owner::repo(&t.db).insert(&Owner { id: 1 }).await?;
    let items = t.db.collection::<BsonDoc>("pg_items");
    // More than one page (1,000 ids) of numbers, then strings and ObjectIds.
    let numbers = (0..1_001).map(|i| doc! {"_id": i, "owner": 1});
    let strings = (0..5).map(|i| doc! {"_id": format!("s{i}"), "owner": 1});
    let oids = (0..5).map(|_| doc! {"_id": docrel::bson::oid::ObjectId::new(), "owner": 1});
    items.insert_many(numbers.chain(strings).chain(oids)).await.unwrap();
    Owner::repo(&t.db).delete_by_id(&1).await?;
    let left = items.count_documents(doc! {}).await.unwrap();
    assert_eq!(left, 0, "the cascade reached every item, whatever the type of its id");
    Ok(())
}
