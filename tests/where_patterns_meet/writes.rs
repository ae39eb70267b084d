//! Writes of whole documents: unlink then replace, shard-key changes, inserts that land partly, insert_many (issue 27 items 4, 12, 13, 16).

use crate::raw;
use docrel::bson::{oid::ObjectId, Bson};
use docrel::testing::TestDb;
use docrel::Document;
use serde::{Deserialize, Serialize};

// ---- item 4: a replace keeps a two-way reference the other side no longer holds -----------

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "w_crews")]
struct Crew {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    #[reference(many, to = Shift, inverse = crew, max = 50)]
    shifts: Vec<ObjectId>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "w_shifts")]
struct Shift {
    #[serde(rename = "_id")]
    id: ObjectId,
    hours: i32,
    #[reference(to = Crew, inverse = shifts)]
    crew: Option<ObjectId>,
}

/// After `unlink` unsets a shift's crew, a `replace` or `save` of the
/// caller's old copy (which still names the crew) keeps what is stored:
/// no crew. Before, the stored field was missing, so the merge that keeps
/// two-way references fell back to the caller's value: a reference the
/// crew does not list (I2).
#[tokio::test]
async fn a_replace_after_unlink_keeps_the_reference_unset() -> docrel::Result<()> {
    let t = TestDb::new("w_unlink_replace").await?;
    let crew = Crew { id: ObjectId::new(), name: "night".into(), shifts: vec![] };
    Crew::repo(&t.db).insert(&crew).await?;
    for save in [false, true] {
        let shift = Shift { id: ObjectId::new(), hours: 8, crew: Some(crew.id) };
        Shift::repo(&t.db).insert(&shift).await?;
        assert_eq!(raw(&t, "w_crews", crew.id).await.unwrap().get_array("shifts").unwrap(), &vec![Bson::ObjectId(shift.id)]);
        Shift::rels().crew.unlink(&t.db, &shift.id, &crew.id).await?;

        let edited = Shift { hours: 6, ..shift.clone() };
        match save {
            false => Shift::repo(&t.db).replace(&edited).await?,
            true => Shift::repo(&t.db).save(&edited).await?,
        }
        let stored = raw(&t, "w_shifts", shift.id).await.unwrap();
        assert_eq!(stored.get_i32("hours").unwrap(), 6, "save={save}");
        assert!(stored.get("crew").is_none_or(|c| *c == Bson::Null), "save={save}: {stored}");
        assert!(raw(&t, "w_crews", crew.id).await.unwrap().get_array("shifts").unwrap().is_empty());
    }
    // A save that creates the document links what it names.
    let fresh = Shift { id: ObjectId::new(), hours: 4, crew: Some(crew.id) };
    Shift::repo(&t.db).save(&fresh).await?;
    assert_eq!(raw(&t, "w_shifts", fresh.id).await.unwrap().get_object_id("crew").unwrap(), crew.id);
    assert_eq!(raw(&t, "w_crews", crew.id).await.unwrap().get_array("shifts").unwrap(), &vec![Bson::ObjectId(fresh.id)]);
    Ok(())
}

// ---- item 12: a save or replace that changes the shard key moves the document -------------

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "w_accounts", shard_key(region, id))]
struct Account {
    #[serde(rename = "_id")]
    id: ObjectId,
    region: String,
    owner: String,
}

/// A document saved or replaced with a new shard-key value is the same
/// document moved, never a second one with the same `_id` (which a sharded
/// cluster would store on another shard) and never a duplicate-key error.
/// Before, the filter came from the new document, so it found nothing.
#[tokio::test]
async fn a_save_that_changes_the_shard_key_moves_the_document() -> docrel::Result<()> {
    let t = TestDb::new("w_shard_move").await?;
    let repo = Account::repo(&t.db);
    let coll = t.db.collection::<docrel::bson::Document>("w_accounts");
    for save in [true, false] {
        let a = Account { id: ObjectId::new(), region: "eu".into(), owner: "ann".into() };
        repo.insert(&a).await?;
        let moved = Account { region: "us".into(), owner: "bob".into(), ..a.clone() };
        match save {
            true => repo.save(&moved).await?,
            false => repo.replace(&moved).await?,
        }
        let stored: Vec<_> = {
            use futures::TryStreamExt;
            coll.find(docrel::bson::doc! {"_id": a.id}).await.expect("find").try_collect().await.expect("read")
        };
        assert_eq!(stored.len(), 1, "save={save}: {stored:?}");
        assert_eq!(stored[0].get_str("region").unwrap(), "us");
        assert_eq!(stored[0].get_str("owner").unwrap(), "bob");
    }
    // A save of a document not stored under any key creates it.
    let new = Account { id: ObjectId::new(), region: "ap".into(), owner: "cy".into() };
    repo.save(&new).await?;
    assert_eq!(raw(&t, "w_accounts", new.id).await.unwrap().get_str("region").unwrap(), "ap");
    Ok(())
}
