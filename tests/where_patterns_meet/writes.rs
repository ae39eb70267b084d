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
        assert_eq!(
            raw(&t, "w_crews", crew.id).await.unwrap().get_array("shifts").unwrap(),
            &vec![Bson::ObjectId(shift.id)]
        );
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
    assert_eq!(
        raw(&t, "w_crews", crew.id).await.unwrap().get_array("shifts").unwrap(),
        &vec![Bson::ObjectId(fresh.id)]
    );
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

// ---- item 13: an insert whose link is refused writes nothing ---------------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "w_desks")]
struct Desk {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = Ticket, inverse = desk, max = 1)]
    tickets: Vec<ObjectId>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "w_tickets")]
struct Ticket {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Desk, inverse = tickets)]
    desk: Option<ObjectId>,
}

/// A ticket inserted for a desk whose list is full gets `EmbedFull`,
/// which says nothing was written: and nothing is (the insert and its link
/// are one transaction). Before, the ticket stayed stored, naming a desk
/// that does not list it (I2).
#[tokio::test]
async fn an_insert_whose_link_is_refused_writes_nothing() -> docrel::Result<()> {
    let t = TestDb::new("w_link_full").await?;
    let desk = Desk { id: ObjectId::new(), tickets: vec![] };
    Desk::repo(&t.db).insert(&desk).await?;
    let first = Ticket { id: ObjectId::new(), desk: Some(desk.id) };
    Ticket::repo(&t.db).insert(&first).await?;
    let second = Ticket { id: ObjectId::new(), desk: Some(desk.id) };
    let err = Ticket::repo(&t.db).insert(&second).await.unwrap_err();
    assert!(matches!(err, docrel::Error::EmbedFull { .. }), "{err}");
    assert!(err.to_string().contains("nothing was written"), "{err}");
    assert!(raw(&t, "w_tickets", second.id).await.is_none());
    assert_eq!(
        raw(&t, "w_desks", desk.id).await.unwrap().get_array("tickets").unwrap(),
        &vec![Bson::ObjectId(first.id)]
    );
    Ok(())
}

/// A write-concern error means the document was written (only its
/// acknowledgement by more members failed): what it owes is still done,
/// here its summary in its board's subset, and the error is returned.
/// Before, it counted as nothing written, so the board never listed it.
#[tokio::test]
async fn an_insert_with_a_write_concern_error_still_pushes_its_summary() -> docrel::Result<()> {
    let t = TestDb::new("w_wce_insert").await?;
    Board::repo(&t.db).insert(&Board { id: 1, latest: vec![] }).await?;
    t.client
        .database("admin")
        .run_command(docrel::bson::doc! {
            "configureFailPoint": "failCommand",
            "mode": {"times": 1},
            "data": {"failCommands": ["insert"], "appName": t.db.name(),
                     "writeConcernError": {"code": 64, "errmsg": "waiting for replication timed out"}},
        })
        .await
        .expect("fail point");
    let note = Note { id: ObjectId::new(), note_id: 7, board: 1 };
    let result = Note::repo(&t.db).insert(&note).await;
    assert!(result.is_err(), "the write concern error is returned");
    assert!(raw(&t, "w_notes", note.id).await.is_some());
    let latest = raw(&t, "w_boards", 1).await.unwrap().get_array("latest").unwrap().clone();
    assert_eq!(latest.len(), 1, "{latest:?}");
    Ok(())
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "w_boards")]
struct Board {
    #[serde(rename = "_id")]
    id: i32,
    #[embed(max = 3, subset_of = Note, sort = "-note_id", key = note_id)]
    latest: Vec<NoteLine>,
}

#[derive(docrel::View, Serialize, Deserialize, Debug, Clone)]
#[view(of = Note)]
struct NoteLine {
    note_id: i32,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "w_notes")]
struct Note {
    #[serde(rename = "_id")]
    id: ObjectId,
    note_id: i32,
    #[parent_ref(to = Board)]
    board: i32,
}

// ---- item 16: insert_many is all or nothing ---------------------------------------------------

/// On a deployment with transactions, `insert_many` with a refused
/// document (here an `_id` already stored) writes none of them, and nothing
/// derived from them: the desk lists only the ticket it had.
#[tokio::test]
async fn insert_many_is_all_or_nothing() -> docrel::Result<()> {
    let t = TestDb::new("w_insert_many").await?;
    let desk = Desk { id: ObjectId::new(), tickets: vec![] };
    Desk::repo(&t.db).insert(&desk).await?;
    let taken = Ticket { id: ObjectId::new(), desk: None };
    Ticket::repo(&t.db).insert(&taken).await?;
    let batch = [
        Ticket { id: ObjectId::new(), desk: Some(desk.id) },
        taken.clone(),
        Ticket { id: ObjectId::new(), desk: None },
    ];
    assert!(Ticket::repo(&t.db).insert_many(&batch).await.is_err());
    assert!(raw(&t, "w_tickets", batch[0].id).await.is_none());
    assert!(raw(&t, "w_tickets", batch[2].id).await.is_none());
    assert!(raw(&t, "w_desks", desk.id).await.unwrap().get_array("tickets").unwrap().is_empty());
    Ok(())
}
