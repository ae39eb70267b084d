//! On MongoDB 8.0+ (the embedded server reports 8.2) a source update and
//! every fan-out it owes travel in one client-level `bulkWrite` (issue 31):
//! a rename copied into three collections is one round trip, and the
//! stored copies are right, read back with the raw driver. A cut batch is
//! written again the other way; a batch whose source matched nothing goes
//! the other way too, and no copy keeps a version its source never had.
//! The writes that read the source as they write it (by filter, replace,
//! save, transactional) send their fan-outs in one `bulkWrite` after it.

use docrel::bson::{doc, oid::ObjectId, Bson, Document as BsonDoc};
use docrel::check;
use docrel::testing::TestDb;
use docrel::{Document, Embedded};
use serde::{Deserialize, Serialize};

/// The fail point is the server's: one test of this binary holds it at a time.
static FAIL_POINT: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "bf_parts")]
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
#[document(collection = "bf_products")]
struct Product {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = Part, max = 10)]
    parts: Vec<PartRef>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "bf_bins")]
struct Bin {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = Part, max = 10)]
    parts: Vec<PartRef>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "bf_labels")]
struct Label {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Part)]
    part: ObjectId,
    #[denormalize(from = Part::name, via = part)]
    part_name: String,
}

/// A part held by 2 products, a bin and 2 labels.
async fn catalog(t: &TestDb) -> docrel::Result<Part> {
    let part = Part { id: ObjectId::new(), name: "bolt".into() };
    Part::repo(&t.db).insert(&part).await?;
    let held = || vec![PartRef { id: part.id, name: String::new() }];
    Product::repo(&t.db)
        .insert_many(&(0..2).map(|_| Product { id: ObjectId::new(), parts: held() }).collect::<Vec<_>>())
        .await?;
    Bin::repo(&t.db).insert(&Bin { id: ObjectId::new(), parts: held() }).await?;
    let label = || Label { id: ObjectId::new(), part: part.id, part_name: String::new() };
    Label::repo(&t.db).insert_many(&[label(), label()]).await?;
    Ok(part)
}

/// Every copy of the part's name, as stored, with its version record.
async fn copies(t: &TestDb, part: ObjectId) -> docrel::Result<Vec<(String, Bson)>> {
    use futures::TryStreamExt;
    let mut out = Vec::new();
    let record = |d: &BsonDoc, field: &str| {
        let copies =
            d.get_document("_docrel").and_then(|m| m.get_document("copies")).and_then(|c| c.get_document(field));
        copies.ok().and_then(|c| c.get(part.to_hex()).cloned()).unwrap_or(Bson::Null)
    };
    for collection in ["bf_products", "bf_bins"] {
        let docs: Vec<BsonDoc> = t.db.collection::<BsonDoc>(collection).find(doc! {}).await?.try_collect().await?;
        for d in &docs {
            for e in d.get_array("parts").unwrap() {
                out.push((e.as_document().unwrap().get_str("name").unwrap().to_owned(), record(d, "parts")));
            }
        }
    }
    let labels: Vec<BsonDoc> = t.db.collection::<BsonDoc>("bf_labels").find(doc! {}).await?.try_collect().await?;
    for d in &labels {
        out.push((d.get_str("part_name").unwrap().to_owned(), record(d, "part")));
    }
    Ok(out)
}

async fn version(t: &TestDb, part: ObjectId) -> docrel::Result<Bson> {
    let stored = t.db.collection::<BsonDoc>("bf_parts").find_one(doc! {"_id": part}).await?.expect("stored");
    Ok(stored.get_document("_docrel").unwrap().get("v").cloned().unwrap())
}

/// The commands sent since `mark`, and every copy of the part named `name`
/// at the part's version.
async fn renamed(t: &TestDb, part: ObjectId, name: &str, mark: docrel::client::Mark) -> docrel::Result<Vec<String>> {
    let sent = t.trips.commands_since(mark);
    let v = version(t, part).await?;
    let stored = copies(t, part).await?;
    assert_eq!(stored.len(), 5);
    assert!(stored.iter().all(|(n, record)| n == name && *record == v), "{stored:?} at {v}");
    Ok(sent)
}

/// The server's next `bulkWrite` from this test's client loses its
/// connection (`on`), or no longer (`off`).
async fn cut_next_bulk_write(t: &TestDb, on: bool) -> docrel::Result<()> {
    let mode: Bson = if on { doc! {"times": 1}.into() } else { "off".into() };
    let data = doc! {"failCommands": ["bulkWrite"], "closeConnection": true, "appName": t.db.name()};
    t.client
        .database("admin")
        .run_command(doc! {"configureFailPoint": "failCommand", "mode": mode, "data": data})
        .await?;
    Ok(())
}

