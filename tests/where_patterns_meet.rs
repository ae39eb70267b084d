//! The second audit's defects (issue 27), each as a plain test against the
//! server that failed before its fix, reading what is stored with the raw
//! driver.

use docrel::bson::{doc, oid::ObjectId, Bson, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::Document;
use serde::{Deserialize, Serialize};

async fn raw(t: &TestDb, collection: &str, id: impl Into<Bson>) -> Option<BsonDoc> {
    t.db.collection::<BsonDoc>(collection).find_one(doc! {"_id": id.into()}).await.expect("find")
}

// ---- item 2: the rules of a delete run only for a document it deleted ----------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "tools", shard_key(tenant, id))]
struct Tool {
    #[serde(rename = "_id")]
    id: ObjectId,
    tenant: String,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "kits")]
struct Kit {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = Tool, max = 20, on_delete = pull)]
    tools: Vec<ObjectId>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "sleeves")]
struct Sleeve {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Tool, on_delete = cascade)]
    tool: ObjectId,
}

/// A delete that matches nothing (here: the caller's copy of a sharded
/// document carries a stale shard key) deletes nothing and applies no
/// rule: the kit keeps its reference and the sleeve survives. Before, the
/// pull and the cascade ran first and the call returned `Ok(false)`.
#[tokio::test]
async fn a_delete_that_matches_nothing_applies_no_rule() -> docrel::Result<()> {
    let t = TestDb::new("delete_unmatched").await?;
    let tool = Tool { id: ObjectId::new(), tenant: "acme".into(), name: "wrench".into() };
    Tool::repo(&t.db).insert(&tool).await?;
    let kit = Kit { id: ObjectId::new(), tools: vec![tool.id] };
    Kit::repo(&t.db).insert(&kit).await?;
    let sleeve = Sleeve { id: ObjectId::new(), tool: tool.id };
    Sleeve::repo(&t.db).insert(&sleeve).await?;

    let stale = Tool { tenant: "globex".into(), ..tool.clone() };
    assert!(!Tool::repo(&t.db).delete(&stale).await?, "nothing matched the stale shard key");
    assert!(raw(&t, "tools", tool.id).await.is_some());
    assert_eq!(raw(&t, "kits", kit.id).await.unwrap().get_array("tools").unwrap(), &vec![Bson::ObjectId(tool.id)]);
    assert!(raw(&t, "sleeves", sleeve.id).await.is_some(), "the cascade ran for a document still there");

    // The delete that matches applies them.
    assert!(Tool::repo(&t.db).delete(&tool).await?);
    assert!(raw(&t, "kits", kit.id).await.unwrap().get_array("tools").unwrap().is_empty());
    assert!(raw(&t, "sleeves", sleeve.id).await.is_none());
    Ok(())
}

// ---- item 3: a reference written before its target links back when the target arrives ------

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "people")]
struct Person {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    #[reference(many, to = Job, inverse = owner, max = 50)]
    jobs: Vec<ObjectId>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "jobs")]
struct Job {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Person, inverse = jobs)]
    owner: Option<ObjectId>,
}

/// A job inserted with an owner that does not exist yet is stored as
/// written; when the person is inserted, the jobs already referring to
/// them are linked back (I2), and the other way round: a person listing a
/// job not there yet gets it linked when the job arrives.
#[tokio::test]
async fn a_reference_written_before_its_target_links_back() -> docrel::Result<()> {
    let t = TestDb::new("link_later").await?;
    let ann = ObjectId::new();
    let job = Job { id: ObjectId::new(), owner: Some(ann) };
    Job::repo(&t.db).insert(&job).await?;
    Person::repo(&t.db).insert(&Person { id: ann, name: "Ann".into(), jobs: vec![] }).await?;
    assert_eq!(raw(&t, "people", ann).await.unwrap().get_array("jobs").unwrap(), &vec![Bson::ObjectId(job.id)]);
    assert_eq!(raw(&t, "jobs", job.id).await.unwrap().get_object_id("owner").unwrap(), ann);

    let bob = ObjectId::new();
    let later = ObjectId::new();
    Person::repo(&t.db).insert(&Person { id: bob, name: "Bob".into(), jobs: vec![later] }).await?;
    Job::repo(&t.db).insert(&Job { id: later, owner: None }).await?;
    assert_eq!(raw(&t, "jobs", later).await.unwrap().get_object_id("owner").unwrap(), bob);
    assert_eq!(raw(&t, "people", bob).await.unwrap().get_array("jobs").unwrap(), &vec![Bson::ObjectId(later)]);
    Ok(())
}
