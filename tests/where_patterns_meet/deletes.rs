//! Deletes where patterns meet: NULLIFY, cascade cycles, cascades into subset children, bucket pages racing a parent delete (issue 27).

use crate::raw;
use docrel::bson::{doc, oid::ObjectId, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::{Document, Error, View};
use serde::{Deserialize, Serialize};

// ---- NULLIFY: a pulled reference takes the copies made through it -------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "del_hosts")]
struct DelHost {
    #[serde(rename = "_id")]
    id: ObjectId,
    ipaddr: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "del_msgs")]
struct DelMsg {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = DelHost, on_delete = pull)]
    host: Option<ObjectId>,
    #[denormalize(from = DelHost::ipaddr, via = host)]
    ipaddr: Option<String>,
}

#[derive(docrel::Embedded, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct DelHostLine {
    id: ObjectId,
    #[denormalize(from = DelHost::ipaddr)]
    ipaddr: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "del_racks")]
struct DelRack {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = DelHost, max = 10, on_delete = pull)]
    hosts: Vec<DelHostLine>,
}

fn records<'d>(stored: &'d BsonDoc, field: &str) -> Option<&'d BsonDoc> {
    stored.get_document("_docrel").ok()?.get_document("copies").ok()?.get_document(field).ok()
}

async fn msg_with_host(t: &TestDb, ipaddr: &str) -> docrel::Result<(DelHost, DelMsg)> {
    let host = DelHost { id: ObjectId::new(), ipaddr: ipaddr.into() };
    DelHost::repo(&t.db).insert(&host).await?;
    let msg = DelMsg { id: ObjectId::new(), host: Some(host.id), ipaddr: None };
    DelMsg::repo(&t.db).insert(&msg).await?;
    let stored = raw(t, "del_msgs", msg.id).await.unwrap();
    assert_eq!(stored.get_str("ipaddr").unwrap(), ipaddr, "the insert filled the copy");
    assert!(records(&stored, "host").is_some_and(|r| r.contains_key(host.id.to_hex())), "{stored}");
    Ok((host, msg))
}

/// `on_delete = pull` on a single reference unsets the reference, the
/// copies made through it and their version record, in the same write: a
/// query on the copied value no longer matches (MongoEngine's cached
/// reference with NULLIFY). Before, the copy and its record stayed.
#[tokio::test]
async fn a_pulled_single_reference_takes_its_copies() -> docrel::Result<()> {
    let t = TestDb::new("del_nullify").await?;
    let (host, msg) = msg_with_host(&t, "10.0.0.1").await?;
    assert!(DelHost::repo(&t.db).delete(&host).await?);
    let stored = raw(&t, "del_msgs", msg.id).await.unwrap();
    assert!(!stored.contains_key("host"), "{stored}");
    assert!(!stored.contains_key("ipaddr"), "the copy went with its reference: {stored}");
    assert!(records(&stored, "host").is_none(), "and its record: {stored}");
    let matching = t.db.collection::<BsonDoc>("del_msgs").count_documents(doc! {"ipaddr": "10.0.0.1"}).await.unwrap();
    assert_eq!(matching, 0);
    assert!(DelMsg::repo(&t.db).require(&msg.id).await?.ipaddr.is_none());
    Ok(())
}

/// Pulling an element of an array of copies takes its copy and its record.
#[tokio::test]
async fn a_pulled_element_takes_its_copy_and_record() -> docrel::Result<()> {
    let t = TestDb::new("del_nullify_array").await?;
    let hosts =
        [DelHost { id: ObjectId::new(), ipaddr: "a".into() }, DelHost { id: ObjectId::new(), ipaddr: "b".into() }];
    DelHost::repo(&t.db).insert_many(&hosts).await?;
    let lines = hosts.iter().map(|h| DelHostLine { id: h.id, ipaddr: String::new() }).collect();
    let rack = DelRack { id: ObjectId::new(), hosts: lines };
    DelRack::repo(&t.db).insert(&rack).await?;
    DelHost::repo(&t.db).delete_by_id(&hosts[0].id).await?;
    let stored = raw(&t, "del_racks", rack.id).await.unwrap();
    let left = stored.get_array("hosts").unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].as_document().unwrap().get_str("ipaddr").unwrap(), "b");
    let recorded = records(&stored, "hosts").unwrap();
    assert!(!recorded.contains_key(hosts[0].id.to_hex()) && recorded.contains_key(hosts[1].id.to_hex()), "{recorded}");
    Ok(())
}

