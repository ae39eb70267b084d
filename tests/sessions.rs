//! The caller's own sessions and transactions: docrel writes made in a
//! user's transaction, and everything derived from them (copies, subsets,
//! the inverse side of two-way references), commit or abort together.
//! Read back with the raw driver.

use docrel::bson::{doc, oid::ObjectId, Bson, DateTime, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::{Document, View};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "suppliers")]
struct Supplier {
    #[serde(rename = "_id")]
    id: i32,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    #[reference(to = Supplier)]
    supplier: i32,
    #[denormalize(from = Supplier::name, via = supplier)]
    supplier_name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "shops")]
struct Shop {
    #[serde(rename = "_id")]
    id: i32,
    name: String,
    #[embed(max = 3, subset_of = Review, sort = "-stars", key = review_id)]
    top: Vec<ReviewLine>,
}

#[derive(View, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[view(of = Review)]
struct ReviewLine {
    review_id: i32,
    stars: i32,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "reviews")]
struct Review {
    #[serde(rename = "_id")]
    id: ObjectId,
    review_id: i32,
    #[parent_ref(to = Shop)]
    shop: i32,
    stars: i32,
    at: DateTime,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "people")]
struct Person {
    #[serde(rename = "_id")]
    id: i32,
    name: String,
    #[serde(default)]
    #[reference(many, to = Task, inverse = owner, max = 100)]
    tasks: Vec<ObjectId>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "tasks")]
struct Task {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Person, inverse = tasks)]
    owner: Option<i32>,
    #[serde(default)]
    #[denormalize(from = Person::name, via = owner)]
    owner_name: Option<String>,
}

async fn raw(t: &TestDb, collection: &str, id: impl Into<Bson>) -> Option<BsonDoc> {
    t.db.collection::<BsonDoc>(collection).find_one(doc! {"_id": id.into()}).await.unwrap()
}

fn review(review_id: i32, stars: i32) -> Review {
    Review { id: ObjectId::new(), review_id, shop: 1, stars, at: DateTime::now() }
}

fn top_ids(shop: &BsonDoc) -> Vec<i32> {
    shop.get_array("top").unwrap().iter().map(|e| e.as_document().unwrap().get_i32("review_id").unwrap()).collect()
}

/// What committed before the user's transactions: a supplier, a part that
/// copies its name, a shop whose subset holds one review.
async fn seed(t: &TestDb) -> docrel::Result<ObjectId> {
    Supplier::repo(&t.db).insert(&Supplier { id: 1, name: "Acme".into() }).await?;
    let old = Part { id: ObjectId::new(), name: "bolt".into(), supplier: 1, supplier_name: String::new() };
    Part::repo(&t.db).insert(&old).await?;
    Shop::repo(&t.db).insert(&Shop { id: 1, name: "corner".into(), top: vec![] }).await?;
    Review::repo(&t.db).insert(&review(1, 3)).await?;
    Ok(old.id)
}

/// Three docrel writes with derived data in one user transaction: a
/// holder inserted (its copy filled), the source renamed (the copies fanned
/// out, through a repository that would open a transaction of its own), a
/// child inserted (pushed into its parent's subset).
async fn three_writes(
    t: &TestDb,
    s: &mut docrel::mongodb::ClientSession,
    new_part: &Part,
    new_review: &Review,
) -> docrel::Result<()> {
    Part::repo(&t.db).insert(new_part).session(s).await?;
    Supplier::repo(&t.db)
        .transactional_fan_out()
        .update_by_id(&1, Supplier::fields().name.set("Acme Corp".to_owned()))
        .session(s)
        .await?;
    Review::repo(&t.db).insert(new_review).session(s).await?;
    Ok(())
}

