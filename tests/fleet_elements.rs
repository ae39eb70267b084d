//! References inside embedded elements travel with the data (issue 30,
//! item 8, with issue 28's stored schema): this program links only `User`;
//! another program declared `posts.comments[].author` with a copy of the
//! author's name through it and `on_delete = pull`, and published it (its
//! stored form is written here as that program's `docrel::schema::export`
//! gives it). Once this program obeys the stored schema, its renames and
//! deletes of users keep the other program's posts exactly right, read
//! back with the raw driver.

use docrel::bson::{doc, oid::ObjectId, Document as BsonDoc};
use docrel::check;
use docrel::schema::stored::{self, StoredType};
use docrel::testing::TestDb;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "fe_users")]
struct User {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

/// The other program's posts, as its export stores them.
fn posts_schema() -> StoredType {
    serde_json::from_value(serde_json::json!({
        "collection": "fe_posts",
        "rust_name": "Post",
        "module": "blog",
        "fields": [
            {"rust": "id", "bson": "_id", "rust_type": "ObjectId", "kind": "plain", "target": null},
            {"rust": "comments", "bson": "comments", "rust_type": "Vec<Comment>", "kind": "plain", "target": null}
        ],
        "relations": [{
            "field": "comments",
            "rust_field": "comments",
            "kind": {"pattern": "embed", "many": true, "max": 100},
            "target": null,
            "target_type": null,
            "inverse": null,
            "on_delete": "nothing",
            "order": [],
            "copies": [],
            "elements": [{
                "field": "author",
                "rust_field": "author",
                "target": "fe_users",
                "target_type": "User",
                "optional": false,
                "on_delete": "pull",
                "copies": [{"field": "author_name", "source": "fe_users", "source_type": "User", "source_field": "name"}]
            }],
            "subset": null,
            "bucket": null,
            "warn_above": 200
        }],
        "indexes": [],
        "copies": [],
        "shard_key": []
    }))
    .expect("a stored type")
}

fn authors(post: &BsonDoc) -> Vec<(ObjectId, String)> {
    let comments = post.get_array("comments").expect("comments");
    comments
        .iter()
        .map(|c| c.as_document().expect("an element"))
        .map(|c| (c.get_object_id("author").unwrap(), c.get_str("author_name").unwrap().to_owned()))
        .collect()
}

#[tokio::test]
async fn a_program_linking_only_users_keeps_copies_inside_another_programs_elements() -> docrel::Result<()> {
    let t = TestDb::new("fleet_elements").await?;
    stored::publish_types(&t.db, &[posts_schema()]).await?;
    docrel::schema::publish(&t.db).await?;
    let obeyed = docrel::schema::obey(&t.db).await?;
    assert_eq!(obeyed.stored_only, ["fe_posts"]);

    let (ann, bob) = (ObjectId::new(), ObjectId::new());
    User::repo(&t.db)
        .insert_many(&[User { id: ann, name: "ann".into() }, User { id: bob, name: "bob".into() }])
        .await?;
    // The other program's post, as it stored it.
    let post = ObjectId::new();
    let comment = |text: &str, author: ObjectId, name: &str| doc! {"text": text, "author": author, "author_name": name};
    let posts = t.db.collection::<BsonDoc>("fe_posts");
    let comments = vec![comment("hi", ann, "ann"), comment("yo", bob, "bob"), comment("again", ann, "ann")];
    posts.insert_one(doc! {"_id": post, "comments": comments}).await?;

    // A rename here rewrites the copies in every element of the other program's post.
    User::repo(&t.db).update_by_id(&ann, User::fields().name.set("Ann".into())).await?;
    let stored = posts.find_one(doc! {"_id": post}).await?.expect("the post");
    assert_eq!(authors(&stored), [(ann, "Ann".into()), (bob, "bob".into()), (ann, "Ann".into())]);
    assert_eq!(check::copies::<User>().verify(&t.db).run().await?.stale, 0);

    // A delete here pulls the other program's elements that refer to it.
    assert!(User::repo(&t.db).delete_by_id(&ann).await?);
    let stored = posts.find_one(doc! {"_id": post}).await?.expect("the post");
    assert_eq!(authors(&stored), [(bob, "bob".into())]);
    Ok(())
}

/// Issue 38, review 11: the backfill of an online change named the copies
/// at a document's top level and in reference arrays, but not those inside
/// embedded elements, nor the other side of a new two-way reference. Both
/// are now owed: the elements' copies by a repair of their source, the
/// inverse by a repair of its collection.
#[test]
fn a_change_owes_the_copies_inside_elements_and_the_sides_of_a_new_two_way_reference() {
    let diff = stored::diff(&[], &[posts_schema()]);
    assert_eq!(diff.repairs, ["fe_users"], "{diff:?}");
    assert!(diff.backfills.iter().any(|b| b.contains("fe_posts.comments[].author_name")), "{:?}", diff.backfills);

    let two_way: StoredType = serde_json::from_value(serde_json::json!({
        "collection": "fe_owners", "rust_name": "Owner", "module": "m",
        "fields": [{"rust": "id", "bson": "_id", "rust_type": "i32", "kind": "plain", "target": null}],
        "relations": [{"field": "pets", "rust_field": "pets", "kind": {"pattern": "ref_many", "max": 10, "key": null},
            "target": "fe_pets", "target_type": "Pet", "inverse": "owner", "on_delete": "nothing", "order": [],
            "copies": [], "subset": null, "bucket": null, "warn_above": null}],
        "indexes": [], "copies": [], "shard_key": []
    }))
    .expect("a stored type");
    let diff = stored::diff(&[], &[two_way]);
    assert_eq!(diff.repairs, ["fe_owners"], "{diff:?}");
    assert!(diff.backfills.iter().any(|b| b.contains("fe_pets.owner")), "{:?}", diff.backfills);
}
