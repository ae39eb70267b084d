//! Lifecycle hooks (issue 30, item 10): `impl docrel::repository::Hooks for Part` runs
//! before every insert, update and delete of a `Part` made through its
//! repository, inside docrel's write plan, and after each committed write;
//! a refusal writes nothing. Documents are read back with the raw driver.

use docrel::bson::{doc, oid::ObjectId, Bson, DateTime, Document as BsonDoc};
use docrel::repository::{Committed, Write};
use docrel::testing::TestDb;
use docrel::{repository::Hooks, Document, Embedded, Error, Filter, Misuse, Update};
use serde::{Deserialize, Serialize};
use std::sync::Mutex;

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "hk_parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    qty: i64,
    #[serde(default)]
    touched: Option<DateTime>,
}

/// An element of `hk_products.parts`, copying the part's name.
#[derive(Embedded, Serialize, Deserialize, Debug, Clone)]
struct PartRef {
    id: ObjectId,
    #[denormalize(from = Part::name)]
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "hk_products")]
struct Product {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = Part, max = 10)]
    parts: Vec<PartRef>,
}

/// What the hooks saw, in order: one line per call.
static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// The tests share `SEEN`: they run one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn seen(line: String) {
    SEEN.lock().unwrap().push(line);
}

fn take() -> Vec<String> {
    std::mem::take(&mut *SEEN.lock().unwrap())
}

fn invalid(message: &str) -> Error {
    Error::Invalid { what: Misuse::Application("part"), message: message.into() }
}

impl Hooks for Part {
    fn before_insert(&self, write: Write) -> docrel::Result<()> {
        seen(format!("before {write:?} {}", self.name));
        if self.qty < 0 {
            return Err(invalid("a part's qty is never below zero"));
        }
        Ok(())
    }

    fn before_update(update: &mut Update<Self>, _filter: &BsonDoc, write: Write) -> docrel::Result<()> {
        let body = update.to_document()?;
        let ops: Vec<&str> = body.keys().map(String::as_str).collect();
        seen(format!("before {write:?} {}", ops.join(",")));
        let qty = body.get_document("$set").ok().and_then(|s| s.get_i64("qty").ok());
        if qty.is_some_and(|q| q < 0) {
            return Err(invalid("a part's qty is never below zero"));
        }
        // An invariant of the application, kept beside docrel's: every update stamps `touched`.
        update.also(Part::fields().touched.set(Some(DateTime::from_millis(1_000))));
        Ok(())
    }

    fn before_delete(filter: &BsonDoc, write: Write) -> docrel::Result<()> {
        seen(format!("before {write:?}"));
        let name = match filter.get("name") {
            Some(Bson::Document(cond)) => cond.get("$eq"),
            other => other,
        };
        if name == Some(&Bson::String("keep".into())) {
            return Err(invalid("parts named keep are kept"));
        }
        Ok(())
    }

    fn after_commit(committed: &Committed<Self>) {
        seen(format!("after {:?} {} {}", committed.write, committed.ids.len(), committed.count));
    }
}

fn part(name: &str, qty: i64) -> Part {
    Part { id: ObjectId::new(), name: name.into(), qty, touched: None }
}

async fn stored(t: &TestDb, collection: &str) -> Vec<BsonDoc> {
    use futures::TryStreamExt;
    let found = t.db.collection::<BsonDoc>(collection).find(doc! {}).await.unwrap();
    found.try_collect().await.unwrap()
}

