//! Program A of the fleet tests (issue 28): it links only `Part` (and a
//! `Bin` with no subset, and a `Task` whose `owner` is a plain field),
//! while program B (tests/fleet_b.rs) also links the types that derive
//! data from parts: product copies of part names (`on_delete = pull`), a
//! subset of each bin's best parts, stickers that cascade and orders that
//! restrict; and it keeps `Task.owner` two-way with `Person.tasks`. B
//! publishes its schema (replayed here from B's own export,
//! tests/fixtures/fleet_b_schema.json); A obeys it, and A's inserts,
//! renames and deletes of parts and tasks leave B's documents exactly
//! right, read back with the raw driver.

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

/// A's task: the same collection as B's, whose `owner` is a plain field
/// here; B declares it one side of a two-way reference.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "fl_tasks")]
pub struct Task {
    #[serde(rename = "_id")]
    id: ObjectId,
    title: String,
    owner: Option<ObjectId>,
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
    assert_eq!(obeyed.stored_only, ["fl_orders", "fl_people", "fl_products", "fl_stickers"]);
    assert_eq!(obeyed.supplemented, ["fl_bins", "fl_tasks"]);
    assert!(obeyed.differences.iter().any(|d| d.contains("`fl_bins`") && d.contains("relation `top`")));

    // A writes bins and parts; B's subset of the best parts follows.
    Bin::repo(&t.db).insert(&Bin { id: 1 }).await?;
    let part = |code, name: &str, rank| Part { id: ObjectId::new(), code, name: name.into(), rank, bin: 1 };
    let (bolt, nut, gear) = (part(1, "bolt", 5), part(2, "nut", 7), part(3, "gear", 6));
    Part::repo(&t.db).insert_many(&[bolt.clone(), nut.clone(), gear.clone()]).await?;
    assert_eq!(names(&raw(&t, "fl_bins", 1).await.unwrap(), "top"), ["nut", "gear", "bolt"]);
    // A replaces the bin: B's subset is docrel's to keep, as where declared.
    Bin::repo(&t.db).replace(&Bin { id: 1 }).await?;
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

fn ids(d: &BsonDoc, field: &str) -> Vec<ObjectId> {
    d.get_array(field).unwrap().iter().map(|e| e.as_object_id().unwrap()).collect()
}

/// B's people, as B stores them: none owns a task yet.
async fn people(t: &TestDb, names: &[&str]) -> Vec<ObjectId> {
    let mut out = Vec::new();
    for name in names {
        let id = ObjectId::new();
        let person = doc! {"_id": id, "name": *name, "tasks": []};
        t.db.collection::<BsonDoc>("fl_people").insert_one(person).await.expect("insert");
        out.push(id);
    }
    out
}

#[tokio::test]
async fn a_program_with_a_plain_owner_keeps_the_two_way_reference_another_declared() -> docrel::Result<()> {
    let t = TestDb::new("fleet_tasks").await?;
    stored::publish_types(&t.db, &b_schema()).await?;
    docrel::schema::publish(&t.db).await?;
    let obeyed = docrel::schema::obey(&t.db).await?;
    assert!(obeyed.differences.iter().any(|d| d.contains("`fl_tasks`") && d.contains("relation `owner`")));
    let (kate, joe) = match people(&t, &["Kate", "Joe"]).await[..] {
        [kate, joe] => (kate, joe),
        _ => unreachable!(),
    };
    let task = |title: &str, owner| Task { id: ObjectId::new(), title: title.into(), owner };

    // A inserts a task with an owner: B's person lists it.
    let plan = task("plan", Some(kate));
    Task::repo(&t.db).insert(&plan).await?;
    assert_eq!(ids(&raw(&t, "fl_people", kate).await.unwrap(), "tasks"), [plan.id]);
    // Several at once, and one saved new: each owner lists its own.
    let (grade, mark) = (task("grade", Some(joe)), task("mark", None));
    Task::repo(&t.db).insert_many(&[grade.clone(), mark.clone()]).await?;
    let review = task("review", Some(joe));
    Task::repo(&t.db).save(&review).await?;
    assert_eq!(ids(&raw(&t, "fl_people", joe).await.unwrap(), "tasks"), [grade.id, review.id]);

    // An update of the owner is refused, as where the reference is
    // declared: it would leave the other side behind.
    let err = Task::repo(&t.db).update_by_id(&plan.id, Task::fields().owner.set(Some(joe))).await.unwrap_err();
    assert!(matches!(err, Error::TwoWayField { field: "owner", .. }), "{err}");
    assert!(err.to_string().contains("nothing was written"), "{err}");
    assert_eq!(raw(&t, "fl_tasks", plan.id).await.unwrap().get_object_id("owner").unwrap(), kate);
    assert_eq!(ids(&raw(&t, "fl_people", joe).await.unwrap(), "tasks"), [grade.id, review.id]);

    // Replace and save keep the stored owner (docrel's to keep, through
    // the reference's handle where it is declared): both sides still agree.
    Task::repo(&t.db).replace(&Task { title: "plan v2".into(), owner: Some(joe), ..plan.clone() }).await?;
    Task::repo(&t.db).save(&Task { title: "mark v2".into(), owner: Some(kate), ..mark.clone() }).await?;
    let stored = raw(&t, "fl_tasks", plan.id).await.unwrap();
    assert_eq!((stored.get_str("title").unwrap(), stored.get_object_id("owner").unwrap()), ("plan v2", kate));
    let stored = raw(&t, "fl_tasks", mark.id).await.unwrap();
    assert_eq!((stored.get_str("title").unwrap(), stored.get("owner")), ("mark v2", Some(&Bson::Null)));
    assert_eq!(ids(&raw(&t, "fl_people", kate).await.unwrap(), "tasks"), [plan.id]);
    assert_eq!(ids(&raw(&t, "fl_people", joe).await.unwrap(), "tasks"), [grade.id, review.id]);

    // A deletes tasks: their owners let go of them.
    assert!(Task::repo(&t.db).delete_by_id(&plan.id).await?);
    assert_eq!(Task::repo(&t.db).delete_many(Task::fields().owner.eq(Some(joe))).await?, 2);
    assert_eq!(ids(&raw(&t, "fl_people", kate).await.unwrap(), "tasks"), Vec::<ObjectId>::new());
    assert_eq!(ids(&raw(&t, "fl_people", joe).await.unwrap(), "tasks"), Vec::<ObjectId>::new());
    Ok(())
}

/// Issue 38, review 4: the rules a database's published schema adds are
/// that database's. A process obeying B's rules in one database writes a
/// second database, where nobody published them, by this program's own
/// rules alone: a rename there rewrites no copy of B's, a delete cascades
/// into no sticker and pulls no part, and a check there finds none of B's
/// derived data. Before, one graph served the whole process.
#[tokio::test]
async fn the_rules_published_in_one_database_never_run_in_another() -> docrel::Result<()> {
    let with_rules = TestDb::new("fleet_ruled").await?;
    stored::publish_types(&with_rules.db, &b_schema()).await?;
    docrel::schema::obey(&with_rules.db).await?;
    let without = TestDb::new("fleet_unruled").await?;
    let obeyed = docrel::schema::obey(&without.db).await?;
    assert!(obeyed.stored_only.is_empty(), "{:?}", obeyed.stored_only);

    let t = &without;
    Bin::repo(&t.db).insert(&Bin { id: 1 }).await?;
    let nut = Part { id: ObjectId::new(), code: 2, name: "nut".into(), rank: 7, bin: 1 };
    Part::repo(&t.db).insert(&nut).await?;
    let product = ObjectId::new();
    let products = t.db.collection::<BsonDoc>("fl_products");
    products.insert_one(doc! {"_id": product, "parts": [{"id": nut.id, "name": "nut"}]}).await.expect("insert");
    let sticker = ObjectId::new();
    t.db.collection::<BsonDoc>("fl_stickers").insert_one(doc! {"_id": sticker, "part": nut.id}).await.expect("insert");

    // No subset of B's in this database: the bin keeps no `top`.
    assert_eq!(raw(t, "fl_bins", 1).await.unwrap(), doc! {"_id": 1});
    Part::repo(&t.db).update_by_id(&nut.id, Part::fields().name.set("hex nut".to_owned())).await?;
    assert_eq!(names(&raw(t, "fl_products", product).await.unwrap(), "parts"), ["nut"]);
    assert!(docrel::check::named(docrel::check::CheckKind::Copies, "fl_parts").is_err());
    let report = docrel::admin::checks::verify(&t.db, None)?.run(|| false, |_, _| {}).await?;
    assert!(!report.jobs.iter().any(|j| j.name.contains("fl_parts")), "{:?}", report.jobs);
    assert!(Part::repo(&t.db).delete_by_id(&nut.id).await?);
    assert!(raw(t, "fl_stickers", sticker).await.is_some());
    assert_eq!(names(&raw(t, "fl_products", product).await.unwrap(), "parts"), ["nut"]);

    // The database with the rules still follows them, after all that.
    let t = &with_rules;
    Bin::repo(&t.db).insert(&Bin { id: 1 }).await?;
    Part::repo(&t.db).insert(&nut).await?;
    let products = t.db.collection::<BsonDoc>("fl_products");
    products.insert_one(doc! {"_id": product, "parts": [{"id": nut.id, "name": "nut"}]}).await.expect("insert");
    Part::repo(&t.db).update_by_id(&nut.id, Part::fields().name.set("hex nut".to_owned())).await?;
    assert_eq!(names(&raw(t, "fl_products", product).await.unwrap(), "parts"), ["hex nut"]);
    assert_eq!(names(&raw(t, "fl_bins", 1).await.unwrap(), "top"), ["hex nut"]);
    Ok(())
}

/// B's schema without its stickers, and then with them: a rule change
/// that alters the graph A follows.
fn b_without_stickers() -> Vec<StoredType> {
    b_schema().into_iter().filter(|t| t.collection != "fl_stickers").collect()
}

/// Review 6, in a caller's transaction: writes made under rules that
/// changed past their lease before the commit would escape the change's
/// backfill; docrel's `commit` aborts it instead, and nothing is written.
#[tokio::test]
async fn a_transaction_that_outlives_its_lease_while_the_rules_change_is_aborted() -> docrel::Result<()> {
    let t = TestDb::new("fleet_lapse_txn").await?;
    docrel::schema::set_lease_for(&t.db, std::time::Duration::from_millis(300));
    stored::publish_types(&t.db, &b_without_stickers()).await?;
    docrel::schema::obey(&t.db).await?;
    let driver = |e| Error::driver("session", "", e);
    let mut s = t.client.start_session().await.map_err(driver)?;

    // Within the lease: the commit goes through.
    s.start_transaction().await.map_err(driver)?;
    let bolt = Part { id: ObjectId::new(), code: 1, name: "bolt".into(), rank: 1, bin: 1 };
    Part::repo(&t.db).insert(&bolt).session(&mut s).await?;
    docrel::repository::commit(&mut s).await?;
    assert!(raw(&t, "fl_parts", bolt.id).await.is_some());

    s.start_transaction().await.map_err(driver)?;
    let nut = Part { id: ObjectId::new(), code: 2, name: "nut".into(), rank: 7, bin: 1 };
    Part::repo(&t.db).insert(&nut).session(&mut s).await?;
    stored::publish_types(&t.db, &b_schema()).await?;
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    let err = docrel::repository::commit(&mut s).await.unwrap_err();
    assert!(matches!(err, Error::RulesChanged { .. }), "{err}");
    assert!(err.to_string().contains("nothing was written") && err.is_transient(), "{err}");
    assert!(raw(&t, "fl_parts", nut.id).await.is_none(), "the transaction was aborted");
    Ok(())
}
