//! Writes in a caller's session outside a transaction carry the database's
//! write concern: the commands docrel builds itself (`bulkWrite`, `update`)
//! do not inherit it from the client as the driver's helpers do.

use docrel::bson::{oid::ObjectId, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "ss_makers")]
struct Maker {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "ss_tools")]
struct Tool {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Maker)]
    maker: ObjectId,
    #[denormalize(from = Maker::name, via = maker)]
    maker_name: String,
}

#[tokio::test]
async fn a_fan_out_in_a_callers_session_carries_the_write_concern() -> docrel::Result<()> {
    let t = TestDb::new("ss_wc").await?;
    let (client, db, sent) = crate::watched(&t, "w=majority").await?;
    let maker = Maker { id: ObjectId::new(), name: "Acme".into() };
    Maker::repo(&db).insert(&maker).await?;
    Tool::repo(&db).insert(&Tool { id: ObjectId::new(), maker: maker.id, maker_name: String::new() }).await?;
    let mut session = client.start_session().await.expect("a session");
    sent.lock().unwrap().clear();
    Maker::repo(&db).update_by_id(&maker.id, Maker::fields().name.set("Acme Ltd".into())).session(&mut session).await?;
    let sent = sent.lock().unwrap().clone();
    let writes: Vec<&(String, BsonDoc)> =
        sent.iter().filter(|(name, _)| matches!(name.as_str(), "bulkWrite" | "update" | "findAndModify")).collect();
    assert!(!writes.is_empty(), "the rename wrote: {sent:?}");
    let bare: Vec<&String> =
        writes.iter().filter(|(_, c)| !c.contains_key("writeConcern")).map(|(name, _)| name).collect();
    assert!(bare.is_empty(), "every write carries the write concern, none of {bare:?} does: {sent:?}");
    let stored = t.db.collection::<BsonDoc>("ss_tools").find_one(docrel::bson::doc! {}).await.unwrap().unwrap();
    assert_eq!(stored.get_str("maker_name").unwrap(), "Acme Ltd");
    Ok(())
}

/// A write to a database whose server cannot be reached is refused with
/// `SchemaLease` (the schema could not be confirmed), and that refusal is
/// transient: the same write may succeed once the server is back (before:
/// `is_transient()` was false, and the sync worker dead-lettered events
/// during an election).
#[tokio::test]
async fn a_lease_that_cannot_be_confirmed_for_want_of_a_server_is_transient() -> docrel::Result<()> {
    let uri = "mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=300&connectTimeoutMS=300";
    let client = docrel::mongodb::Client::with_uri_str(uri).await.expect("a lazy client");
    let db = client.database("ss_unreachable");
    let maker = Maker { id: ObjectId::new(), name: "Acme".into() };
    let err = Maker::repo(&db).insert(&maker).await.unwrap_err();
    assert!(matches!(err, docrel::Error::SchemaLease { .. }), "{err}");
    assert!(err.is_transient(), "an unreachable server passes: {err}");
    assert!(err.to_string().contains("Nothing was written"), "{err}");
    Ok(())
}
