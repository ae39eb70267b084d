//! On MongoDB 8.0+ (the embedded server reports 8.2) the `on_delete` rules
//! that reach several collections travel in one client-level `bulkWrite`
//! (issue 31): deleting an author pulled from posts and anthologies and
//! cascading to its comments is three round trips (the delete, the read
//! that the author is still gone, the batch), and the stored documents
//! are right, read back with the raw driver. `tests/old_wire.rs` deletes
//! the same data the way before 8.0.

#[path = "fixtures/delete_rules.rs"]
mod delete_rules;

use delete_rules::{assert_deleted, seed, Author, Comment};
use docrel::bson::{doc, Bson};
use docrel::testing::TestDb;
use docrel::Filter;

/// The server has one `failCommand` fail point: the tests that set it take
/// turns, or one's `off` (or its own point) undoes the other's.
static FAIL_POINT: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test]
async fn a_delete_whose_rules_reach_three_collections_is_three_round_trips() -> docrel::Result<()> {
    let t = TestDb::new("bulk_delete").await?;
    let (ann, bo) = seed(&t).await?;
    let mark = t.trips.mark();
    assert!(Author::repo(&t.db).delete_by_id(&ann.id).await?);
    assert_eq!(t.trips.commands_since(mark), ["delete dr_authors", "find dr_authors", "bulkWrite"]);
    assert_deleted(&t, &ann, &bo).await;
    Ok(())
}

#[tokio::test]
async fn a_delete_many_sends_one_batch_per_page() -> docrel::Result<()> {
    let t = TestDb::new("bulk_delete_many").await?;
    let (ann, bo) = seed(&t).await?;
    let mark = t.trips.mark();
    let filter = Author::fields().name.eq("Ann");
    assert_eq!(Author::repo(&t.db).delete_many(filter).await?, 1);
    let commands = t.trips.commands_since(mark);
    assert_eq!(commands.iter().filter(|c| *c == "bulkWrite").count(), 1, "{commands:?}");
    assert!(!commands.iter().any(|c| c.starts_with("update") || c.starts_with("delete dr_comments")), "{commands:?}");
    assert_deleted(&t, &ann, &bo).await;
    // The rest, with nothing left to refer to them.
    assert_eq!(Author::repo(&t.db).delete_many(Filter::all()).await?, 1);
    assert_eq!(Comment::repo(&t.db).count(Filter::all()).await?, 0);
    Ok(())
}

/// The server refuses this test's `bulkWrite`s (code 2) as `mode` says.
async fn refuse_bulk_writes(t: &TestDb, mode: Bson) {
    let command = doc! {
        "configureFailPoint": "failCommand",
        "mode": mode,
        "data": {"failCommands": ["bulkWrite"], "errorCode": 2, "appName": t.db.name()},
    };
    t.client
        .database("admin")
        .run_command(command)
        .await
        .expect("the embedded server runs with --enable-test-commands");
}

#[tokio::test]
async fn a_refused_statement_is_the_error_of_its_collection() -> docrel::Result<()> {
    let _one = FAIL_POINT.lock().await;
    let t = TestDb::new("bulk_delete_refused").await?;
    let (ann, _) = seed(&t).await?;
    refuse_bulk_writes(&t, doc! {"times": 1}.into()).await;
    let deleted = Author::repo(&t.db).delete_by_id(&ann.id).await;
    refuse_bulk_writes(&t, "off".into()).await;
    let e = deleted.expect_err("the batch failed");
    assert!(e.to_string().contains("bulkWrite") && e.to_string().contains("dr_posts"), "{e}");
    // The author is deleted and its rules are not: verify names what is left.
    assert!(Author::repo(&t.db).get(&ann.id).await?.is_none());
    Ok(())
}

/// Rules that stop after the delete say the delete stands (issue 38,
/// review item 10): before, the error was the batch's alone, and the docs
/// said a delete run again would finish the work, which finds nothing to
/// delete.
#[tokio::test]
async fn rules_that_stop_after_the_delete_say_the_delete_stands() -> docrel::Result<()> {
    let _one = FAIL_POINT.lock().await;
    let t = TestDb::new("bulk_delete_unfinished").await?;
    let (ann, _) = seed(&t).await?;
    refuse_bulk_writes(&t, doc! {"times": 1}.into()).await;
    let deleted = Author::repo(&t.db).delete_by_id(&ann.id).await;
    refuse_bulk_writes(&t, "off".into()).await;
    let e = deleted.expect_err("the batch failed");
    assert!(matches!(e, docrel::Error::RulesUnfinished { deleted: 1, .. }), "{e}");
    let text = e.to_string();
    assert!(text.contains("were deleted") && text.contains("The delete stands") && text.contains("dr_posts"), "{text}");
    assert!(Author::repo(&t.db).get(&ann.id).await?.is_none(), "the author is gone, as the error says");
    assert!(!Author::repo(&t.db).delete_by_id(&ann.id).await?, "running it again finds nothing to delete");
    Ok(())
}