#[tokio::test]
async fn a_user_transaction_commits_or_aborts_every_derived_write() -> docrel::Result<()> {
    let t = TestDb::new("session_tx").await?;
    let old = seed(&t).await?;
    let new_part = Part { id: ObjectId::new(), name: "nut".into(), supplier: 1, supplier_name: "stale".into() };
    let new_review = review(2, 5);

    let mut s = t.client.start_session().await.expect("start_session");
    s.start_transaction().await.expect("start_transaction");
    three_writes(&t, &mut s, &new_part, &new_review).await?;
    // Inside the transaction its writes are seen, copies included.
    let parts = Part::repo(&t.db);
    assert_eq!(parts.require(&new_part.id).session(&mut s).await?.supplier_name, "Acme Corp");
    assert_eq!(parts.require(&old).session(&mut s).await?.supplier_name, "Acme Corp");
    s.abort_transaction().await.expect("abort_transaction");

    assert_eq!(raw(&t, "suppliers", 1).await.unwrap().get_str("name").unwrap(), "Acme");
    assert_eq!(raw(&t, "parts", old).await.unwrap().get_str("supplier_name").unwrap(), "Acme");
    assert!(raw(&t, "parts", new_part.id).await.is_none());
    assert!(raw(&t, "reviews", new_review.id).await.is_none());
    assert_eq!(top_ids(&raw(&t, "shops", 1).await.unwrap()), [1]);

    s.start_transaction().await.expect("start_transaction");
    three_writes(&t, &mut s, &new_part, &new_review).await?;
    s.commit_transaction().await.expect("commit_transaction");

    assert_eq!(raw(&t, "suppliers", 1).await.unwrap().get_str("name").unwrap(), "Acme Corp");
    assert_eq!(raw(&t, "parts", old).await.unwrap().get_str("supplier_name").unwrap(), "Acme Corp");
    assert_eq!(raw(&t, "parts", new_part.id).await.unwrap().get_str("supplier_name").unwrap(), "Acme Corp");
    assert!(raw(&t, "reviews", new_review.id).await.is_some());
    assert_eq!(top_ids(&raw(&t, "shops", 1).await.unwrap()), [2, 1]);
    assert!(Shop::rels().top.check(&t.db, &1).await?);
    Ok(())
}

/// A session outside a transaction: each write and what it derives runs in
/// it and is applied at once; a repository with transactional fan-out runs
/// its transaction on the caller's session.
#[tokio::test]
async fn writes_in_a_session_outside_a_transaction_apply_at_once() -> docrel::Result<()> {
    let t = TestDb::new("session_plain").await?;
    let old = seed(&t).await?;
    let mut s = t.client.start_session().await.expect("start_session");
    let new_part = Part { id: ObjectId::new(), name: "nut".into(), supplier: 1, supplier_name: String::new() };
    Part::repo(&t.db).insert(&new_part).session(&mut s).await?;
    assert_eq!(raw(&t, "parts", new_part.id).await.unwrap().get_str("supplier_name").unwrap(), "Acme");

    let suppliers = Supplier::repo(&t.db).transactional_fan_out();
    suppliers.update_by_id(&1, Supplier::fields().name.set("Acme Corp".to_owned())).session(&mut s).await?;
    for id in [old, new_part.id] {
        assert_eq!(raw(&t, "parts", id).await.unwrap().get_str("supplier_name").unwrap(), "Acme Corp");
    }

    let reviews = Review::repo(&t.db);
    let best = review(2, 5);
    reviews.insert(&best).session(&mut s).await?;
    assert_eq!(top_ids(&raw(&t, "shops", 1).await.unwrap()), [2, 1]);
    assert!(reviews.delete_by_id(&best.id).session(&mut s).await?);
    assert_eq!(top_ids(&raw(&t, "shops", 1).await.unwrap()), [1]);
    assert_eq!(reviews.count(docrel::Filter::all()).session(&mut s).await?, 1);
    Ok(())
}

