//! Faults the history checker did not inject: a fan-out `bulkWrite` the
//! server applied but answered with a write-concern error. What it wrote
//! is unknown to docrel, which writes every target again one by one at the
//! same version; those statements then change nothing, and the copies of
//! the copies it had rewritten were never followed.

use crate::raw;
use docrel::bson::{doc, oid::ObjectId};
use docrel::testing::TestDb;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "ft_sources")]
struct Source {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    edits: i32,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "ft_holders")]
struct Holder {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Source)]
    source: ObjectId,
    #[denormalize(from = Source::name, via = source)]
    source_name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "ft_others")]
struct Other {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Source)]
    source: ObjectId,
    #[denormalize(from = Source::name, via = source)]
    source_name: String,
}

/// A copy of `Holder`'s copy: reached only by following the chain.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "ft_deep")]
struct Deep {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Holder)]
    holder: ObjectId,
    #[denormalize(from = Holder::source_name, via = holder)]
    name: String,
}

#[tokio::test]
async fn a_fan_out_answered_with_a_write_concern_error_still_follows_its_chains() -> docrel::Result<()> {
    let _alone = crate::FAIL_POINTS.lock().await;
    let t = TestDb::new("ft_wce_fan_out").await?;
    let source = Source { id: ObjectId::new(), name: "old".into(), edits: 0 };
    Source::repo(&t.db).insert(&source).await?;
    let holder = Holder { id: ObjectId::new(), source: source.id, source_name: String::new() };
    Holder::repo(&t.db).insert(&holder).await?;
    Other::repo(&t.db).insert(&Other { id: ObjectId::new(), source: source.id, source_name: String::new() }).await?;
    let deep = Deep { id: ObjectId::new(), holder: holder.id, name: String::new() };
    Deep::repo(&t.db).insert(&deep).await?;
    assert_eq!(raw(&t, "ft_deep", deep.id).await.unwrap().get_str("name").unwrap(), "old");

    // The fan-out's batch is applied, then answered with a write-concern error.
    t.client
        .database("admin")
        .run_command(doc! {
            "configureFailPoint": "failCommand",
            "mode": {"times": 1},
            "data": {"failCommands": ["bulkWrite"], "appName": t.db.name(),
                     "writeConcernError": {"code": 64, "errmsg": "waiting for replication timed out"}},
        })
        .await
        .expect("fail point");
    // `$set` with `$inc`: the general way, whose fan-out is one `bulkWrite` of both targets.
    let rename = Source::fields().name.set("new".into()).and(Source::fields().edits.inc(1));
    let result = Source::repo(&t.db).update_by_id(&source.id, rename).await;
    t.client
        .database("admin")
        .run_command(doc! {"configureFailPoint": "failCommand", "mode": "off"})
        .await
        .expect("fail point off");
    result?;
    assert_eq!(raw(&t, "ft_holders", holder.id).await.unwrap().get_str("source_name").unwrap(), "new");
    assert_eq!(raw(&t, "ft_deep", deep.id).await.unwrap().get_str("name").unwrap(), "new");
    assert!(docrel::check::copies::<Holder>().verify(&t.db).run().await?.clean());
    Ok(())
}

/// Review 8: a commit whose outcome stays unknown after the driver's
/// budget of commit retries (120 s, not configurable) said "nothing was
/// written" (`TransactionContended`), though the commit may have landed.
/// Here every commit is applied and answered with a write-concern error:
/// the error must say the write may have landed, and it did. The test
/// waits out the driver's budget.
#[tokio::test]
async fn a_commit_whose_outcome_stays_unknown_says_it_may_have_landed() -> docrel::Result<()> {
    let _alone = crate::FAIL_POINTS.lock().await;
    let t = TestDb::new("ft_commit_unknown").await?;
    let source = Source { id: ObjectId::new(), name: "old".into(), edits: 0 };
    Source::repo(&t.db).insert(&source).await?;
    let holder = Holder { id: ObjectId::new(), source: source.id, source_name: String::new() };
    Holder::repo(&t.db).insert(&holder).await?;

    t.client
        .database("admin")
        .run_command(doc! {
            "configureFailPoint": "failCommand",
            "mode": "alwaysOn",
            "data": {"failCommands": ["commitTransaction"], "appName": t.db.name(),
                     "writeConcernError": {"code": 64, "errmsg": "waiting for replication timed out"}},
        })
        .await
        .expect("fail point");
    let rename = Source::fields().name.set("new".into());
    let result = Source::repo(&t.db).transactional_fan_out().update_by_id(&source.id, rename).await;
    t.client
        .database("admin")
        .run_command(doc! {"configureFailPoint": "failCommand", "mode": "off"})
        .await
        .expect("fail point off");
    let err = result.unwrap_err();
    assert!(matches!(err, docrel::Error::CommitUnknown { .. }), "{err}");
    assert!(err.to_string().contains("may have been written"), "{err}");
    // It did land: "nothing was written" would have been false.
    assert_eq!(raw(&t, "ft_sources", source.id).await.unwrap().get_str("name").unwrap(), "new");
    Ok(())
}