/// Copies (and records) left behind by a reference that is gone, as the
/// pull wrote them before: `verify` reports them, `repair` clears them and
/// leaves the copies whose reference is there. An array's record of an
/// element no longer held is cleared the same way. Before, `verify` only
/// read holders whose reference exists and reported nothing.
#[tokio::test]
async fn copies_whose_reference_is_gone_are_reported_and_cleared() -> docrel::Result<()> {
    let t = TestDb::new("del_leftovers").await?;
    let (host, msg) = msg_with_host(&t, "10.0.0.2").await?;
    let (_, kept) = msg_with_host(&t, "10.0.0.3").await?;
    // The pull as it was written before: the reference alone.
    let msgs = t.db.collection::<BsonDoc>("del_msgs");
    msgs.update_one(doc! {"_id": msg.id}, doc! {"$unset": {"host": ""}}).await.unwrap();
    let rack = DelRack { id: ObjectId::new(), hosts: vec![DelHostLine { id: host.id, ipaddr: String::new() }] };
    DelRack::repo(&t.db).insert(&rack).await?;
    let racks = t.db.collection::<BsonDoc>("del_racks");
    racks.update_one(doc! {"_id": rack.id}, doc! {"$set": {"hosts": []}}).await.unwrap();

    let report = docrel::check::copies::<DelHost>().verify(&t.db).run().await?;
    assert_eq!(report.stale, 2, "{report:?}");
    assert!(report.problems.iter().any(|p| p.contains("host") && p.contains("refers to none")), "{report:?}");
    let report = docrel::check::copies::<DelHost>().repair(&t.db).run().await?;
    assert_eq!(report.fixed, 2, "{report:?}");
    let stored = raw(&t, "del_msgs", msg.id).await.unwrap();
    assert!(!stored.contains_key("ipaddr") && records(&stored, "host").is_none(), "{stored}");
    let stored = raw(&t, "del_racks", rack.id).await.unwrap();
    assert!(records(&stored, "hosts").is_none_or(|r| r.is_empty()), "{stored}");
    let stored = raw(&t, "del_msgs", kept.id).await.unwrap();
    assert_eq!(stored.get_str("ipaddr").unwrap(), "10.0.0.3");
    assert!(records(&stored, "host").is_some());
    let report = docrel::check::copies::<DelHost>().verify(&t.db).run().await?;
    assert_eq!(report.found(), 0, "{report:?}");
    Ok(())
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "del_owners")]
struct DelOwner {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    #[reference(many, to = DelChore, inverse = owner, max = 10)]
    chores: Vec<ObjectId>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "del_chores")]
struct DelChore {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = DelOwner, inverse = chores)]
    owner: Option<ObjectId>,
    #[denormalize(from = DelOwner::name, via = owner)]
    owner_name: Option<String>,
}

/// `unlink` of a single reference takes the copies made through it, and
/// so does the default pull of a two-way optional reference.
#[tokio::test]
async fn an_unlinked_single_reference_takes_its_copies() -> docrel::Result<()> {
    let t = TestDb::new("del_unlink").await?;
    let ann = DelOwner { id: ObjectId::new(), name: "Ann".into(), chores: vec![] };
    DelOwner::repo(&t.db).insert(&ann).await?;
    let chores = [ObjectId::new(), ObjectId::new()];
    for id in chores {
        DelChore::repo(&t.db).insert(&DelChore { id, owner: Some(ann.id), owner_name: None }).await?;
        assert_eq!(raw(&t, "del_chores", id).await.unwrap().get_str("owner_name").unwrap(), "Ann");
    }
    DelChore::rels().owner.unlink(&t.db, &chores[0], &ann.id).await?;
    let stored = raw(&t, "del_chores", chores[0]).await.unwrap();
    assert!(!stored.contains_key("owner") && !stored.contains_key("owner_name"), "{stored}");
    assert!(records(&stored, "owner").is_none(), "{stored}");
    DelOwner::repo(&t.db).delete_by_id(&ann.id).await?;
    let stored = raw(&t, "del_chores", chores[1]).await.unwrap();
    assert!(!stored.contains_key("owner") && !stored.contains_key("owner_name"), "{stored}");
    assert!(records(&stored, "owner").is_none(), "{stored}");
    Ok(())
}

