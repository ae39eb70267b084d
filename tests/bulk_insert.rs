//! On MongoDB 8.0+ (the embedded server reports 8.2) an `insert_many` of
//! subset children in its own transaction sends the documents and the
//! pushes into every parent's subset in one client-level `bulkWrite`
//! (issue 31): a fill read, the batch, the commit. The pushes, guarded by
//! the hosts' versions the fill read, confirm the copies (the races are in
//! snapshot_races.rs). A refused insert leaves nothing, and says it is a
//! duplicate key.

use docrel::bson::{doc, oid::ObjectId, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::{Document, Filter, View};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "bi_hosts")]
struct Host {
    #[serde(rename = "_id")]
    id: ObjectId,
    ipaddr: String,
    #[embed(max = 3, subset_of = Msg, sort = "-at")]
    latest: Vec<Line>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "bi_msgs")]
struct Msg {
    #[serde(rename = "_id")]
    id: i32,
    at: i32,
    #[denormalize(from = Host::ipaddr, via = host)]
    ipaddr: String,
    #[parent_ref(to = Host, sort = "-at")]
    host: ObjectId,
}

#[derive(View, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[view(of = Msg)]
struct Line {
    #[serde(rename = "_id")]
    id: i32,
    at: i32,
}

async fn latest(t: &TestDb, host: ObjectId) -> Vec<i32> {
    let stored: BsonDoc = t.db.collection("bi_hosts").find_one(doc! {"_id": host}).await.unwrap().unwrap();
    stored.get_array("latest").unwrap().iter().map(|l| l.as_document().unwrap().get_i32("_id").unwrap()).collect()
}

#[tokio::test]
async fn children_of_many_parents_and_their_pushes_are_one_bulk_write() -> docrel::Result<()> {
    let t = TestDb::new("bulk_insert").await?;
    let hosts: Vec<Host> =
        (0..4).map(|i| Host { id: ObjectId::new(), ipaddr: format!("10.0.0.{i}"), latest: vec![] }).collect();
    Host::repo(&t.db).insert_many(&hosts).await?;
    let msgs: Vec<Msg> =
        (0..20).map(|i| Msg { id: i, at: i, ipaddr: String::new(), host: hosts[i as usize % 4].id }).collect();
    let mark = t.trips.mark();
    Msg::repo(&t.db).insert_many(&msgs).await?;
    // The pushes, guarded by the versions the fill read, confirm the copies.
    assert_eq!(t.trips.commands_since(mark), ["find bi_hosts", "bulkWrite", "commitTransaction"]);
    for (i, host) in hosts.iter().enumerate() {
        let i = i as i32;
        assert_eq!(latest(&t, host.id).await, [16 + i, 12 + i, 8 + i], "the 3 newest, newest first");
        assert!(Host::rels().latest.check(&t.db, &host.id).await?);
    }
    let stored: Vec<BsonDoc> = {
        use futures::TryStreamExt;
        t.db.collection::<BsonDoc>("bi_msgs").find(doc! {}).await?.try_collect().await?
    };
    assert_eq!(stored.len(), 20);
    for m in &stored {
        let host = hosts.iter().find(|h| m.get_object_id("host").ok() == Some(h.id)).unwrap();
        assert_eq!(m.get_str("ipaddr").unwrap(), host.ipaddr, "the copy was filled: {m:?}");
    }
    Ok(())
}

#[tokio::test]
async fn a_duplicate_child_writes_nothing_and_is_a_duplicate_key() -> docrel::Result<()> {
    let t = TestDb::new("bulk_insert_dup").await?;
    let host = Host { id: ObjectId::new(), ipaddr: "10.0.0.9".into(), latest: vec![] };
    Host::repo(&t.db).insert(&host).await?;
    Msg::repo(&t.db).insert(&Msg { id: 7, at: 7, ipaddr: String::new(), host: host.id }).await?;
    let batch: Vec<Msg> = [8, 7, 9].map(|i| Msg { id: i, at: i, ipaddr: String::new(), host: host.id }).into();
    let e = Msg::repo(&t.db).insert_many(&batch).await.expect_err("7 is taken");
    assert!(e.is_duplicate_key(), "{e}");
    assert!(e.to_string().contains("already stored"), "{e}");
    assert_eq!(Msg::repo(&t.db).count(Filter::all()).await?, 1, "all or nothing");
    assert_eq!(latest(&t, host.id).await, [7]);
    assert!(Host::rels().latest.check(&t.db, &host.id).await?);
    Ok(())
}
