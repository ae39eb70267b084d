//! The Document derive and its repository against the real server: what is
//! stored, read back with the raw driver, and what each call costs.

use docrel::bson::{doc, oid::ObjectId, Bson, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::{Document, Error, Filter, View};
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};

/// The part of the reference texts: `db.parts.findOne()`.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[document(unique)]
    partno: String,
    #[document(index)]
    name: String,
    qty: i32,
    cost: f64,
    price: f64,
}

#[derive(View, Deserialize, Debug, PartialEq)]
#[view(of = Part)]
struct PartPrice {
    name: String,
    price: f64,
}

/// serde renames are honoured by the field handles and the schema.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[document(collection = "hosts")]
#[serde(rename_all = "camelCase")]
struct Host {
    #[document(id)]
    #[serde(rename = "_id")]
    host_id: String,
    host_name: String,
    #[serde(rename = "ipaddr")]
    ip_address: String,
    #[serde(skip)]
    cached: Option<u32>,
}

fn grommet() -> Part {
    Part {
        id: ObjectId::new(),
        partno: "123-aff-456".into(),
        name: "#4 grommet".into(),
        qty: 94,
        cost: 0.94,
        price: 3.99,
    }
}

async fn raw(t: &TestDb, collection: &str, id: Bson) -> BsonDoc {
    t.db.collection::<BsonDoc>(collection).find_one(doc! {"_id": id}).await.expect("raw read").expect("document stored")
}

#[tokio::test]
async fn insert_stores_the_shape_of_the_reference_text_in_one_round_trip() -> docrel::Result<()> {
    let t = TestDb::new("insert").await?;
    let part = grommet();
    let mark = t.trips.mark();
    Part::repo(&t.db).insert(&part).await?;
    assert_eq!(t.trips.commands_since(mark), ["insert parts"]);

    let stored = raw(&t, "parts", Bson::ObjectId(part.id)).await;
    assert_eq!(stored.get_object_id("_id").ok(), Some(part.id));
    assert_eq!(stored.get_str("partno").ok(), Some("123-aff-456"));
    assert_eq!(stored.get_str("name").ok(), Some("#4 grommet"));
    assert_eq!(stored.get_i32("qty").ok(), Some(94));
    assert_eq!(stored.get_f64("cost").ok(), Some(0.94));
    assert_eq!(stored.get_f64("price").ok(), Some(3.99));
    assert_eq!(stored.keys().collect::<Vec<_>>(), ["_id", "partno", "name", "qty", "cost", "price"]);
    Ok(())
}

#[tokio::test]
async fn serde_renames_drive_handles_and_storage() -> docrel::Result<()> {
    let t = TestDb::new("renames").await?;
    let f = Host::fields();
    assert_eq!((f.host_id.path(), f.host_name.path(), f.ip_address.path()), ("_id", "hostName", "ipaddr"));
    let schema = Host::schema();
    assert_eq!(schema.fields.iter().map(|f| f.bson).collect::<Vec<_>>(), ["_id", "hostName", "ipaddr"]);

    let host = Host {
        host_id: "goofy".into(),
        host_name: "goofy.example.com".into(),
        ip_address: "127.66.66.66".into(),
        cached: Some(3),
    };
    Host::repo(&t.db).insert(&host).await?;
    let stored = raw(&t, "hosts", Bson::String("goofy".into())).await;
    assert_eq!(stored, doc! {"_id": "goofy", "hostName": "goofy.example.com", "ipaddr": "127.66.66.66"});

    let found = Host::repo(&t.db).find(f.ip_address.eq("127.66.66.66")).one().await?;
    assert_eq!(found.map(|h| h.host_name), Some("goofy.example.com".to_owned()));
    Ok(())
}