// ---- cascade cycles: visited documents, not depth ---------------------------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "del_nodes")]
struct DelNode {
    #[serde(rename = "_id")]
    id: i32,
    #[reference(to = DelNode, on_delete = cascade)]
    next: Option<i32>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "del_pins")]
struct DelPin {
    #[serde(rename = "_id")]
    id: i32,
    #[reference(to = DelNode, on_delete = restrict)]
    node: i32,
}

async fn count(t: &TestDb, collection: &str) -> u64 {
    t.db.collection::<BsonDoc>(collection).count_documents(doc! {}).await.unwrap()
}

/// Two documents that cascade to each other (MongoEngine's
/// `test_delete_with_cascade_cycle`): deleting one deletes both. Before,
/// the delete was refused as a cycle of the schema and nothing was deleted.
#[tokio::test]
async fn a_cascade_cycle_in_the_data_deletes_both() -> docrel::Result<()> {
    let t = TestDb::new("del_cycle").await?;
    let nodes = DelNode::repo(&t.db);
    nodes.insert(&DelNode { id: 1, next: Some(2) }).await?;
    nodes.insert(&DelNode { id: 2, next: Some(1) }).await?;
    assert!(nodes.delete_by_id(&1).await?);
    assert_eq!(count(&t, "del_nodes").await, 0);
    Ok(())
}

/// A self-referencing chain of depth 40 deletes all of it; a `restrict`
/// at its far end still refuses before anything is deleted.
#[tokio::test]
async fn a_deep_self_referencing_chain_deletes_all() -> docrel::Result<()> {
    let t = TestDb::new("del_chain").await?;
    let nodes = DelNode::repo(&t.db);
    let chain: Vec<DelNode> = (0..=40).map(|i| DelNode { id: i, next: (i > 0).then_some(i - 1) }).collect();
    nodes.insert_many(&chain).await?;
    DelPin::repo(&t.db).insert(&DelPin { id: 1, node: 40 }).await?;
    let err = nodes.delete_by_id(&0).await.unwrap_err();
    assert!(matches!(err, Error::StillReferenced { referrer: "del_pins", .. }), "{err}");
    assert_eq!(count(&t, "del_nodes").await, 41, "nothing was deleted");

    DelPin::repo(&t.db).delete_by_id(&1).await?;
    assert!(nodes.delete_by_id(&0).await?);
    assert_eq!(count(&t, "del_nodes").await, 0);
    Ok(())
}

// ---- a cascade into subset children rebuilds their parents' subsets -------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "del_boards")]
struct DelBoard {
    #[serde(rename = "_id")]
    id: i32,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "del_topics")]
struct DelTopic {
    #[serde(rename = "_id")]
    id: i32,
    #[embed(max = 3, subset_of = DelNote, sort = "-n", key = note_id)]
    latest: Vec<DelNoteLine>,
}

#[derive(View, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[view(of = DelNote)]
struct DelNoteLine {
    note_id: i32,
    n: i32,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "del_notes")]
struct DelNote {
    #[serde(rename = "_id")]
    id: i32,
    note_id: i32,
    n: i32,
    #[parent_ref(to = DelTopic)]
    topic: i32,
    #[reference(to = DelBoard, on_delete = cascade)]
    board: i32,
}

fn summary_ids(stored: &BsonDoc) -> Vec<i32> {
    stored.get_array("latest").unwrap().iter().map(|s| s.as_document().unwrap().get_i32("note_id").unwrap()).collect()
}