#[tokio::test]
async fn every_write_runs_its_hooks_once_and_after_commit_once() -> docrel::Result<()> {
    let _one = SERIAL.lock().await;
    let t = TestDb::new("hk_every").await?;
    let parts = Part::repo(&t.db);
    take();
    let bolt = part("bolt", 5);
    let mark = t.trips.mark();
    parts.insert(&bolt).await?;
    // What an insert of a source of copies costs anyway: a hook adds no round trip.
    assert_eq!(t.trips.commands_since(mark), ["insert hk_parts", "find hk_products"]);
    assert_eq!(take(), ["before Insert bolt", "after Insert 1 1"]);

    parts.insert_many(&[part("nut", 1), part("washer", 2)]).await?;
    assert_eq!(take(), ["before InsertMany nut", "before InsertMany washer", "after InsertMany 2 2"]);

    let mut bolt2 = bolt.clone();
    bolt2.qty = 6;
    parts.replace(&bolt2).await?;
    assert_eq!(take(), ["before Replace bolt", "after Replace 1 1"]);

    parts.update_by_id(&bolt.id, Part::fields().qty.set(7)).await?;
    assert_eq!(take(), ["before UpdateById $set", "after UpdateById 1 1"]);
    // The hook's own addition to the update was written with it.
    let raw = t.db.collection::<BsonDoc>("hk_parts").find_one(doc! {"_id": bolt.id}).await.unwrap().unwrap();
    assert_eq!(
        (raw.get_i64("qty").ok(), raw.get("touched")),
        (Some(7), Some(&Bson::DateTime(DateTime::from_millis(1_000))))
    );

    parts.update_many(Part::fields().qty.lt(3), Part::fields().qty.inc(10)).await?;
    assert_eq!(take(), ["before UpdateMany $inc", "after UpdateMany 0 2"]);

    let out = parts.upsert(Part::fields().name.eq("gear"), Part::fields().qty.set(3)).await?;
    assert!(out.upserted_id.is_some());
    assert_eq!(take(), ["before Upsert $set", "after Upsert 1 1"]);

    assert!(parts.delete_by_id(&bolt.id).await?);
    assert_eq!(take(), ["before DeleteById", "after DeleteById 1 1"]);
    assert_eq!(parts.delete_many(Filter::all()).await?, 3);
    assert_eq!(take(), ["before DeleteMany", "after DeleteMany 0 3"]);
    // A write that wrote nothing commits nothing.
    assert!(!parts.delete_by_id(&bolt.id).await?);
    assert_eq!(take(), ["before DeleteById"]);
    Ok(())
}

