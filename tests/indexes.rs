//! Indexes declared on the struct (issue 30): compound and descending, TTL,
//! partial, sparse, collation, text. `ensure_indexes` creates them as
//! declared (read back with `listIndexes`), they behave as MongoDB says, the
//! index plan keeps (also as MongoDB 9.0 lists them, with a `simple`
//! collation), creates and recreates them, and the stored schema
//! carries their options.

use docrel::admin::index_plan::{plan, Action, IndexPlan};
use docrel::bson::{doc, oid::ObjectId, Bson, DateTime, Document as BsonDoc};
use docrel::schema::stored::StoredIndex;
use docrel::testing::TestDb;
use docrel::Document;
use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Document, Serialize, Deserialize, Clone, Debug)]
#[document(
    collection = "ix_events",
    index(fields(tenant, -created), name = "ix_by_tenant"),
    index(fields(created), expire_after = "1h"),
    index(fields(code), unique, partial = doc! {"active": true}),
    index(fields(handle), unique, collation(locale = "fr", strength = 2)),
)]
struct Event {
    #[serde(rename = "_id")]
    id: ObjectId,
    tenant: String,
    created: DateTime,
    code: String,
    active: bool,
    handle: String,
    /// Unique among the events that have one.
    #[document(unique, index(desc, sparse))]
    #[serde(skip_serializing_if = "Option::is_none")]
    seq: Option<i64>,
}

/// A text index with weights and a language, and a partial filter as JSON.
#[derive(Document, Serialize, Deserialize, Clone, Debug)]
#[document(
    collection = "ix_articles",
    index(fields(tenant), text(title = 10, body), default_language = "french", name = "ix_search"),
    index(fields(slug), unique, partial = r#"{"published": {"$eq": true}}"#)
)]
struct Article {
    #[serde(rename = "_id")]
    id: ObjectId,
    tenant: String,
    title: String,
    body: String,
    slug: String,
    published: bool,
}

fn event(tenant: &str, code: &str, active: bool, handle: &str, seq: Option<i64>) -> Event {
    Event {
        id: ObjectId::new(),
        tenant: tenant.into(),
        created: DateTime::now(),
        code: code.into(),
        active,
        handle: handle.into(),
        seq,
    }
}

/// The indexes of `collection` as `listIndexes` returns them, without `_id_`
/// and the version, by name.
async fn listed(t: &TestDb, collection: &str) -> Vec<BsonDoc> {
    let reply = t.db.run_command(doc! {"listIndexes": collection}).await.expect("listIndexes");
    let batch = reply.get_document("cursor").and_then(|c| c.get_array("firstBatch")).expect("a first batch");
    let mut out: Vec<BsonDoc> = batch
        .iter()
        .filter_map(Bson::as_document)
        .filter(|d| d.get_str("name").ok() != Some("_id_"))
        .map(|d| {
            let mut d = d.clone();
            d.remove("v");
            d.remove("ns");
            d
        })
        .collect();
    out.sort_by(|a, b| a.get_str("name").unwrap_or("").cmp(b.get_str("name").unwrap_or("")));
    out
}

