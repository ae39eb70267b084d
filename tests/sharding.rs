//! Shard keys: with `#[document(shard_key(..))]` declared, every write
//! docrel aims at one document carries the whole key in its filter (so a
//! sharded cluster routes it to one shard), the unique bucket index starts
//! with the bucket's key, and a caller's single-document filter without the
//! key is refused before anything is sent. Seen in the commands the client
//! sends, recorded whole; the same recording is checked against the table
//! of `docs/deployment.md`.

use docrel::bson::{doc, oid::ObjectId, Bson, Document as BsonDoc};
use docrel::mongodb::event::{command::CommandEvent, EventHandler};
use docrel::{Document, Embedded, Error, Misuse};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[document(collection = "sk_parts", shard_key(tenant, id))]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    tenant: String,
    name: String,
    price: i64,
}

#[derive(Embedded, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct PartRef {
    id: ObjectId,
    #[denormalize(from = Part::name)]
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[document(collection = "sk_products", shard_key(tenant, id))]
struct Product {
    #[serde(rename = "_id")]
    id: ObjectId,
    tenant: String,
    name: String,
    #[reference(many, to = Part, max = 20, on_delete = pull)]
    parts: Vec<PartRef>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[document(collection = "sk_orders", shard_key = (tenant, id))]
struct Order {
    #[serde(rename = "_id")]
    id: ObjectId,
    tenant: String,
    #[reference(to = Product, on_delete = cascade)]
    product: ObjectId,
    #[denormalize(from = Product::name, via = product)]
    product_name: String,
}

/// Sharded on `_id` alone: writes by id route.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[document(collection = "sk_hosts", shard_key(id))]
struct Host {
    #[serde(rename = "_id")]
    id: i32,
    name: String,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Msg {
    text: String,
}

/// A bucket collection sharded on its parent: every append knows it.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "sk_pages", shard_key(host))]
struct Page {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Host)]
    host: i32,
    page: i32,
    count: i32,
    #[bucket(size = 3)]
    msgs: Vec<Msg>,
}

/// Every command the client sent, whole.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<(String, BsonDoc)>>>);

impl Recorder {
    fn take(&self) -> Vec<(String, BsonDoc)> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

async fn connect(label: &str) -> docrel::Result<(docrel::mongodb::Database, Recorder)> {
    let uri = std::env::var("MONGODB_URI").expect("MONGODB_URI: run with scripts/test");
    let recorder = Recorder::default();
    let sink = recorder.clone();
    let mut options = docrel::client::options(&uri).await?;
    options.command_event_handler = Some(EventHandler::callback(move |e| {
        if let CommandEvent::Started(s) = e {
            sink.0.lock().unwrap().push((s.command_name.clone(), s.command.clone()));
        }
    }));
    let client = docrel::connect_with(&uri, options).await?;
    let db = client.database(&format!("t_{label}_{}", std::process::id()));
    db.drop().await.unwrap();
    Ok((db, recorder))
}

/// The shard key (stored names) of a collection, from the linked schemas.
fn shard_key_of(collection: &str) -> Option<&'static [&'static str]> {
    docrel::schema::registry::schemas().find(|s| s.collection == collection).map(|s| s.shard_key)
}

/// Whether `filter` fixes `field` by equality, at its top level or in a
/// top-level `$and`.
fn pins(filter: &BsonDoc, field: &str) -> bool {
    let here = match filter.get(field) {
        Some(Bson::Document(d)) => !d.keys().any(|k| k.starts_with('$')) || d.contains_key("$eq"),
        Some(_) => true,
        None => false,
    };
    here || matches!(filter.get("$and"), Some(Bson::Array(all)) if all.iter().any(|c| matches!(c, Bson::Document(d) if pins(d, field))))
}

/// The single-document writes of a command: (collection, filter).
fn single_document_writes(name: &str, command: &BsonDoc) -> Vec<(String, BsonDoc)> {
    let coll = command.get_str(name).unwrap_or_default().to_owned();
    let statements = |key: &str| command.get_array(key).cloned().unwrap_or_default();
    match name {
        "findAndModify" => vec![(coll, command.get_document("query").cloned().unwrap_or_default())],
        "update" => statements("updates")
            .iter()
            .filter_map(Bson::as_document)
            .filter(|u| !u.get_bool("multi").unwrap_or(false))
            .map(|u| (coll.clone(), u.get_document("q").cloned().unwrap_or_default()))
            .collect(),
        "delete" => statements("deletes")
            .iter()
            .filter_map(Bson::as_document)
            .filter(|d| d.get_i32("limit").map(i64::from).or_else(|_| d.get_i64("limit")).unwrap_or(0) == 1)
            .map(|d| (coll.clone(), d.get_document("q").cloned().unwrap_or_default()))
            .collect(),
        _ => Vec::new(),
    }
}

