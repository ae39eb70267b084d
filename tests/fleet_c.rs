//! Program C of the fleet tests (issue 28): it links only `Person`, with
//! a plain `tasks` array, and `Product`, with plain part names, while
//! program B (tests/fleet_b.rs) keeps `Person.tasks` two-way with
//! `Task.owner` and copies part names into products. C obeys the schema B
//! published (tests/fixtures/fleet_b_schema.json): its inserts, replaces,
//! updates and deletes of people leave B's tasks exactly right, and its
//! products hold B's copies, read back with the raw driver.

use docrel::bson::{doc, oid::ObjectId, Bson, Document as BsonDoc};
use docrel::schema::stored::{self, StoredType};
use docrel::testing::TestDb;
use docrel::{Document, Error};
use serde::{Deserialize, Serialize};

/// C's person: the same collection as B's, whose `tasks` is a plain array
/// here; B declares it one side of a two-way reference.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "fl_people")]
pub struct Person {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    #[serde(default)]
    tasks: Vec<ObjectId>,
}

/// C's product: the same collection as B's, whose part names are plain
/// fields here; B copies them from the parts.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "fl_products")]
pub struct Product {
    #[serde(rename = "_id")]
    id: ObjectId,
    parts: Vec<PartName>,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct PartName {
    id: ObjectId,
    name: String,
}

fn b_schema() -> Vec<StoredType> {
    let json = include_str!("fixtures/fleet_b_schema.json");
    let value: serde_json::Value = serde_json::from_str(json).expect("B's export");
    serde_json::from_value(value["types"].clone()).expect("stored types")
}

async fn raw(t: &TestDb, collection: &str, id: ObjectId) -> BsonDoc {
    t.db.collection::<BsonDoc>(collection).find_one(doc! {"_id": id}).await.expect("find").expect("stored")
}

fn ids(d: &BsonDoc) -> Vec<ObjectId> {
    d.get_array("tasks").unwrap().iter().map(|e| e.as_object_id().unwrap()).collect()
}

/// A task's owner as stored (`None`: no owner, or the field unset).
async fn owner(t: &TestDb, task: ObjectId) -> Option<ObjectId> {
    raw(t, "fl_tasks", task).await.get_object_id("owner").ok()
}

#[tokio::test]
async fn a_program_with_a_plain_array_keeps_the_two_way_reference_another_declared() -> docrel::Result<()> {
    let t = TestDb::new("fleet_people").await?;
    stored::publish_types(&t.db, &b_schema()).await?;
    docrel::schema::publish(&t.db).await?;
    let obeyed = docrel::schema::obey(&t.db).await?;
    assert_eq!(obeyed.supplemented, ["fl_people", "fl_products"]);
    assert!(obeyed.stored_only.iter().any(|c| c == "fl_tasks"), "{obeyed:?}");

    // B's tasks, as B stored them: two without an owner, one owned by Bo.
    let (plan, grade, review) = (ObjectId::new(), ObjectId::new(), ObjectId::new());
    let bo = ObjectId::new();
    let tasks = t.db.collection::<BsonDoc>("fl_tasks");
    for (id, title, owner) in [(plan, "plan", Bson::Null), (grade, "grade", Bson::Null), (review, "review", bo.into())]
    {
        tasks.insert_one(doc! {"_id": id, "title": title, "owner": owner}).await.expect("insert");
    }
    let people = t.db.collection::<BsonDoc>("fl_people");
    people.insert_one(doc! {"_id": bo, "name": "Bo", "tasks": [review]}).await.expect("insert");

    // C inserts a person listing tasks: each names them as its owner, and
    // the review moves from Bo.
    let ann = Person { id: ObjectId::new(), name: "Ann".into(), tasks: vec![plan, review] };
    Person::repo(&t.db).insert(&ann).await?;
    assert_eq!((owner(&t, plan).await, owner(&t, review).await), (Some(ann.id), Some(ann.id)));
    assert_eq!(ids(&raw(&t, "fl_people", bo).await), Vec::<ObjectId>::new());

    // A person listing a task twice is refused: the task refers back once.
    let twice = Person { id: ObjectId::new(), name: "Cy".into(), tasks: vec![grade, grade] };
    let err = Person::repo(&t.db).insert(&twice).await.unwrap_err();
    assert!(err.to_string().contains("nothing was written"), "{err}");
    assert!(people.find_one(doc! {"_id": twice.id}).await.expect("find").is_none());
    assert_eq!(owner(&t, grade).await, None);

    // An update of the array is refused, as where the reference is declared.
    let err = Person::repo(&t.db).update_by_id(&ann.id, Person::fields().tasks.set(vec![grade])).await.unwrap_err();
    assert!(matches!(err, Error::TwoWayField { field: "tasks", .. }), "{err}");
    assert_eq!(ids(&raw(&t, "fl_people", ann.id).await), [plan, review]);
    assert_eq!(owner(&t, grade).await, None);

    // Replace and save keep the stored array; both sides still agree.
    Person::repo(&t.db).replace(&Person { name: "Ann B".into(), tasks: vec![grade], ..ann.clone() }).await?;
    Person::repo(&t.db).save(&Person { name: "Ann C".into(), tasks: vec![], ..ann.clone() }).await?;
    let stored = raw(&t, "fl_people", ann.id).await;
    assert_eq!((stored.get_str("name").unwrap(), ids(&stored)), ("Ann C", vec![plan, review]));
    assert_eq!(owner(&t, grade).await, None);

    // C deletes Ann: B's rule for the optional side of a two-way
    // reference unsets her tasks' owner.
    assert!(Person::repo(&t.db).delete_by_id(&ann.id).await?);
    let stored = raw(&t, "fl_tasks", plan).await;
    assert!(!stored.contains_key("owner"), "{stored}");
    assert_eq!(owner(&t, review).await, None);
    Ok(())
}

#[tokio::test]
async fn a_program_with_plain_names_holds_the_copies_another_declared() -> docrel::Result<()> {
    let t = TestDb::new("fleet_copies").await?;
    stored::publish_types(&t.db, &b_schema()).await?;
    docrel::schema::obey(&t.db).await?;
    let bolt = ObjectId::new();
    let part = doc! {"_id": bolt, "code": 1, "name": "bolt", "rank": 1, "bin": 1};
    t.db.collection::<BsonDoc>("fl_parts").insert_one(part).await.expect("insert");
    let name =
        |d: &BsonDoc| d.get_array("parts").unwrap()[0].as_document().unwrap().get_str("name").unwrap().to_owned();

    // C writes a product naming the part as it likes: B's copy rule fills
    // the name from the part, on insert and on replace.
    let product = Product { id: ObjectId::new(), parts: vec![PartName { id: bolt, name: "?".into() }] };
    Product::repo(&t.db).insert(&product).await?;
    assert_eq!(name(&raw(&t, "fl_products", product.id).await), "bolt");
    Product::repo(&t.db).replace(&product).await?;
    assert_eq!(name(&raw(&t, "fl_products", product.id).await), "bolt");
    Ok(())
}
