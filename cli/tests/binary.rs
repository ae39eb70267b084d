//! The `docrel` binary on a database whose program it does not link: the
//! schema published there (program B of the fleet tests) is all it knows.

use docrel::bson::{doc, oid::ObjectId, Document as BsonDoc};
use docrel::schema::stored::{self, StoredType};
use docrel::testing::TestDb;
use std::process::{Command, Output};

fn b_schema() -> Vec<StoredType> {
    let json = include_str!("../../tests/fixtures/fleet_b_schema.json");
    let value: serde_json::Value = serde_json::from_str(json).expect("B's export");
    serde_json::from_value(value["types"].clone()).expect("stored types")
}

/// The connection string of the test server with `db` as its path.
fn uri_of(db: &str) -> String {
    let base = std::env::var("MONGODB_URI").unwrap_or_else(|_| "mongodb://127.0.0.1:27017".into());
    let (head, query) = base.split_once('?').map_or((base.as_str(), None), |(h, q)| (h, Some(q)));
    let hosts = head.trim_end_matches('/');
    match query {
        Some(q) => format!("{hosts}/{db}?{q}"),
        None => format!("{hosts}/{db}"),
    }
}

fn docrel(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_docrel"))
        .args(args)
        .env_remove("MONGODB_URI")
        .env_remove("DOCREL_DB")
        .output()
        .expect("run docrel")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[tokio::test]
async fn the_binary_works_from_the_published_schema_and_a_uri() -> docrel::Result<()> {
    let t = TestDb::new("cli_binary").await?;
    stored::publish_types(&t.db, &b_schema()).await?;
    let uri = uri_of(t.db.name());

    let schema = docrel("schema --uri".split(' ').chain([uri.as_str()]).collect::<Vec<_>>().as_slice());
    assert_eq!(schema.status.code(), Some(0), "{}", text(&schema));
    for name in ["fl_products", "fl_bins", "fl_stickers", "fl_orders", "fl_parts"] {
        assert!(text(&schema).contains(name), "{name} missing from:\n{}", text(&schema));
    }

    // A product whose copy of a part's name is stale.
    let bolt = ObjectId::new();
    t.db.collection::<BsonDoc>("fl_parts")
        .insert_one(doc! {"_id": bolt, "code": 1, "name": "bolt", "rank": 1, "bin": 1})
        .await
        .expect("insert");
    let product = ObjectId::new();
    let products = t.db.collection::<BsonDoc>("fl_products");
    products.insert_one(doc! {"_id": product, "parts": [{"id": bolt, "name": "old"}]}).await.expect("insert");

    let verify = docrel(&["verify", "--uri", &uri, "fl_parts"]);
    assert_eq!(verify.status.code(), Some(1), "{}", text(&verify));
    let repair = docrel(&["repair", "--uri", &uri, "fl_parts"]);
    assert_eq!(repair.status.code(), Some(0), "{}", text(&repair));
    let stored = products.find_one(doc! {"_id": product}).await.expect("find").expect("product");
    assert_eq!(stored.get_array("parts").unwrap()[0].as_document().unwrap().get_str("name").unwrap(), "bolt");
    let verify = docrel(&["verify", "--uri", &uri, "fl_parts"]);
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify));

    // The doctor reads the published rules too: a product referring to a
    // part that does not exist is a dangling reference of `fl_products`.
    products
        .insert_one(doc! {"_id": ObjectId::new(), "parts": [{"id": ObjectId::new(), "name": "ghost"}]})
        .await
        .expect("insert");
    let doctor = docrel(&["doctor", "--uri", &uri, "--fail-on", "never"]);
    assert_eq!(doctor.status.code(), Some(0), "{}", text(&doctor));
    let said = text(&doctor);
    assert!(said.contains("fl_products.parts") && said.contains("dangling"), "{said}");
    Ok(())
}