/// A two-way reassign in the user's transaction: both sides, and the copy
/// that follows the reference, commit or abort with it (no transaction of
/// docrel's own nested in it).
#[tokio::test]
async fn a_two_way_link_joins_the_user_transaction() -> docrel::Result<()> {
    let t = TestDb::new("session_link").await?;
    Person::repo(&t.db).insert(&Person { id: 1, name: "Ann".into(), tasks: vec![] }).await?;
    let task = Task { id: ObjectId::new(), owner: None, owner_name: None };
    Task::repo(&t.db).insert(&task).await?;
    let owner = Task::rels().owner;

    let mut s = t.client.start_session().await.expect("start_session");
    s.start_transaction().await.expect("start_transaction");
    let outcome = owner.reassign(&t.db, &task.id, &1).session(&mut s).await?;
    assert!(outcome.transactional && outcome.changed);
    s.abort_transaction().await.expect("abort_transaction");
    assert!(raw(&t, "people", 1).await.unwrap().get_array("tasks").unwrap().is_empty());
    let stored = raw(&t, "tasks", task.id).await.unwrap();
    assert!(stored.get("owner").is_none_or(|o| *o == Bson::Null));
    assert!(stored.get("owner_name").is_none_or(|o| *o == Bson::Null));

    s.start_transaction().await.expect("start_transaction");
    owner.reassign(&t.db, &task.id, &1).session(&mut s).await?;
    Person::repo(&t.db).update_by_id(&1, Person::fields().name.set("Anne".to_owned())).session(&mut s).await?;
    s.commit_transaction().await.expect("commit_transaction");
    assert_eq!(raw(&t, "people", 1).await.unwrap().get_array("tasks").unwrap(), &vec![Bson::ObjectId(task.id)]);
    let stored = raw(&t, "tasks", task.id).await.unwrap();
    assert_eq!(stored.get_i32("owner").unwrap(), 1);
    assert_eq!(stored.get_str("owner_name").unwrap(), "Anne");

    // Unlinked in a session outside a transaction: docrel's own transaction, on it.
    let outcome = owner.unlink(&t.db, &task.id, &1).session(&mut s).await?;
    assert!(outcome.transactional && outcome.changed);
    assert!(raw(&t, "people", 1).await.unwrap().get_array("tasks").unwrap().is_empty());
    Ok(())
}

#[derive(View, Deserialize, Debug)]
#[view(of = Supplier)]
struct SupplierName {
    name: String,
}