#[tokio::test]
async fn get_find_count_update_delete() -> docrel::Result<()> {
    let t = TestDb::new("crud").await?;
    let repo = Part::repo(&t.db);
    let mut parts: Vec<Part> = (0..5).map(|i| Part { partno: format!("p-{i}"), qty: i * 10, ..grommet() }).collect();
    let mark = t.trips.mark();
    repo.insert_many(&parts).await?;
    // All or nothing: the insert and the commit of its transaction.
    assert_eq!(t.trips.commands_since(mark), ["insert parts", "commitTransaction"]);

    assert_eq!(repo.get(&parts[2].id).await?, Some(parts[2].clone()));
    assert_eq!(repo.get(&ObjectId::new()).await?, None);
    assert!(matches!(repo.require(&ObjectId::new()).await, Err(Error::NotFound { collection: "parts", .. })));

    let f = Part::fields();
    let mark = t.trips.mark();
    let big = repo.find(f.qty.gte(20)).sort(f.qty.desc()).limit(2).to_vec().await?;
    assert_eq!(t.trips.since(mark), 1);
    assert_eq!(big.iter().map(|p| p.qty).collect::<Vec<_>>(), [40, 30]);
    assert_eq!(repo.count(f.qty.lt(20)).await?, 2);

    // A view: only its fields travel.
    let mark = t.trips.mark();
    let prices = repo.find(f.partno.eq("p-1")).view::<PartPrice>().to_vec().await?;
    let projected = t.trips.bytes_since(mark);
    assert_eq!(prices, [PartPrice { name: "#4 grommet".into(), price: 3.99 }]);
    let mark = t.trips.mark();
    repo.find(f.partno.eq("p-1")).to_vec().await?;
    let whole = t.trips.bytes_since(mark);
    // The view's fields and `_id` travel; the whole part adds the BSON
    // elements `partno: "p-1"` (16 bytes), `qty` (9) and `cost` (14).
    assert_eq!(whole - projected, 16 + 9 + 14, "only the view's fields travel");

    // A stream, in batches of 2: 3 round trips for 5 documents.
    let mark = t.trips.mark();
    let streamed: Vec<Part> = repo.find(Filter::all()).batch_size(2).stream().await?.try_collect().await?;
    assert_eq!(streamed.len(), 5);
    assert_eq!(t.trips.since(mark), 3);

    let outcome = repo.update_by_id(&parts[0].id, f.name.set("bolt".into()).and(f.qty.inc(1))).await?;
    assert_eq!((outcome.matched, outcome.modified), (1, 1));
    let stored = raw(&t, "parts", Bson::ObjectId(parts[0].id)).await;
    assert_eq!((stored.get_str("name").ok(), stored.get_i32("qty").ok()), (Some("bolt"), Some(1)));
    assert!(matches!(repo.update_by_id(&ObjectId::new(), f.qty.set(1)).await, Err(Error::NotFound { .. })));
    let many = repo.update_many(f.qty.gte(20), f.price.set(1.0)).await?;
    assert_eq!(many.modified, 3);

    parts[1].name = "washer".into();
    repo.replace(&parts[1]).await?;
    assert_eq!(raw(&t, "parts", Bson::ObjectId(parts[1].id)).await.get_str("name").ok(), Some("washer"));

    assert!(repo.delete_by_id(&parts[1].id).await?);
    assert!(!repo.delete_by_id(&parts[1].id).await?);
    assert_eq!(repo.delete_many(f.qty.gte(30)).await?, 2);
    assert_eq!(repo.count(Filter::all()).await?, 2);
    Ok(())
}

