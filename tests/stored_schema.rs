//! The schema published in the database (issue 28, Build 1): this
//! program's part written idempotently, read back exactly, merged with
//! other programs' parts rule by rule, and a conflicting rule refused with
//! both named and nothing written.

use docrel::bson::{doc, oid::ObjectId, Document as BsonDoc};
use docrel::schema::stored::{self, StoredType, SCHEMA_COLLECTION};
use docrel::testing::TestDb;
use docrel::{Document, Embedded, Error, Misuse};
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "ss_parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Embedded, Serialize, Deserialize, Debug, Clone)]
struct PartRef {
    id: ObjectId,
    #[denormalize(from = Part::name)]
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "ss_products", shard_key(maker, id))]
struct Product {
    #[serde(rename = "_id")]
    id: ObjectId,
    maker: String,
    #[reference(many, to = Part, max = 50, on_delete = pull)]
    parts: Vec<PartRef>,
}

fn ours(collection: &str) -> StoredType {
    stored::program().into_iter().find(|t| t.collection == collection).expect("linked type")
}

async fn stored_docs(t: &TestDb) -> Vec<BsonDoc> {
    let coll = t.db.collection::<BsonDoc>(SCHEMA_COLLECTION);
    coll.find(doc! {}).sort(doc! {"_id": 1}).await.expect("find").try_collect().await.expect("read")
}

/// Published, the schema reads back exactly as this program declares it,
/// one document per collection with its format and fingerprint; publishing
/// again writes nothing.
#[tokio::test]
async fn a_published_schema_reads_back_exactly_and_publishing_again_writes_nothing() -> docrel::Result<()> {
    let t = TestDb::new("ss_publish").await?;
    let mine = [ours("ss_parts"), ours("ss_products")];
    let first = stored::publish_types(&t.db, &mine).await?;
    assert_eq!(first.added, ["ss_parts", "ss_products"]);
    let raw = stored_docs(&t).await;
    assert_eq!(raw.len(), 2);
    assert_eq!(raw[1].get_str("_id").unwrap(), "ss_products");
    assert_eq!(raw[1].get_i32("format").unwrap(), 1);
    assert_eq!(raw[1].get_str("fingerprint").unwrap(), stored::fingerprint(&mine[1]));
    let form = raw[1].get_document("type").unwrap();
    let parts = &form.get_array("relations").unwrap()[0];
    let parts = parts.as_document().unwrap();
    assert_eq!(parts.get_str("on_delete").unwrap(), "pull");
    assert_eq!(parts.get_document("kind").unwrap(), &doc! {"pattern": "ref_many", "max": 50_i64, "key": "id"});
    assert_eq!(form.get_array("shard_key").unwrap(), &vec!["maker".into(), "_id".into()]);

    assert_eq!(docrel::schema::load(&t.db).await?, mine.to_vec());
    let again = stored::publish_types(&t.db, &mine).await?;
    assert_eq!(again.unchanged, ["ss_parts", "ss_products"]);
    assert!(again.added.is_empty() && again.extended.is_empty());
    assert_eq!(stored_docs(&t).await, raw, "nothing rewritten");
    Ok(())
}

/// Two programs: A links only `Part`, B links both. Each publishes its
/// part; the stored schema is the union, and B's rules survive A's publish.
#[tokio::test]
async fn two_programs_parts_are_merged() -> docrel::Result<()> {
    let t = TestDb::new("ss_merge").await?;
    stored::publish_types(&t.db, &[ours("ss_parts")]).await?;
    let b = stored::publish_types(&t.db, &[ours("ss_parts"), ours("ss_products")]).await?;
    assert_eq!(
        (b.added.as_slice(), b.unchanged.as_slice()),
        (&["ss_products".to_owned()][..], &["ss_parts".to_owned()][..])
    );
    // A program whose `Part` has one more plain field and a declared index:
    // it adds them, and keeps what it does not know.
    let mut wider = ours("ss_parts");
    wider.fields.push(stored::StoredField {
        rust: "sku".into(),
        bson: "sku".into(),
        rust_type: "String".into(),
        kind: "plain".into(),
        target: None,
    });
    wider.indexes.push(stored::StoredIndex { keys: vec![("sku".into(), 1)], unique: true, ..Default::default() });
    let a = stored::publish_types(&t.db, &[wider.clone()]).await?;
    assert_eq!(a.extended, [("ss_parts".to_owned(), vec!["field `sku`".to_owned(), "index `sku_1`".to_owned()])]);
    let loaded = docrel::schema::load(&t.db).await?;
    assert_eq!(loaded.len(), 2);
    assert_eq!(loaded[0], wider);
    assert_eq!(loaded[1], ours("ss_products"));
    Ok(())
}