/// Reads in the user's transaction see its writes: a load, a find, the
/// children of a parent and the referrers of a target read in the session
/// find what was inserted in it, the same reads outside do not.
#[tokio::test]
async fn reads_in_the_transaction_see_its_writes() -> docrel::Result<()> {
    let t = TestDb::new("session_reads").await?;
    let part = Part { id: ObjectId::new(), name: "nut".into(), supplier: 2, supplier_name: String::new() };
    let parts = std::slice::from_ref(&part);
    let supplier = Part::rels().supplier;

    let mut s = t.client.start_session().await.expect("start_session");
    s.start_transaction().await.expect("start_transaction");
    Supplier::repo(&t.db).insert(&Supplier { id: 2, name: "Bolt Co".into() }).session(&mut s).await?;
    let inside = supplier.load::<SupplierName>(&t.db, parts).session(&mut s).await?;
    assert_eq!(inside.one(0).map(|x| x.name.as_str()), Some("Bolt Co"));
    let found = Supplier::repo(&t.db).find(Supplier::fields().name.eq("Bolt Co")).session(&mut s).await?;
    assert_eq!(found.len(), 1);

    Shop::repo(&t.db).insert(&Shop { id: 1, name: "corner".into(), top: vec![] }).session(&mut s).await?;
    Review::repo(&t.db).insert(&review(1, 4)).session(&mut s).await?;
    let children = Review::rels().shop.children_of(&t.db, &1).session(&mut s).await?;
    assert_eq!(children.len(), 1);
    Part::repo(&t.db).insert(&part).session(&mut s).await?;
    let referrers = supplier.referrers_of_many(&t.db, &[2]).session(&mut s).await?;
    assert_eq!(referrers.of(0).map(|p| p.supplier_name.as_str()).collect::<Vec<_>>(), ["Bolt Co"]);

    let latest = Review::rels()
        .shop
        .latest_per_parent(&t.db, &[1], 5)
        .sort(Review::fields().stars.desc())
        .session(&mut s)
        .await?;
    assert_eq!(latest.of(0).map(|r| r.review_id).collect::<Vec<_>>(), [1]);
    let joined = docrel::join(&t.db, supplier.of::<SupplierName>(parts)).session(&mut s).await?;
    assert_eq!(joined.one(0).map(|x| x.name.as_str()), Some("Bolt Co"));
    for strategy in [docrel::load::Strategy::Separate, docrel::load::Strategy::Lookup] {
        let find = Part::repo(&t.db).find(Part::fields().supplier.eq(2));
        let (found, loaded) =
            supplier.with_parents(find).view::<SupplierName>().strategy(strategy).session(&mut s).await?;
        assert_eq!(found.len(), 1, "{strategy:?}");
        assert_eq!(loaded.one(0).map(|x| x.name.as_str()), Some("Bolt Co"), "{strategy:?}");
    }

    let outside = supplier.load::<SupplierName>(&t.db, parts).await?;
    assert!(Review::rels()
        .shop
        .latest_per_parent(&t.db, &[1], 5)
        .sort(Review::fields().stars.desc())
        .await?
        .of(0)
        .next()
        .is_none());
    let joined = docrel::join(&t.db, supplier.of::<SupplierName>(parts)).await?;
    assert!(joined.one(0).is_none());
    let (found, _) = supplier.with_parents(Part::repo(&t.db).find(Part::fields().supplier.eq(2))).await?;
    assert!(found.is_empty());
    assert!(Review::rels().shop.children_of(&t.db, &1).await?.is_empty());
    assert_eq!(supplier.referrers_of_many(&t.db, &[2]).await?.of(0).count(), 0);
    assert!(outside.one(0).is_none());
    assert!(Supplier::repo(&t.db).get(&2).await?.is_none());
    s.abort_transaction().await.expect("abort_transaction");
    Ok(())
}

/// A docrel call that fails inside the user's transaction (a duplicate id)
/// returns the error; the user aborts, and the writes before it in the
/// transaction are gone with everything derived from them: the copies
/// fanned out, the subset push.
#[tokio::test]
async fn a_docrel_call_failing_inside_a_user_transaction_leaves_nothing_after_abort() -> docrel::Result<()> {
    let t = TestDb::new("session_fail").await?;
    let old = seed(&t).await?;
    let before_parts = raw(&t, "parts", old).await;
    let before_shop = raw(&t, "shops", 1).await;

    let mut s = t.client.start_session().await.expect("start_session");
    s.start_transaction().await.expect("start_transaction");
    Supplier::repo(&t.db).update_by_id(&1, Supplier::fields().name.set("Renamed".into())).session(&mut s).await?;
    Review::repo(&t.db).insert(&review(2, 5)).session(&mut s).await?;
    Person::repo(&t.db).insert(&Person { id: 9, name: "Ann".into(), tasks: vec![] }).session(&mut s).await?;
    // The same review again: the server refuses the duplicate id, and with
    // it the rest of the transaction.
    let again = Review::repo(&t.db).find(Review::fields().review_id.eq(2)).session(&mut s).await?;
    let err = Review::repo(&t.db).insert(&again[0]).session(&mut s).await.unwrap_err();
    assert!(matches!(err, docrel::Error::Driver { operation: "insert", .. }), "{err}");
    s.abort_transaction().await.expect("abort_transaction");

    assert_eq!(raw(&t, "parts", old).await, before_parts, "the copy is as before the transaction");
    assert_eq!(raw(&t, "shops", 1).await, before_shop, "the subset is as before");
    assert_eq!(raw(&t, "suppliers", 1).await.unwrap().get_str("name").unwrap(), "Acme");
    assert!(raw(&t, "people", 9).await.is_none());
    assert_eq!(t.db.collection::<BsonDoc>("reviews").count_documents(doc! {}).await.unwrap(), 1);
    Ok(())
}