#[tokio::test]
async fn ensure_indexes_creates_the_declared_ones_in_one_command() -> docrel::Result<()> {
    let t = TestDb::new("indexes").await?;
    let mark = t.trips.mark();
    let names = Part::repo(&t.db).ensure_indexes().await?;
    assert_eq!(t.trips.commands_since(mark), ["createIndexes parts"]);
    assert_eq!(names, ["partno_1", "name_1"]);
    let indexes: Vec<BsonDoc> =
        t.db.collection::<BsonDoc>("parts")
            .list_indexes()
            .await
            .unwrap()
            .map_ok(|m| docrel::bson_compat::to_document(&m).unwrap())
            .try_collect()
            .await
            .unwrap();
    let partno =
        indexes.iter().find(|i| i.get_document("key").ok() == Some(&doc! {"partno": 1})).expect("partno index");
    assert_eq!(partno.get_bool("unique").ok(), Some(true), "{partno}");
    // Unique for real: a second part with the same partno is refused.
    let repo = Part::repo(&t.db);
    repo.insert(&grommet()).await?;
    assert!(matches!(repo.insert(&grommet()).await, Err(Error::Driver { operation: "insert", .. })));
    Ok(())
}

#[tokio::test]
async fn a_document_that_does_not_fit_names_collection_id_and_field() -> docrel::Result<()> {
    let t = TestDb::new("decode").await?;
    let id = ObjectId::new();
    t.db.collection::<BsonDoc>("parts")
        .insert_one(doc! {"_id": id, "partno": "x", "name": "n", "qty": "ninety-four", "cost": 1.0, "price": 2.0})
        .await
        .unwrap();
    let err = Part::repo(&t.db).get(&id).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(&err, Error::Decode { collection, path, .. } if collection == "parts" && path == "qty"), "{text}");
    assert!(text.contains(&id.to_hex()), "{text}");
    assert!(text.contains("`qty`"), "{text}");
    Ok(())
}

#[tokio::test]
async fn a_document_above_16_mib_is_refused_and_nothing_is_written() -> docrel::Result<()> {
    let t = TestDb::new("too_large").await?;
    let mut part = grommet();
    part.name = "x".repeat(docrel::schema::MAX_DOCUMENT_BYTES);
    let mark = t.trips.mark();
    let err = Part::repo(&t.db).insert(&part).await.unwrap_err();
    assert!(
        matches!(err, Error::DocumentTooLarge { collection: "parts", bytes, .. } if bytes > docrel::schema::MAX_DOCUMENT_BYTES)
    );
    assert_eq!(t.trips.since(mark), 0, "refused before any round trip");
    // In a batch, one oversize document stops the whole batch: nothing lost, nothing half-written.
    let err = Part::repo(&t.db).insert_many(&[grommet(), part]).await.unwrap_err();
    assert!(matches!(err, Error::DocumentTooLarge { .. }));
    assert_eq!(Part::repo(&t.db).count(Filter::all()).await?, 0);
    Ok(())
}

#[tokio::test]
async fn an_unreachable_server_is_a_clear_error_not_a_hang() {
    let started = std::time::Instant::now();
    let err = docrel::connect("mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=300").await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::Connect { .. }));
    assert!(text.contains("mongodb://127.0.0.1:9"), "{text}");
    assert!(text.contains("MONGODB_URI") && text.contains("directConnection=true"), "{text}");
    assert!(!text.contains("scripts/"), "names fixes in the user's world, not this repository's: {text}");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    let err = docrel::connect("postgres://nope").await.unwrap_err();
    assert!(matches!(err, Error::InvalidUri { .. }), "{err}");
}

#[tokio::test]
async fn invalid_filter_values_are_errors_not_panics() -> docrel::Result<()> {
    let t = TestDb::new("invalid").await?;
    #[derive(Serialize, PartialEq)]
    struct Unrepresentable(u64);
    impl PartialEq<Unrepresentable> for i32 {
        fn eq(&self, _: &Unrepresentable) -> bool {
            false
        }
    }
    let filter = Part::fields().qty.eq(Unrepresentable(u64::MAX));
    let mark = t.trips.mark();
    let err = Part::repo(&t.db).find(filter).to_vec().await.unwrap_err();
    assert!(matches!(err, Error::Invalid { what: docrel::Misuse::Filter, .. }), "{err}");
    assert_eq!(t.trips.since(mark), 0);
    Ok(())
}