/// MongoDB fills in the rest of a collation (`caseLevel: false`, its
/// `version`, ...): the declared keys must be there as declared.
fn without_filled_in_collation(mut listed: BsonDoc, declared: &BsonDoc) -> BsonDoc {
    if let Ok(c) = listed.get_document_mut("collation") {
        *c = c.iter().filter(|(k, _)| declared.contains_key(k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
    }
    listed
}

#[tokio::test]
async fn declared_indexes_are_created_with_their_options() -> docrel::Result<()> {
    let t = TestDb::new("ix_created").await?;
    let names = Event::repo(&t.db).ensure_indexes().await?;
    assert_eq!(names.len(), 5, "{names:?}");
    let collation = doc! {"locale": "fr", "strength": 2};
    let mut listed = listed(&t, "ix_events").await;
    listed[1] = without_filled_in_collation(listed[1].clone(), &collation);
    assert_eq!(
        listed,
        [
            doc! {"key": {"code": 1}, "name": "code_1", "unique": true, "partialFilterExpression": {"active": true}},
            doc! {"key": {"created": 1}, "name": "created_1", "expireAfterSeconds": 3600},
            doc! {"key": {"handle": 1}, "name": "handle_1", "unique": true, "collation": collation},
            doc! {"key": {"tenant": 1, "created": -1}, "name": "ix_by_tenant"},
            doc! {"key": {"seq": -1}, "name": "seq_-1", "unique": true, "sparse": true},
        ]
    );
    Ok(())
}

/// A partial unique index allows duplicates outside its filter; a unique
/// index with a strength-2 collation ignores case; a sparse unique index
/// allows many documents without the field.
#[tokio::test]
async fn partial_collation_and_sparse_indexes_behave_as_declared() -> docrel::Result<()> {
    let t = TestDb::new("ix_behave").await?;
    let repo = Event::repo(&t.db);
    repo.ensure_indexes().await?;
    repo.insert(&event("a", "X1", false, "h1", None)).await?;
    repo.insert(&event("a", "X1", false, "h2", None)).await?; // outside the filter: allowed
    repo.insert(&event("a", "X1", true, "h3", Some(1))).await?;
    let err = repo.insert(&event("a", "X1", true, "h4", Some(2))).await.unwrap_err();
    assert!(err.is_duplicate_key() && err.to_string().contains("code_1"), "{err}");

    repo.insert(&event("a", "C1", false, "Anne", Some(3))).await?;
    let err = repo.insert(&event("a", "C2", false, "anne", Some(4))).await.unwrap_err();
    assert!(err.is_duplicate_key() && err.to_string().contains("handle_1"), "{err}");

    let err = repo.insert(&event("a", "S1", false, "h5", Some(1))).await.unwrap_err();
    assert!(err.is_duplicate_key() && err.to_string().contains("seq_-1"), "{err}");

    let raw = t.db.collection::<BsonDoc>("ix_events");
    assert_eq!(raw.count_documents(doc! {"code": "X1"}).await?, 3);
    assert_eq!(raw.count_documents(doc! {"seq": {"$exists": false}}).await?, 2);
    assert_eq!(raw.count_documents(doc! {"handle": {"$in": ["anne", "h4", "h5"]}}).await?, 0);
    Ok(())
}

/// Runs the server's TTL pass: SecantusDB does it on request; MongoDB's
/// monitor runs every 60 s, so elsewhere this waits for it (up to 2 min).
async fn expire(t: &TestDb, expired: BsonDoc) -> docrel::Result<u64> {
    let raw = t.db.collection::<BsonDoc>("ix_events");
    let admin = t.db.client().database("admin");
    let on_request = admin.run_command(doc! {"secantusAdmin.pruneTtl": 1}).await.is_ok();
    for _ in 0..(if on_request { 1 } else { 120 }) {
        let left = raw.count_documents(expired.clone()).await?;
        if left == 0 || on_request {
            return Ok(left);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    Ok(raw.count_documents(expired).await?)
}

#[tokio::test]
async fn a_ttl_index_deletes_documents_older_than_expire_after() -> docrel::Result<()> {
    let t = TestDb::new("ix_ttl").await?;
    let repo = Event::repo(&t.db);
    repo.ensure_indexes().await?;
    let mut old = event("a", "T1", false, "old", None);
    old.created = DateTime::from_millis(DateTime::now().timestamp_millis() - 2 * 3_600_000);
    let fresh = event("a", "T2", false, "fresh", None);
    repo.insert(&old).await?;
    repo.insert(&fresh).await?;
    assert_eq!(expire(&t, doc! {"_id": old.id}).await?, 0, "the two-hour-old event is deleted");
    let raw = t.db.collection::<BsonDoc>("ix_events");
    assert_eq!(raw.count_documents(doc! {"_id": fresh.id}).await?, 1, "the fresh one stays");
    Ok(())
}

/// The plan of the `ix_events` indexes only (the text index of
/// `ix_articles` is not created on every server).
async fn events_plan(t: &TestDb) -> docrel::Result<IndexPlan> {
    let all = plan(&t.db).await?;
    Ok(IndexPlan { changes: all.changes.into_iter().filter(|c| c.collection == "ix_events").collect() })
}

#[tokio::test]
async fn the_plan_keeps_creates_and_recreates_by_options() -> docrel::Result<()> {
    let t = TestDb::new("ix_plan").await?;
    let before = events_plan(&t).await?;
    assert_eq!(before.changes.len(), 5);
    assert!(before.changes.iter().all(|c| c.action == Action::Create), "{}", before.to_text(false));
    let text = before.to_text(false);
    assert!(text.contains("{created: 1} expire_after 3600s"), "{text}");
    assert!(text.contains("{handle: 1} unique collation { \"locale\": \"fr\", \"strength\": 2 }"), "{text}");
    assert!(text.contains("{seq: -1} unique sparse"), "{text}");
    assert!(text.contains("{tenant: 1, created: -1} name \"ix_by_tenant\""), "{text}");

    Event::repo(&t.db).ensure_indexes().await?;
    let kept = events_plan(&t).await?;
    assert!(kept.changes.iter().all(|c| c.action == Action::Keep), "{}", kept.to_text(false));

    // Another program made the TTL shorter and the partial index whole.
    let raw = t.db.collection::<BsonDoc>("ix_events");
    raw.drop_index("created_1").await?;
    raw.drop_index("code_1").await?;
    t.db.run_command(doc! {"createIndexes": "ix_events", "indexes": [
        {"key": {"created": 1}, "name": "created_1", "expireAfterSeconds": 60},
        {"key": {"code": 1}, "name": "code_1", "unique": true},
    ]})
    .await?;
    let drifted = events_plan(&t).await?;
    let by_keys = |keys: &str| drifted.changes.iter().find(|c| c.keys == keys).expect(keys).clone();
    let (ttl, partial) = (by_keys("{created: 1}"), by_keys("{code: 1}"));
    assert_eq!((ttl.action, ttl.name.as_deref()), (Action::Recreate, Some("created_1")));
    assert_eq!(ttl.reason, "exists with other options: expire_after 60 (declared 3600)");
    assert_eq!(partial.action, Action::Recreate);
    assert_eq!(partial.reason, "exists with other options: partial none (declared { \"active\": true })");
    assert_eq!(drifted.changes.iter().filter(|c| c.action == Action::Keep).count(), 3);

    let applied = drifted.apply(&t.db, false).await?;
    assert_eq!(applied.dropped, ["ix_events created_1", "ix_events code_1"]);
    let after = events_plan(&t).await?;
    assert!(after.changes.iter().all(|c| c.action == Action::Keep), "{}", after.to_text(false));
    let listed = listed(&t, "ix_events").await;
    assert_eq!(listed[1], doc! {"key": {"created": 1}, "name": "created_1", "expireAfterSeconds": 3600});
    Ok(())
}

/// MongoDB 9.0 lists `collation: {locale: "simple"}` on indexes created
/// without one. Indexes stored that way (made here with the raw driver, as
/// this server keeps and echoes the collation it is given) are as declared:
/// the plan keeps them, and applying it drops and builds nothing of them.
#[tokio::test]
async fn an_index_listed_with_the_simple_collation_is_kept() -> docrel::Result<()> {
    let t = TestDb::new("ix_simple").await?;
    let simple = doc! {"locale": "simple"};
    t.db.run_command(doc! {"createIndexes": "ix_events", "indexes": [
        {"key": {"created": 1}, "name": "created_1", "expireAfterSeconds": 3600, "collation": simple.clone()},
        {"key": {"seq": -1}, "name": "seq_-1", "unique": true, "sparse": true, "collation": simple.clone()},
    ]})
    .await?;
    let stored = listed(&t, "ix_events").await;
    assert_eq!(stored[0].get_document("collation").ok(), Some(&simple), "the server echoes it: {stored:?}");

    let before = events_plan(&t).await?;
    let by_keys = |keys: &str| before.changes.iter().find(|c| c.keys == keys).expect(keys).clone();
    for keys in ["{created: 1}", "{seq: -1}"] {
        let kept = by_keys(keys);
        assert_eq!((kept.action, kept.reason.as_str()), (Action::Keep, "exists as declared"), "{keys}");
        assert!(!kept.options.contains("collation"), "{}", kept.options);
    }
    let applied = before.apply(&t.db, false).await?;
    assert!(applied.dropped.is_empty(), "{applied:?}");
    assert_eq!(
        applied.created,
        ["ix_events {tenant: 1, created: -1}", "ix_events {code: 1}", "ix_events {handle: 1}"],
        "only the three missing ones"
    );

    let after = listed(&t, "ix_events").await;
    assert_eq!(
        after[1],
        doc! {"key": {"created": 1}, "name": "created_1", "expireAfterSeconds": 3600, "collation": simple.clone()}
    );
    assert_eq!(
        after[4],
        doc! {"key": {"seq": -1}, "name": "seq_-1", "unique": true, "sparse": true, "collation": simple}
    );
    assert!(!events_plan(&t).await?.has_changes(true), "nothing left to change");
    Ok(())
}

/// A text index: its model has MongoDB's form; where the server has text
/// indexes it is created and kept as declared. SecantusDB has none, and
/// says so: the error names the command and the collection.
#[tokio::test]
async fn a_text_index_is_declared_with_weights_and_a_language() -> docrel::Result<()> {
    let [search, slug] = Article::schema().indexes else { panic!("two indexes") };
    assert_eq!(search.keys_document(), doc! {"tenant": 1, "title": "text", "body": "text"});
    assert_eq!(search.options()?, doc! {"name": "ix_search", "weights": {"title": 10}, "default_language": "french"});
    assert_eq!(slug.options()?, doc! {"unique": true, "partialFilterExpression": {"published": {"$eq": true}}});

    let t = TestDb::new("ix_text").await?;
    match Article::repo(&t.db).ensure_indexes().await {
        Ok(names) => {
            assert_eq!(names, ["ix_search", "slug_1"]);
            let listed = listed(&t, "ix_articles").await;
            let search = &listed[0];
            assert_eq!(search.get("key"), Some(&Bson::Document(doc! {"tenant": 1, "_fts": "text", "_ftsx": 1})));
            assert_eq!(search.get("weights"), Some(&Bson::Document(doc! {"body": 1, "title": 10})));
            assert_eq!(search.get("default_language"), Some(&Bson::from("french")));
            let kept = plan(&t.db).await?;
            let articles = kept.changes.iter().filter(|c| c.collection == "ix_articles");
            assert!(articles.clone().all(|c| c.action == Action::Keep), "{}", kept.to_text(false));
        }
        Err(e) => {
            let text = e.to_string();
            assert!(text.contains("text indexes are not supported"), "{text}");
            assert!(text.contains("createIndexes") && text.contains("ix_articles"), "{text}");
        }
    }
    Ok(())
}

/// The stored schema carries every option, and a schema stored before
/// they existed still reads (as indexes without them).
#[test]
fn the_stored_schema_carries_index_options() {
    let stored: Vec<StoredIndex> = Event::schema().indexes.iter().map(StoredIndex::from).collect();
    let json = serde_json::to_value(&stored).expect("json");
    assert_eq!(json[0], serde_json::json!({"keys": [["seq", -1]], "unique": true, "sparse": true}));
    assert_eq!(
        json[1],
        serde_json::json!({"keys": [["tenant", 1], ["created", -1]], "unique": false, "name": "ix_by_tenant"})
    );
    assert_eq!(json[2], serde_json::json!({"keys": [["created", 1]], "unique": false, "expire_after_seconds": 3600}));
    assert_eq!(json[3]["partial"], serde_json::json!({"active": true}));
    assert_eq!(json[4]["collation"], serde_json::json!({"locale": "fr", "strength": 2}));
    let old: StoredIndex = serde_json::from_str(r#"{"keys": [["name", 1]], "unique": true}"#).expect("an old index");
    assert_eq!((old.sparse, old.expire_after_seconds, old.partial), (false, None, None));
}

/// A type whose validator has both parts: a bound and a required reference.
#[derive(Document, Serialize, Deserialize, Clone, Debug)]
#[document(collection = "ix_boards")]
struct Board {
    #[serde(rename = "_id")]
    id: i32,
    #[reference(to = Article)]
    owner: ObjectId,
    #[reference(to = Article)]
    reviewer: Option<ObjectId>,
    #[embed(max = 2)]
    pins: Vec<String>,
}

/// Every command a client sends, whole (name and body).
#[derive(Clone, Default)]
struct Sent(std::sync::Arc<std::sync::Mutex<Vec<(String, BsonDoc)>>>);

impl Sent {
    fn take(&self) -> Vec<(String, BsonDoc)> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// The validator: `maxItems` for the bound and `required` for the reference
/// that is no `Option`, enforced by the server against a raw client. On a
/// server before 9.0 it is installed at `strict` and nothing more is sent;
/// on 9.0 (pretended: this server reports 8.2) it is edited at `strict`,
/// the documents breaking it are counted, and the level is raised to
/// `constraint` only when none does, as 9.0 requires. Every other test of
/// this binary leaves the validator alone, so the pretended release, kept
/// with the deployment, changes nothing of theirs.
#[tokio::test]
async fn the_validator_is_raised_to_constraint_on_9_0_once_no_document_breaks_it() -> docrel::Result<()> {
    use docrel::mongodb::event::{command::CommandEvent, EventHandler};
    let uri = std::env::var("MONGODB_URI").expect("MONGODB_URI: run with scripts/test");
    let sent = Sent::default();
    let sink = sent.clone();
    let mut options = docrel::client::options(&uri).await?;
    options.command_event_handler = Some(EventHandler::callback(move |e| {
        if let CommandEvent::Started(s) = e {
            sink.0.lock().unwrap().push((s.command_name.clone(), s.command.clone()));
        }
    }));
    let client = docrel::connect_with(&uri, options).await?;
    let db = client.database(&format!("t_ix_validator_{}", std::process::id()));
    db.drop().await?;
    let repo = Board::repo(&db);
    let names = |sent: &[(String, BsonDoc)]| sent.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();

    sent.take();
    let validator = repo.ensure_validator().await?.expect("a bound and a required reference");
    assert_eq!(
        validator,
        doc! {"$jsonSchema": {"bsonType": "object", "required": ["owner"],
        "properties": {"pins": {"bsonType": "array", "maxItems": 2_i64}}}}
    );
    let first = sent.take();
    assert_eq!(names(&first), ["collMod", "create", "buildInfo"].map(String::from), "{first:?}");
    let raw = db.collection::<BsonDoc>("ix_boards");
    let owner = ObjectId::new();
    assert!(raw.insert_one(doc! {"_id": 1, "pins": []}).await.is_err(), "the reference is required");
    assert!(raw.insert_one(doc! {"_id": 2, "owner": owner, "pins": ["a", "b", "c"]}).await.is_err(), "past the bound");
    raw.insert_one(doc! {"_id": 3, "owner": owner, "pins": ["a", "b"]}).await?;
    assert!(raw.update_one(doc! {"_id": 3}, doc! {"$push": {"pins": "c"}}).await.is_err(), "a raw push past it");

    // 9.0: a stored document breaking the rules keeps the level at strict.
    docrel::testing::pretend_release(&client, "9.0.4");
    raw.insert_one(doc! {"_id": 4, "owner": owner, "pins": ["a", "b", "c"]}).bypass_document_validation(true).await?;
    sent.take();
    let refused = repo.ensure_validator().await.expect_err("a document breaks the bound");
    let message = refused.to_string();
    assert!(matches!(refused, docrel::Error::Invalid { what: docrel::Misuse::Validator, .. }), "{message}");
    assert!(message.contains("1 stored document(s) break it already (the first by `_id`: 4)"), "{message}");
    let edit = sent.take();
    assert_eq!(edit[0].1.get_str("validationLevel").ok(), Some("strict"), "the edit at strict: {edit:?}");
    assert!(!edit.iter().any(|(_, c)| c.get_str("validationLevel").ok() == Some("constraint")), "{edit:?}");

    // With none left, the edit at strict, the count, then the raise.
    raw.delete_one(doc! {"_id": 4}).await?;
    sent.take();
    let raised = repo.ensure_validator().await;
    let levels: Vec<(String, Option<String>)> =
        sent.take().into_iter().map(|(n, c)| (n, c.get_str("validationLevel").ok().map(str::to_owned))).collect();
    assert_eq!(
        levels,
        [("collMod", Some("strict")), ("aggregate", None), ("collMod", Some("constraint"))]
            .map(|(n, l)| (n.to_owned(), l.map(str::to_owned)))
    );
    // This server (8.2) may not know the level: its refusal names the command.
    if let Err(e) = raised {
        assert!(e.to_string().contains("collMod"), "{e}");
    }
    db.drop().await?;
    Ok(())
}