/// A cascade that deletes subset children rebuilds their parents' subsets:
/// the topic's summary no longer lists the note deleted with its board.
/// Before, the summary kept it.
#[tokio::test]
async fn a_cascade_into_subset_children_rebuilds_their_parents() -> docrel::Result<()> {
    let t = TestDb::new("del_cascade_subset").await?;
    DelBoard::repo(&t.db).insert_many(&[DelBoard { id: 1 }, DelBoard { id: 2 }]).await?;
    DelTopic::repo(&t.db).insert(&DelTopic { id: 1, latest: vec![] }).await?;
    let notes = [(1, 1), (2, 2), (3, 1)].map(|(i, board)| DelNote { id: i, note_id: i, n: i, topic: 1, board });
    DelNote::repo(&t.db).insert_many(&notes).await?;
    assert_eq!(summary_ids(&raw(&t, "del_topics", 1).await.unwrap()), [3, 2, 1]);
    DelBoard::repo(&t.db).delete_by_id(&1).await?;
    assert_eq!(count(&t, "del_notes").await, 1);
    assert_eq!(summary_ids(&raw(&t, "del_topics", 1).await.unwrap()), [2]);
    assert!(DelTopic::rels().latest.check(&t.db, &1).await?);
    Ok(())
}

// ---- a delete rebuilds the subsets of the parents its documents had when deleted --------------

/// Holds this test client's next `delete` command for a while, so another
/// client can move the child between the delete's read and its write.
async fn hold_next_delete(t: &TestDb, ms: i32) {
    let fail_point = doc! {
        "configureFailPoint": "failCommand",
        "mode": {"times": 1},
        "data": {"failCommands": ["delete"], "blockConnection": true, "blockTimeMS": ms, "appName": t.db.name()},
    };
    t.client.database("admin").run_command(fail_point).await.expect("fail point");
}

/// A child moved to another parent between a delete's read and its write:
/// the subset rebuilt is the new parent's, so neither topic lists the
/// deleted note (for `delete_by_id` and for `delete_many`). Before, the
/// delete read the parents first and rebuilt the old one only: the new
/// parent's summary kept the deleted note.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_moved_during_its_delete_leaves_no_summary() -> docrel::Result<()> {
    // The fail point is the server's: one test of this binary holds it at a time.
    let _alone = crate::leftovers::FAIL_POINTS.lock().await;
    let t = TestDb::new("del_moved").await?;
    let uri = std::env::var("MONGODB_URI").expect("MONGODB_URI");
    let other = docrel::mongodb::Client::with_uri_str(&uri).await.expect("a second client").database(t.db.name());
    DelBoard::repo(&t.db).insert(&DelBoard { id: 1 }).await?;
    DelTopic::repo(&t.db)
        .insert_many(&[DelTopic { id: 1, latest: vec![] }, DelTopic { id: 2, latest: vec![] }])
        .await?;
    for (round, many) in [(1, false), (2, true)] {
        let note = DelNote { id: round, note_id: round, n: round, topic: 1, board: 1 };
        DelNote::repo(&t.db).insert(&note).await?;
        assert_eq!(summary_ids(&raw(&t, "del_topics", 1).await.unwrap()), [round]);
        hold_next_delete(&t, 600).await;
        let db = t.db.clone();
        let delete = tokio::spawn(async move {
            match many {
                false => DelNote::repo(&db).delete_by_id(&round).await.map(u64::from),
                true => DelNote::repo(&db).delete_many(DelNote::fields().note_id.eq(round)).await,
            }
        });
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        DelNote::repo(&other).update_by_id(&round, DelNote::fields().topic.set(2)).await?;
        assert_eq!(delete.await.expect("the delete ran")?, 1, "round {round}");
        assert!(raw(&t, "del_notes", round).await.is_none());
        for topic in [1, 2] {
            let ids = summary_ids(&raw(&t, "del_topics", topic).await.unwrap());
            assert!(ids.is_empty(), "round {round}: topic {topic} still lists {ids:?}");
        }
    }
    Ok(())
}