/// A rule declared differently by two programs (the copy's source field,
/// the delete rule) is refused, naming the stored rule and this program's,
/// and nothing is written. (A bound declared differently is no conflict:
/// the stored one holds until `schema apply`, `tests/moves_bounds.rs`.)
#[tokio::test]
async fn a_conflicting_rule_is_refused_with_both_named() -> docrel::Result<()> {
    let t = TestDb::new("ss_conflict").await?;
    stored::publish_types(&t.db, &[ours("ss_parts"), ours("ss_products")]).await?;
    let before = stored_docs(&t).await;
    let mut other = ours("ss_products");
    other.relations[0].on_delete = "cascade".into();
    if let stored::StoredKind::RefMany { max, .. } = &mut other.relations[0].kind {
        *max = Some(80);
    }
    other.relations[0].copies[0].source_field = "title".into();
    let err = stored::publish_types(&t.db, &[other]).await.unwrap_err();
    assert!(matches!(err, Error::Invalid { what: Misuse::Schema, .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("`ss_products`, relation `parts`"), "{text}");
    assert!(text.contains("\"on_delete\":\"pull\"") && text.contains("\"on_delete\":\"cascade\""), "{text}");
    assert!(text.contains("\"source_field\":\"title\"") && text.contains("nothing was published"), "{text}");
    assert_eq!(stored_docs(&t).await, before);

    let mut moved = ours("ss_products");
    moved.shard_key = vec!["_id".into()];
    let err = stored::publish_types(&t.db, &[moved]).await.unwrap_err();
    assert!(
        err.to_string().contains("shard key: stored [\"maker\",\"_id\"] but this program declares [\"_id\"]"),
        "{err}"
    );
    Ok(())
}

/// A stored document of a format this docrel does not know is an error
/// that says so, not a schema read wrong.
#[tokio::test]
async fn an_unknown_stored_format_is_an_error() -> docrel::Result<()> {
    let t = TestDb::new("ss_format").await?;
    let coll = t.db.collection::<BsonDoc>(SCHEMA_COLLECTION);
    coll.insert_one(doc! {"_id": "ss_parts", "format": 99, "fingerprint": "0", "type": {}}).await.expect("insert");
    let err = docrel::schema::load(&t.db).await.unwrap_err();
    assert!(err.to_string().contains("format 99 and this docrel reads format 1"), "{err}");
    let err = stored::publish_types(&t.db, &[ours("ss_parts")]).await.unwrap_err();
    assert!(matches!(err, Error::Invalid { what: Misuse::Schema, .. }), "{err}");
    Ok(())
}

/// `export` is this program's part as JSON, without a database: what a
/// `schema diff` compares with the stored one.
#[test]
fn export_lists_every_linked_type() {
    let json: serde_json::Value = serde_json::from_str(&docrel::schema::export()).expect("json");
    assert_eq!(json["format"], 1);
    let types = json["types"].as_array().expect("types");
    let names: Vec<&str> = types.iter().filter_map(|t| t["collection"].as_str()).collect();
    assert_eq!(names, ["ss_parts", "ss_products"]);
    assert_eq!(types[1]["copies"], serde_json::json!([]));
    assert_eq!(types[1]["relations"][0]["copies"][0]["source_field"], "name");
}