/// The server's next `count` inserts from this test's client are refused
/// with `code`, or no longer (`None`).
async fn refuse_inserts(t: &TestDb, refusal: Option<(i32, i32)>) -> docrel::Result<()> {
    let command = match refusal {
        Some((code, count)) => doc! {"configureFailPoint": "failCommand", "mode": {"times": count},
        "data": {"failCommands": ["insert"], "errorCode": code, "appName": t.db.name()}},
        None => doc! {"configureFailPoint": "failCommand", "mode": "off"},
    };
    t.client.database("admin").run_command(command).await?;
    Ok(())
}

/// What a reader of docrel's errors never meets: the driver's `Debug`
/// forms and its scaffolding around a message.
fn assert_readable(text: &str) {
    for dump in ["BulkWriteError {", "WriteError {", "CommandError {", "Kind:", "labels:", "partial_result"] {
        assert!(!text.contains(dump), "`{dump}` in: {text}");
    }
}

#[tokio::test]
async fn a_rename_copied_into_three_collections_is_one_round_trip() -> docrel::Result<()> {
    let t = TestDb::new("bulk_rename").await?;
    let part = catalog(&t).await?;
    let mark = t.trips.mark();
    Part::repo(&t.db).update_by_id(&part.id, Part::fields().name.set("hex bolt".into())).await?;
    assert_eq!(renamed(&t, part.id, "hex bolt", mark).await?, ["bulkWrite"]);
    assert_eq!(check::copies::<Part>().verify(&t.db).run().await?.stale, 0);
    Ok(())
}

#[tokio::test]
async fn a_cut_batch_is_written_again_the_other_way() -> docrel::Result<()> {
    let _one = FAIL_POINT.lock().await;
    let t = TestDb::new("bulk_cut").await?;
    let part = catalog(&t).await?;
    cut_next_bulk_write(&t, true).await?;
    let mark = t.trips.mark();
    let written = Part::repo(&t.db).update_by_id(&part.id, Part::fields().name.set("hex bolt".into())).await;
    cut_next_bulk_write(&t, false).await?;
    written?;
    let commands = renamed(&t, part.id, "hex bolt", mark).await?;
    assert_eq!(commands[..2], ["bulkWrite", "update bf_parts"], "{commands:?}");
    Ok(())
}

#[tokio::test]
async fn a_batch_whose_source_matched_nothing_leaves_no_version_the_source_never_had() -> docrel::Result<()> {
    let t = TestDb::new("bulk_ahead").await?;
    let part = catalog(&t).await?;
    // Another writer's clock is far ahead: the part's version is past
    // every stamp of this process, so the batch's source statement
    // matches nothing while its fan-outs run.
    let ahead = 4_000_000_000_000_000_i64;
    t.db.collection::<BsonDoc>("bf_parts")
        .update_one(doc! {"_id": part.id}, doc! {"$set": {"_docrel.v": ahead}})
        .await?;
    Part::repo(&t.db).update_by_id(&part.id, Part::fields().name.set("hex bolt".into())).await?;
    let v = version(&t, part.id).await?;
    assert!(v.as_i64().unwrap() > ahead, "the other way wrote the source past the other writer's version: {v}");
    let stored = copies(&t, part.id).await?;
    assert!(stored.iter().all(|(name, record)| name == "hex bolt" && *record == v), "{stored:?} at {v}");
    assert_eq!(check::copies::<Part>().verify(&t.db).run().await?.stale, 0);
    Ok(())
}

/// The source writes that read the stored document as they write it (a
/// write by filter, a replace, a save, the transactional mode) send it,
/// then every fan-out in one `bulkWrite`: two round trips for copies in
/// three collections, where there were four.
#[tokio::test]
async fn every_source_write_sends_its_fan_outs_in_one_batch() -> docrel::Result<()> {
    let t = TestDb::new("bulk_writes").await?;
    let part = catalog(&t).await?;
    let (repo, f) = (Part::repo(&t.db), Part::fields());
    let mark = t.trips.mark();
    repo.update_one(f.id.eq(part.id), f.name.set("by filter".into())).await?;
    assert_eq!(renamed(&t, part.id, "by filter", mark).await?, ["findAndModify bf_parts", "bulkWrite"]);
    let mark = t.trips.mark();
    repo.replace(&Part { id: part.id, name: "replaced".into() }).await?;
    assert_eq!(renamed(&t, part.id, "replaced", mark).await?, ["findAndModify bf_parts", "bulkWrite"]);
    let mark = t.trips.mark();
    repo.save(&Part { id: part.id, name: "saved".into() }).await?;
    assert_eq!(renamed(&t, part.id, "saved", mark).await?, ["findAndModify bf_parts", "bulkWrite"]);
    let mark = t.trips.mark();
    Part::repo(&t.db).transactional_fan_out().update_by_id(&part.id, f.name.set("in one".into())).await?;
    let sent = renamed(&t, part.id, "in one", mark).await?;
    assert_eq!(sent, ["findAndModify bf_parts", "bulkWrite", "commitTransaction"]);
    // Many sources: their ids, the update, their images, then the batch
    // (a page short of full is the last: no read of the next).
    let mark = t.trips.mark();
    repo.update_many(f.id.eq(part.id), f.name.set("many".into())).await?;
    let sent = renamed(&t, part.id, "many", mark).await?;
    assert_eq!(sent, ["find bf_parts", "update bf_parts", "find bf_parts", "bulkWrite"]);
    assert_eq!(check::copies::<Part>().verify(&t.db).run().await?.stale, 0);
    Ok(())
}