/// With nothing linked and nothing published, the tool says so instead of
/// printing an empty report.
#[tokio::test]
async fn an_empty_schema_is_a_warning() -> docrel::Result<()> {
    let t = TestDb::new("cli_empty").await?;
    let out = docrel(&["schema", "--uri", &uri_of(t.db.name())]);
    assert!(text(&out).contains("warning: no document types"), "{}", text(&out));
    let out = docrel(&["schema"]);
    assert!(text(&out).contains("warning: no document types: this program links none"), "{}", text(&out));
    Ok(())
}

/// `schema diff` shows what a new program version adds (a copy and the
/// backfill it needs); `schema apply` publishes it and runs the backfill,
/// after which the copies are right and the diff is empty.
#[tokio::test]
async fn schema_diff_shows_a_new_copys_backfill_and_apply_runs_it() -> docrel::Result<()> {
    let t = TestDb::new("cli_diff").await?;
    let uri = uri_of(t.db.name());
    // Version 1 of the program: parts and bins only.
    let v1: Vec<StoredType> =
        b_schema().into_iter().filter(|s| s.collection == "fl_parts" || s.collection == "fl_bins").collect();
    stored::publish_types(&t.db, &v1).await?;
    let bolt = ObjectId::new();
    t.db.collection::<BsonDoc>("fl_parts")
        .insert_one(doc! {"_id": bolt, "code": 1, "name": "bolt", "rank": 1, "bin": 1})
        .await
        .expect("insert");
    // Products written before the copy rule existed: no name copied.
    let product = ObjectId::new();
    let products = t.db.collection::<BsonDoc>("fl_products");
    products.insert_one(doc! {"_id": product, "parts": [{"id": bolt, "name": ""}]}).await.expect("insert");

    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/fleet_b_schema.json");
    // A product already over the bound version 2 declares (50 parts).
    let crowded = ObjectId::new();
    let many: Vec<BsonDoc> = (0..51).map(|_| doc! {"id": ObjectId::new(), "name": "x"}).collect();
    products.insert_one(doc! {"_id": crowded, "parts": many}).await.expect("insert");
    let diff = docrel(&["schema", "diff", "--uri", &uri, "--file", file]);
    assert_eq!(diff.status.code(), Some(1), "{}", text(&diff));
    assert!(text(&diff).contains("index build: fl_products {parts.id: 1}"), "{}", text(&diff));
    assert!(
        text(&diff).contains("bound violation: `fl_products.parts`: 1 document(s) hold more than 50"),
        "{}",
        text(&diff)
    );
    products.delete_one(doc! {"_id": crowded}).await.expect("delete");
    assert!(text(&diff).contains("+ collection `fl_products`"), "{}", text(&diff));
    assert!(
        text(&diff)
            .contains("backfill: `fl_products.parts[].name` copies `fl_parts.name`: `docrel repair fl_parts` fills it"),
        "{}",
        text(&diff)
    );

    // No other process writes here: no lease to wait for.
    let apply = docrel(&["schema", "apply", "--uri", &uri, "--file", file, "--wait", "0.2"]);
    assert_eq!(apply.status.code(), Some(0), "{}", text(&apply));
    assert!(text(&apply).contains(": complete"), "{}", text(&apply));
    assert!(text(&apply).contains("backfill: repair fl_parts"), "{}", text(&apply));
    // Run again, the same change is found complete.
    let again = docrel(&["schema", "apply", "--uri", &uri, "--file", file, "--wait", "0.2", "--json"]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(text(&again).contains("\"resumed\": true"), "{}", text(&again));
    let stored = products.find_one(doc! {"_id": product}).await.expect("find").expect("product");
    assert_eq!(stored.get_array("parts").unwrap()[0].as_document().unwrap().get_str("name").unwrap(), "bolt");

    let again = docrel(&["schema", "diff", "--uri", &uri, "--file", file]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(text(&again).contains("no change"), "{}", text(&again));
    Ok(())
}
