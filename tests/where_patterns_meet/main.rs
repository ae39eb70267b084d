//! The second audit's defects (issue 27), each as a plain test against the
//! server that failed before its fix, reading what is stored with the raw
//! driver.

use docrel::bson::{doc, oid::ObjectId, Bson, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::{Document, Error, Filter, View};
use serde::{Deserialize, Serialize};

// Each part of the issue has its own module; the items fixed first stay here.
mod checker_found;
mod compose;
mod deletes;
mod in_place;
mod leftovers;
mod round_trips;
mod security;
mod sync;
mod writes;

/// The document `_id = id` of `collection` as stored, read with the raw driver.
pub(crate) async fn raw(t: &TestDb, collection: &str, id: impl Into<Bson>) -> Option<BsonDoc> {
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

// ---- item 5: what docrel maintains is not the caller's to write --------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "shops")]
struct Shop {
    #[serde(rename = "_id")]
    id: i32,
    name: String,
    #[embed(max = 3, subset_of = Review, sort = "-stars", key = review_id)]
    top: Vec<ReviewLine>,
}

#[derive(View, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[view(of = Review)]
struct ReviewLine {
    review_id: i32,
    stars: i32,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "reviews")]
struct Review {
    #[serde(rename = "_id")]
    id: ObjectId,
    review_id: i32,
    #[parent_ref(to = Shop)]
    shop: i32,
    stars: i32,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "posts")]
struct Post {
    #[serde(rename = "_id")]
    id: i32,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Comment {
    text: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "comment_pages")]
struct CommentPage {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Post, on_delete = cascade)]
    post: i32,
    page: i32,
    count: i32,
    #[bucket(size = 2)]
    comments: Vec<Comment>,
}

/// A parent inserted or saved with made-up summaries stores the summaries
/// of its children (none here), and an update of a subset, of a bucket's
/// elements or of its count is refused with an error naming the field,
/// before anything is written.
#[tokio::test]
async fn maintained_fields_are_not_written_by_the_caller() -> docrel::Result<()> {
    let t = TestDb::new("maintained").await?;
    let made_up = vec![ReviewLine { review_id: 9, stars: 5 }];
    Shop::repo(&t.db).insert(&Shop { id: 1, name: "corner".into(), top: made_up.clone() }).await?;
    assert!(raw(&t, "shops", 1).await.unwrap().get_array("top").unwrap().is_empty(), "no review, no summary");
    Shop::repo(&t.db).save(&Shop { id: 2, name: "kiosk".into(), top: made_up.clone() }).await?;
    assert!(raw(&t, "shops", 2).await.unwrap().get_array("top").unwrap().is_empty());
    Review::repo(&t.db).insert(&Review { id: ObjectId::new(), review_id: 1, shop: 1, stars: 4 }).await?;
    assert!(Shop::rels().top.check(&t.db, &1).await?);

    let err = Shop::repo(&t.db).update_by_id(&1, Shop::fields().top.set(made_up)).await.unwrap_err();
    assert!(matches!(err, Error::Invalid { .. }) && err.to_string().contains("top"), "{err}");
    assert!(Shop::rels().top.check(&t.db, &1).await?);

    Post::repo(&t.db).insert(&Post { id: 1 }).await?;
    CommentPage::rels().comments.append(&t.db, &1, &Comment { text: "hi".into() }).await?;
    let pages = CommentPage::repo(&t.db);
    let err = pages.update_many(Filter::all(), CommentPage::fields().count.set(7)).await.unwrap_err();
    assert!(matches!(err, Error::Invalid { .. }) && err.to_string().contains("count"), "{err}");
    let err = pages.update_many(Filter::all(), CommentPage::fields().comments.set(vec![])).await.unwrap_err();
    assert!(matches!(err, Error::Invalid { .. }) && err.to_string().contains("comments"), "{err}");
    let stored = t.db.collection::<BsonDoc>("comment_pages").find_one(doc! {"post": 1}).await.unwrap().unwrap();
    assert_eq!(stored.get_i32("count").unwrap(), 1);
    Ok(())
}

// ---- item 10: a pull by key from an array of copies -------------------------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "bolts")]
struct Bolt {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(docrel::Embedded, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct BoltRef {
    id: ObjectId,
    #[denormalize(from = Bolt::name)]
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "assemblies")]
struct Assembly {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = Bolt, max = 20)]
    bolts: Vec<BoltRef>,
}

/// `pull_where` by the element's id on an array of copies pulls the
/// element and its version record in one write. Before, the record's
/// removal rewrote the pull into `{id: {$in: [{$eq: X}]}}`, which the
/// server refuses.
#[tokio::test]
async fn a_pull_by_key_from_an_array_of_copies_is_one_write() -> docrel::Result<()> {
    let t = TestDb::new("pull_by_key").await?;
    let bolts = [Bolt { id: ObjectId::new(), name: "m4".into() }, Bolt { id: ObjectId::new(), name: "m5".into() }];
    Bolt::repo(&t.db).insert_many(&bolts).await?;
    let refs = bolts.iter().map(|b| BoltRef { id: b.id, name: String::new() }).collect();
    let assembly = Assembly { id: ObjectId::new(), bolts: refs };
    Assembly::repo(&t.db).insert(&assembly).await?;
    let gone = bolts[0].id;
    let pull = Assembly::fields().bolts.pull_where(|e| e.at::<ObjectId>("id").eq(gone));
    Assembly::repo(&t.db).update_by_id(&assembly.id, pull).await?;
    let stored = raw(&t, "assemblies", assembly.id).await.unwrap();
    let left: Vec<&BsonDoc> = stored.get_array("bolts").unwrap().iter().filter_map(Bson::as_document).collect();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].get_str("name").unwrap(), "m5");
    let records =
        stored.get_document("_docrel").unwrap().get_document("copies").unwrap().get_document("bolts").unwrap();
    assert!(!records.contains_key(gone.to_hex()), "the pulled element's record goes with it: {records}");
    Ok(())
}