/// A fan-out statement the server refuses (here the bins' validator) is
/// the fan-out error of the other way: it names the target and the
/// targets written before it, and a repair completes it once the cause is
/// gone.
#[tokio::test]
async fn a_refused_statement_of_the_batch_names_its_target() -> docrel::Result<()> {
    let t = TestDb::new("bulk_refused").await?;
    let part = catalog(&t).await?;
    let validator = |on: bool| {
        let rule = if on {
            doc! {"parts.name": {"$ne": "refused"}}
        } else {
            doc! {}
        };
        t.db.run_command(doc! {"collMod": "bf_bins", "validator": rule})
    };
    validator(true).await?;
    let e =
        Part::repo(&t.db).replace(&Part { id: part.id, name: "refused".into() }).await.expect_err("the bins refuse it");
    // The server's reason as one sentence, not the driver's dump of the batch.
    let text = e.to_string();
    assert!(text.contains("server error 121") && text.contains("Document failed validation"), "{text}");
    assert!(text.contains("was written, but its copies in `bf_bins`"), "{text}");
    assert_readable(&text);
    // The holders the fan-out left stale: those of the refused target and
    // of every target after it (the order is the schema graph's, which
    // follows link order and so differs between builds).
    let mut stale = 0;
    match &e {
        docrel::Error::FanOut { target, done, .. } => {
            assert_eq!(*target, "bf_bins", "{e}");
            for (collection, path, holders) in
                [("bf_labels", "part_name", 2), ("bf_products", "parts.name", 2), ("bf_bins", "parts.name", 1)]
            {
                let written = t.db.collection::<BsonDoc>(collection).count_documents(doc! {path: "refused"}).await?;
                let was_done = done.split(", ").any(|d| d == collection);
                assert_eq!(written, if was_done { holders } else { 0 }, "{collection}: {e}");
                stale += if was_done { 0 } else { holders };
            }
        }
        other => panic!("a fan-out error, not {other}"),
    }
    validator(false).await?;
    let report = check::copies::<Part>().repair(&t.db).run().await?;
    assert_eq!(report.fixed, stale, "{report:?}");
    renamed(&t, part.id, "refused", t.trips.mark()).await?;
    Ok(())
}

/// A batch of fan-outs cut with the connection (what it wrote unknown) is
/// sent again target by target: the same guarded `$set`s.
#[tokio::test]
async fn a_cut_batch_of_fan_outs_is_sent_again_target_by_target() -> docrel::Result<()> {
    let _one = FAIL_POINT.lock().await;
    let t = TestDb::new("bulk_cut_fan_outs").await?;
    let part = catalog(&t).await?;
    cut_next_bulk_write(&t, true).await?;
    let mark = t.trips.mark();
    let replaced = Part::repo(&t.db).replace(&Part { id: part.id, name: "cut".into() }).await;
    cut_next_bulk_write(&t, false).await?;
    replaced?;
    let sent = renamed(&t, part.id, "cut", mark).await?;
    assert_eq!(sent[..2], ["findAndModify bf_parts", "bulkWrite"], "{sent:?}");
    assert_eq!(sent[2..].iter().filter(|c| c.starts_with("update bf_")).count(), 3, "{sent:?}");
    Ok(())
}

/// A command the server refuses (a fail point answering 112 WriteConflict)
/// reads as the server's code, name and message, and nothing was inserted.
#[tokio::test]
async fn a_refused_command_reads_as_the_servers_code_and_message() -> docrel::Result<()> {
    let _one = FAIL_POINT.lock().await;
    let t = TestDb::new("bulk_command_refused").await?;
    // Not 91 (ShutdownInProgress): the driver then marks the server unknown
    // until its next heartbeat, and the test's later calls time out
    // choosing a server under a loaded run.
    for (code, name, count) in [(112, "WriteConflict", 1)] {
        let part = Part { id: ObjectId::new(), name: "refused".into() };
        refuse_inserts(&t, Some((code, count))).await?;
        let inserted = Part::repo(&t.db).insert(&part).await;
        refuse_inserts(&t, None).await?;
        let e = inserted.expect_err("the fail point refuses it");
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("insert on collection `bf_parts` failed: server error {code} ({name}): ")),
            "{text}"
        );
        assert_readable(&text);
        assert!(!e.is_transient() && !text.contains("This is transient"), "{text}");
        assert_eq!(t.db.collection::<BsonDoc>("bf_parts").count_documents(doc! {"_id": part.id}).await?, 0);
    }
    Ok(())
}
