//! The everyday API (issue 30): errors that convert with `?` and match
//! without the driver's internals.

use docrel::bson::{doc, oid::ObjectId, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::{Document, Error};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "ev_accounts")]
struct Account {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[document(unique)]
    email: String,
}

/// `?` on the driver's and bson's errors inside a function returning
/// `docrel::Result`.
async fn raw_count_of(db: &docrel::mongodb::Database, hex: &str) -> docrel::Result<u64> {
    let id = ObjectId::parse_str(hex)?;
    let n = db.collection::<BsonDoc>("ev_accounts").count_documents(doc! {"_id": id}).await?;
    Ok(n)
}

#[tokio::test]
async fn driver_and_bson_errors_convert_with_the_question_mark() -> docrel::Result<()> {
    let t = TestDb::new("ev_convert").await?;
    assert_eq!(raw_count_of(&t.db, &ObjectId::new().to_hex()).await?, 0);
    let err = raw_count_of(&t.db, "not an id").await.unwrap_err();
    assert!(matches!(err, Error::Bson { .. }), "{err:?}");
    let err: Error = t.db.run_command(doc! {"noSuchCommand": 1}).await.unwrap_err().into();
    assert!(matches!(err, Error::Driver { .. }), "{err:?}");
    assert!(err.to_string().starts_with("a driver call failed: "), "{err}");
    Ok(())
}

/// A taken unique key is matchable with `is_duplicate_key`, and its message
/// names the index and the key instead of dumping the driver's WriteError.
#[tokio::test]
async fn a_taken_unique_key_is_a_duplicate_key_error() -> docrel::Result<()> {
    let t = TestDb::new("ev_dup").await?;
    let repo = Account::repo(&t.db);
    repo.ensure_indexes().await?;
    repo.insert(&Account { id: ObjectId::new(), email: "ann@example.com".into() }).await?;
    let taken = Account { id: ObjectId::new(), email: "ann@example.com".into() };
    match repo.insert(&taken).await {
        Err(e) if e.is_duplicate_key() => {
            let text = e.to_string();
            assert!(text.contains("index `email_1`") && text.contains("ann@example.com"), "{text}");
            assert!(!text.contains("WriteError"), "{text}");
        }
        other => panic!("expected a duplicate key: {other:?}"),
    }
    // The same through insert_many (a transaction) and save.
    let err = repo.insert_many(&[taken.clone(), taken.clone()]).await.unwrap_err();
    assert!(err.is_duplicate_key(), "{err:?}");
    assert!(!Error::NotFound { collection: "x", id: "1".into() }.is_duplicate_key());
    Ok(())
}