#[tokio::test]
async fn a_refusing_hook_writes_nothing_and_sends_nothing() -> docrel::Result<()> {
    let _one = SERIAL.lock().await;
    let t = TestDb::new("hk_refuse").await?;
    let parts = Part::repo(&t.db);
    let keep = part("keep", 1);
    parts.insert(&keep).await?;
    take();

    let mark = t.trips.mark();
    let err = parts.insert(&part("negative", -1)).await.unwrap_err();
    assert!(matches!(err, Error::Invalid { what: Misuse::Application("part"), .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("never below zero") && text.contains("nothing was written"), "{text}");
    let err = parts.insert_many(&[part("fine", 1), part("negative", -1)]).await.unwrap_err();
    assert!(err.to_string().contains("before_insert"), "{err}");
    let err = parts.update_by_id(&keep.id, Part::fields().qty.set(-4)).await.unwrap_err();
    assert!(err.to_string().contains("before_update"), "{err}");
    let err = parts.upsert(Part::fields().name.eq("new"), Part::fields().qty.set(-4)).await.unwrap_err();
    assert!(err.to_string().contains("nothing was written"), "{err}");
    let err = parts.delete_one(Part::fields().name.eq("keep")).await.unwrap_err();
    assert!(err.to_string().contains("before_delete"), "{err}");
    assert_eq!(t.trips.since(mark), 0, "refused before the first round trip");
    assert!(!take().iter().any(|l| l.starts_with("after")));

    // Nothing stored changed.
    let docs = stored(&t, "hk_parts").await;
    assert_eq!(docs.len(), 1, "{docs:?}");
    assert_eq!((docs[0].get_str("name").ok(), docs[0].get_i64("qty").ok()), (Some("keep"), Some(1)));
    assert_eq!(docs[0].get("touched"), Some(&Bson::Null));
    Ok(())
}

#[tokio::test]
async fn hooks_run_inside_the_write_plan_so_a_hooked_update_fans_out() -> docrel::Result<()> {
    let _one = SERIAL.lock().await;
    let t = TestDb::new("hk_plan").await?;
    let bolt = part("bolt", 5);
    Part::repo(&t.db).insert(&bolt).await?;
    let product = Product { id: ObjectId::new(), parts: vec![PartRef { id: bolt.id, name: String::new() }] };
    Product::repo(&t.db).insert(&product).await?;
    take();
    Part::repo(&t.db).update_by_id(&bolt.id, Part::fields().name.set("bolt M6".into())).await?;
    let products = stored(&t, "hk_products").await;
    let copy = products[0].get_array("parts").unwrap()[0].as_document().unwrap().get_str("name").unwrap().to_owned();
    assert_eq!(copy, "bolt M6", "the copy follows the hooked update");
    let raw = t.db.collection::<BsonDoc>("hk_parts").find_one(doc! {"_id": bolt.id}).await.unwrap().unwrap();
    assert_eq!(raw.get("touched"), Some(&Bson::DateTime(DateTime::from_millis(1_000))));
    Ok(())
}

#[tokio::test]
async fn after_commit_waits_for_the_callers_commit() -> docrel::Result<()> {
    let _one = SERIAL.lock().await;
    let t = TestDb::new("hk_txn").await?;
    let parts = Part::repo(&t.db);
    let driver = |e| Error::driver("session", "", e);
    let mut s = t.client.start_session().await.map_err(driver)?;
    take();

    s.start_transaction().await.map_err(driver)?;
    let (a, b) = (part("a", 1), part("b", 2));
    parts.insert(&a).session(&mut s).await?;
    parts.update_by_id(&a.id, Part::fields().qty.set(3)).session(&mut s).await?;
    parts.insert(&b).session(&mut s).await?;
    assert!(!take().iter().any(|l| l.starts_with("after")), "nothing is committed yet");
    docrel::repository::commit(&mut s).await?;
    let after: Vec<String> = take().into_iter().filter(|l| l.starts_with("after")).collect();
    assert_eq!(after, ["after Insert 1 1", "after UpdateById 1 1", "after Insert 1 1"]);
    assert_eq!(stored(&t, "hk_parts").await.len(), 2);

    // Aborted: the writes are gone, and so are their after-commit hooks.
    s.start_transaction().await.map_err(driver)?;
    parts.insert(&part("c", 1)).session(&mut s).await?;
    docrel::repository::abort(&mut s).await?;
    docrel::repository::commit(&mut s).await.ok();
    assert!(!take().iter().any(|l| l.starts_with("after")));
    assert_eq!(stored(&t, "hk_parts").await.len(), 2);

    // A session outside a transaction: each write commits on its own.
    parts.insert(&part("d", 1)).session(&mut s).await?;
    assert_eq!(take(), ["before Insert d", "after Insert 1 1"]);
    Ok(())
}

/// Review 7 of issue 38: the driver reuses a server session for the next
/// transaction, so hooks queued by the session's id alone ran at the next
/// commit when a transaction ended without docrel's `abort` (here the
/// driver's own). They belong to that transaction and never run.
#[tokio::test]
async fn hooks_of_a_transaction_the_driver_aborted_never_run() -> docrel::Result<()> {
    let _one = SERIAL.lock().await;
    let t = TestDb::new("hk_reuse").await?;
    let parts = Part::repo(&t.db);
    let driver = |e| Error::driver("session", "", e);
    let mut s = t.client.start_session().await.map_err(driver)?;
    take();

    s.start_transaction().await.map_err(driver)?;
    parts.insert(&part("gone", 1)).session(&mut s).await?;
    s.abort_transaction().await.map_err(driver)?;

    s.start_transaction().await.map_err(driver)?;
    parts.insert(&part("kept", 1)).session(&mut s).await?;
    docrel::repository::commit(&mut s).await?;
    assert_eq!(take(), ["before Insert gone", "before Insert kept", "after Insert 1 1"]);
    let names: Vec<String> =
        stored(&t, "hk_parts").await.iter().map(|d| d.get_str("name").unwrap().to_string()).collect();
    assert_eq!(names, ["kept"]);
    Ok(())
}