/// The shape `docs/deployment.md` lists a command under.
fn shape(name: &str, command: &BsonDoc) -> String {
    let one = !single_document_writes(name, command).is_empty();
    match name {
        "update" if one => "update (one)".into(),
        "update" => "update (many)".into(),
        "delete" if one => "delete (one)".into(),
        "delete" => "delete (many)".into(),
        other => other.to_owned(),
    }
}

/// The command shapes the table of `docs/deployment.md` lists (its first
/// column, in backticks).
fn documented_shapes() -> BTreeSet<String> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/deployment.md")).unwrap();
    text.lines().filter(|l| l.starts_with("| `")).filter_map(|l| l.split('`').nth(1).map(str::to_owned)).collect()
}

#[tokio::test]
async fn every_single_document_write_carries_the_shard_key() -> docrel::Result<()> {
    let (db, recorder) = connect("sharding").await?;
    recorder.take(); // the test's own clean-up
    for created in [Part::repo(&db).ensure_indexes().await?, Page::repo(&db).ensure_indexes().await?] {
        assert!(!created.is_empty());
    }
    let (parts, products, orders) = (Part::repo(&db), Product::repo(&db), Order::repo(&db));
    let tenant = "acme".to_owned();
    let shifter = Part { id: ObjectId::new(), tenant: tenant.clone(), name: "shifter".into(), price: 10 };
    let crank = Part { id: ObjectId::new(), tenant: tenant.clone(), name: "crank".into(), price: 20 };
    parts.insert_many(&[shifter.clone(), crank.clone()]).await?;
    let bike = Product {
        id: ObjectId::new(),
        tenant: tenant.clone(),
        name: "bike".into(),
        parts: vec![
            PartRef { id: shifter.id, name: "(filled)".into() },
            PartRef { id: crank.id, name: "(filled)".into() },
        ],
    };
    products.insert(&bike).await?;
    let order =
        Order { id: ObjectId::new(), tenant: tenant.clone(), product: bike.id, product_name: "(filled)".into() };
    orders.insert(&order).await?;

    // A rename through a filter on the whole key: one routed findAndModify,
    // then the fan-out to the products holding the part.
    let key = Part::fields().tenant.eq(tenant.as_str()).and(Part::fields().id.eq(shifter.id));
    parts.update_one(key, Part::fields().name.set("short shifter".to_owned())).await?;
    // Without the key, a single-document write is refused before it is sent.
    let mut recorded = recorder.take();
    let before = recorded.len();
    let err = parts.update_one(Part::fields().id.eq(crank.id), Part::fields().price.set(25)).await.unwrap_err();
    assert!(matches!(err, Error::Invalid { what: Misuse::ShardKey, .. }), "{err}");
    assert!(err.to_string().contains("`tenant`"), "{err}");
    let err = parts.delete_one(Part::fields().id.eq(crank.id)).await.unwrap_err();
    assert!(matches!(err, Error::Invalid { what: Misuse::ShardKey, .. }), "{err}");
    assert!(before > 0 && recorder.0.lock().unwrap().is_empty(), "a refused write sends nothing");

    // A copy made stale behind docrel's back, then repaired; buckets
    // miscounted behind its back, then recounted.
    db.collection::<BsonDoc>("sk_products")
        .update_one(doc! {"_id": bike.id, "tenant": &tenant}, doc! {"$set": {"parts.1.name": "stale"}})
        .await
        .unwrap();
    let before_repair = recorder.0.lock().unwrap().len();
    let report = docrel::check::copies::<Part>().repair(&db).run().await?;
    assert_eq!((report.stale, report.fixed), (1, 1), "{report:?}");
    assert!(recorder.0.lock().unwrap().len() > before_repair);

    // Replace and save (an upsert: legal on a sharded collection only with
    // the whole key), with the document in hand; a product renamed by
    // replace fans out to its order.
    let mut renamed = bike.clone();
    renamed.name = "road bike".into();
    products.replace(&renamed).await?;
    let wheel = Part { id: ObjectId::new(), tenant: tenant.clone(), name: "wheel".into(), price: 30 };
    parts.save(&wheel).await?;
    parts.save(&Part { price: 35, ..wheel.clone() }).await?;
    // Deletes: one by document, one by a filter on the whole key (with
    // its `on_delete` rules: pulled from the product).
    assert!(parts.delete(&wheel).await?);
    assert!(parts.delete_one(Part::fields().tenant.eq(tenant.as_str()).and(Part::fields().id.eq(crank.id))).await?);
    // By id, on a type sharded on `_id`.
    let hosts = Host::repo(&db);
    hosts.insert(&Host { id: 1, name: "www".into() }).await?;
    hosts.update_by_id(&1, Host::fields().name.set("www1".to_owned())).await?;
    // Buckets: seven appends open three pages.
    for i in 0..7 {
        Page::rels().msgs.append(&db, &1, &Msg { text: format!("m{i}") }).await?;
    }
    db.collection::<BsonDoc>("sk_pages").update_many(doc! {}, doc! {"$set": {"count": 0}}).await.unwrap();
    let report = docrel::check::buckets::<Page>().repair(&db).run().await?;
    assert_eq!(report.fixed, 3, "{report:?}");
    // A cascade from the product to its order, by document.
    assert!(products.delete(&renamed).await?);

    recorded.extend(recorder.take());
    let mut writes = 0;
    for (name, command) in &recorded {
        for (coll, filter) in single_document_writes(name, command) {
            let key = shard_key_of(&coll).unwrap_or_else(|| panic!("a single-document write to `{coll}`: {command}"));
            assert!(!key.is_empty(), "every collection of this test is sharded: {coll}");
            for field in key {
                assert!(pins(&filter, field), "`{name}` on `{coll}` without `{field}` in its filter: {command}");
            }
            writes += 1;
        }
    }
    assert!(writes >= 10, "the run wrote single documents ({writes})");

    // Stored as written, read back with the driver.
    let raw = |c: &str| db.collection::<BsonDoc>(c);
    let product = raw("sk_products").find_one(doc! {"_id": bike.id}).await.unwrap();
    assert!(product.is_none(), "the product is deleted");
    assert_eq!(raw("sk_orders").count_documents(doc! {}).await.unwrap(), 0, "its order cascaded");
    let left = raw("sk_parts").find(doc! {}).await.unwrap();
    use futures::TryStreamExt;
    let left: Vec<BsonDoc> = left.try_collect().await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].get_str("name").unwrap(), "short shifter");
    assert_eq!(left[0].get_str("tenant").unwrap(), "acme");
    let pages: Vec<BsonDoc> =
        raw("sk_pages").find(doc! {}).sort(doc! {"page": 1}).await.unwrap().try_collect().await.unwrap();
    let counts: Vec<i32> = pages.iter().map(|p| p.get_i32("count").unwrap()).collect();
    assert_eq!(counts, [3, 3, 1]);

    // The unique bucket index starts with the bucket's shard key, and the
    // parts' key has its index.
    let indexes = |c: &str| {
        let c = raw(c);
        async move { c.list_indexes().await.unwrap().try_collect::<Vec<_>>().await.unwrap() }
    };
    let unique: Vec<BsonDoc> = indexes("sk_pages")
        .await
        .into_iter()
        .filter(|i| i.options.as_ref().and_then(|o| o.unique) == Some(true))
        .map(|i| i.keys)
        .collect();
    assert_eq!(unique, [doc! {"host": 1, "page": 1}]);
    assert!(indexes("sk_parts").await.iter().any(|i| i.keys == doc! {"tenant": 1, "_id": 1}));

    // The schema report lists the keys.
    let report = docrel::admin::report::schema_report();
    let section = report.split("## Shard keys").nth(1).and_then(|s| s.split("\n## ").next()).unwrap_or_default();
    assert!(section.contains("- `sk_parts`: `{tenant: 1, _id: 1}`"), "{report}");
    assert!(section.contains("- `sk_pages`: `{host: 1}`"), "{report}");
    assert!(section.contains("- `sk_hosts`: `{_id: 1}`"), "{report}");

    // Every command shape the run sent is in the deployment table.
    let documented = documented_shapes();
    let sent: BTreeSet<String> = recorded.iter().map(|(n, c)| shape(n, c)).collect();
    let missing: Vec<&String> = sent.iter().filter(|s| !documented.contains(*s)).collect();
    assert!(missing.is_empty(), "sent but not in docs/deployment.md: {missing:?} (documented: {documented:?})");
    db.drop().await.unwrap();
    Ok(())
}
