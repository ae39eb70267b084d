//! Issue 39, stage 1: a move between patterns declared with
//! `#[document(moved_from = Post::comments)]`, carried by the export, and
//! planned by `schema diff` on live data: the counts are sums of the BSON
//! sizes computed here from what was stored, and every refusal names what
//! stops the move.

use docrel::admin::{run, Console, Exit};
use docrel::bson::{doc, oid::ObjectId, Bson, Document as BsonDoc};
use docrel::schema::stored::{self, StoredMove, StoredType};
use docrel::testing::TestDb;
use futures::TryStreamExt;

mod moves;

/// This binary's types as the old version exported them.
fn old_program() -> Vec<StoredType> {
    stored::program().into_iter().filter(|t| t.module.ends_with("::v1")).collect()
}

/// The new version's export, read back as `schema diff` reads its file.
fn new_export() -> stored::Exported {
    let all = stored::read_export(&docrel::schema::export()).expect("our own export reads back");
    let types = all.types.into_iter().filter(|t| !t.module.ends_with("::v1")).collect();
    stored::Exported { types, moves: all.moves }
}

fn the_move() -> StoredMove {
    new_export().moves.into_iter().find(|m| m.to.collection == "mv_comments").expect("the declared move")
}

fn element(text: &str) -> BsonDoc {
    doc! {"_id": ObjectId::new(), "author": "ann", "text": text}
}

/// What the move makes of an element: the element with its parent's `_id`.
fn as_document(e: &BsonDoc, parent: &Bson) -> BsonDoc {
    let mut d = e.clone();
    d.insert("post", parent.clone());
    d
}

/// The documents the move made of `post`'s elements, and the ones it
/// should have made (each element with its parent's `_id`), both by `_id`.
async fn moved_and_wanted(t: &TestDb, post: &BsonDoc) -> (Vec<BsonDoc>, Vec<BsonDoc>) {
    let id = post.get("_id").unwrap().clone();
    let mut want: Vec<BsonDoc> =
        post.get_array("comments").unwrap().iter().map(|e| as_document(e.as_document().unwrap(), &id)).collect();
    want.sort_by_key(|d| d.get_object_id("_id").unwrap());
    let docs = t.db.collection::<BsonDoc>("mv_comments");
    let have: Vec<BsonDoc> =
        docs.find(doc! {"post": &id}).sort(doc! {"_id": 1}).await.expect("find").try_collect().await.expect("read");
    (have, want)
}

fn size(d: &BsonDoc) -> u64 {
    docrel::bson_compat::to_vec(d).expect("encodes").len() as u64
}

/// Stores `lens.len()` posts as the old version writes them, the i-th with
/// `lens[i]` comments; answers every stored post.
async fn old_posts(t: &TestDb, lens: &[usize]) -> Vec<BsonDoc> {
    let posts: Vec<BsonDoc> = lens
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let comments: Vec<BsonDoc> =
                (0..*n).map(|k| element(&format!("comment {k} of {i}{}", "!".repeat(k)))).collect();
            doc! {"_id": ObjectId::new(), "title": format!("post {i}"), "comments": comments}
        })
        .collect();
    t.db.collection::<BsonDoc>("mv_posts").insert_many(posts.clone()).await.expect("raw insert");
    posts
}

async fn publish_old(t: &TestDb) {
    stored::publish_types(&t.db, &old_program()).await.expect("the old version publishes");
}

#[test]
fn the_export_carries_the_move_in_format_2() {
    let json: serde_json::Value = serde_json::from_str(&docrel::schema::export()).expect("JSON");
    assert_eq!(json["format"], stored::MOVES_FORMAT);
    let mv = the_move();
    assert_eq!(
        (mv.from.collection.as_str(), mv.from.rust_type.as_str(), mv.from.rust_field.as_deref()),
        ("mv_posts", "Post", Some("comments"))
    );
    assert_eq!((mv.to.collection.as_str(), mv.to.rust_type.as_str()), ("mv_comments", "Comment"));
    assert_eq!((mv.parent_field.as_str(), mv.key.as_str()), ("post", "_id"));
    // Every move read back equals what the program declares, and the move
    // enters no stored type: the types' fingerprints are those of format 1.
    assert_eq!(stored::read_export(&docrel::schema::export()).unwrap().moves, stored::program_moves());
    assert!(!serde_json::to_string(&stored::program()).unwrap().contains("moved"));
}

#[test]
fn an_export_of_another_format_is_refused_with_the_formats_named() {
    let err = stored::read_export(r#"{"format": 3, "types": []}"#).unwrap_err();
    assert!(err.contains("format 3") && err.contains("reads 1 or 2"), "{err}");
    let err = stored::read_export(r#"{"format": 2, "types": [], "moves": [{"id": 1}]}"#).unwrap_err();
    assert!(err.contains("moves are not readable"), "{err}");
}

/// The counts are exact: parents, elements, the new documents' bytes, the
/// largest array and document, the arrays' bytes, all computed here from
/// what was stored.
#[tokio::test]
async fn the_plan_counts_what_moves_on_the_live_data() -> docrel::Result<()> {
    let t = TestDb::new("mv_counts").await?;
    publish_old(&t).await;
    let mut lens = vec![5; 20];
    lens[7] = 9;
    lens.extend([0, 0]);
    let posts = old_posts(&t, &lens).await;
    let preview = docrel::admin::change_preview::preview_export(&t.db, &new_export(), true).await?;
    let plan = preview.moves.iter().find(|m| m.to == "mv_comments").expect("the move is planned");
    assert_eq!(plan.from, "mv_posts.comments");
    assert!(plan.refusals.is_empty(), "{:?}", plan.refusals);
    let c = plan.counts.as_ref().expect("counted");
    let docs: Vec<BsonDoc> = posts
        .iter()
        .flat_map(|p| {
            let id = p.get("_id").unwrap().clone();
            p.get_array("comments").unwrap().iter().map(move |e| as_document(e.as_document().unwrap(), &id))
        })
        .collect();
    assert_eq!((c.parents, c.elements), (20, 104));
    assert_eq!(c.bytes, docs.iter().map(size).sum::<u64>());
    assert_eq!(c.largest_document, docs.iter().map(size).max().unwrap());
    assert_eq!(c.largest_array, 9);
    let arrays: u64 = posts
        .iter()
        .filter(|p| !p.get_array("comments").unwrap().is_empty())
        .map(|p| size(&doc! {"a": p.get_array("comments").unwrap().clone()}))
        .sum();
    assert_eq!(c.array_bytes, arrays);
    assert_eq!((c.without_key, c.duplicate_keys, c.key_types.clone()), (0, 0, vec!["objectId".to_owned()]));
    // The probe copied a real page (50 parents hold every element here) and
    // left nothing behind.
    let e = plan.estimate.as_ref().expect("timed");
    assert_eq!(e.probed_elements, 104);
    assert!(e.elements_per_second > 0.0 && e.seconds > 0.0);
    let names = t.db.list_collection_names().await.expect("listCollections");
    assert!(!names.iter().any(|n| n.starts_with("_docrel_probe")), "{names:?}");
    assert!(!names.contains(&"mv_comments".to_owned()), "the plan wrote no new document");
    Ok(())
}

/// Both shapes in the reference texts' words, and what goes with them.
#[tokio::test]
async fn the_plan_names_both_shapes_the_indexes_the_bound_and_the_subset() -> docrel::Result<()> {
    let t = TestDb::new("mv_shapes").await?;
    publish_old(&t).await;
    old_posts(&t, &[2, 3]).await;
    let preview = docrel::admin::change_preview::preview_export(&t.db, &new_export(), false).await?;
    let plan = &preview.moves[0];
    assert_eq!(plan.old_shape, "one-to-few (embed), max 50");
    assert_eq!(plan.new_shape[0], "`mv_comments` (Comment): one-to-squillions (parent reference) to Post by `post`");
    assert_eq!(plan.new_shape[1], "`mv_posts.recent`: subset, the first 3 of `mv_comments` by `-_id`");
    assert!(plan.index_builds.iter().any(|i| i.starts_with("mv_comments {post: 1")), "{:?}", plan.index_builds);
    assert!(plan.bounds[0].contains("keeps its bound of 50") && plan.bounds[0].contains("element 51"));
    assert!(plan.derived.iter().any(|d| d.contains("subset `mv_posts.recent` is built from `mv_comments`")));
    assert!(plan.readers[0].contains("with every element the new version writes in it"));
    assert_eq!(plan.estimate, None, "no probe was asked for");
    let text = preview.to_text();
    assert!(text.contains("mv_posts.comments → mv_comments") && text.contains("to move: 5 element(s) of 2 parent(s)"));
    Ok(())
}

/// Elements without the key, or one key twice, cannot each move exactly
/// once: the plan refuses and says how many.
#[tokio::test]
async fn elements_without_a_key_or_with_a_key_twice_refuse_the_move() -> docrel::Result<()> {
    let t = TestDb::new("mv_keys").await?;
    publish_old(&t).await;
    let twice = element("twice");
    let posts = vec![
        doc! {"_id": ObjectId::new(), "title": "a", "comments": [twice.clone(), {"author": "bo", "text": "no key"}]},
        doc! {"_id": ObjectId::new(), "title": "b", "comments": [twice.clone(), {"_id": 7, "author": "cy", "text": "int"}]},
    ];
    t.db.collection::<BsonDoc>("mv_posts").insert_many(posts).await.expect("raw insert");
    let plan = docrel::admin::moves::plan(&t.db, &new_export().types, &[the_move()], false).await?.remove(0);
    assert_eq!(plan.counts.as_ref().unwrap().without_key, 1);
    assert!(plan
        .refusals
        .iter()
        .any(|r| r.starts_with("1 element(s) of `mv_posts.comments` have no `_id` (absent or null)")));
    assert!(plan.refusals.iter().any(|r| r.contains("`int`") && r.contains("`Comment`'s `_id` is `ObjectId`")));
    // With every key present, the duplicate is counted.
    t.db.collection::<BsonDoc>("mv_posts")
        .update_many(doc! {}, doc! {"$pull": {"comments": {"_id": {"$exists": false}}}})
        .await
        .expect("raw update");
    let plan = docrel::admin::moves::plan(&t.db, &new_export().types, &[the_move()], false).await?.remove(0);
    assert_eq!(plan.counts.as_ref().unwrap().duplicate_keys, 1, "{:?}", plan.counts);
    assert!(plan.refusals.iter().any(|r| r.starts_with("1 `_id` value(s) are held by more than one element")));
    Ok(())
}

/// Without the old version's published rule, the old field is unknown: the
/// plan says so and counts nothing.
#[tokio::test]
async fn a_move_from_an_unpublished_array_is_refused() -> docrel::Result<()> {
    let t = TestDb::new("mv_unknown").await?;
    old_posts(&t, &[1]).await;
    let plan = docrel::admin::moves::plan(&t.db, &new_export().types, &[the_move()], false).await?.remove(0);
    assert_eq!(plan.counts, None);
    assert!(plan.refusals[0].starts_with("the stored schema of `mv_posts` has no `comments`"), "{:?}", plan.refusals);
    Ok(())
}

/// A new version that still declares the old array is refused.
#[tokio::test]
async fn a_new_version_still_declaring_the_array_is_refused() -> docrel::Result<()> {
    let t = TestDb::new("mv_still").await?;
    publish_old(&t).await;
    let mut types = new_export().types;
    types.extend(old_program());
    let plan = docrel::admin::moves::plan(&t.db, &types, &[the_move()], false).await?.remove(0);
    assert!(plan.refusals.iter().any(|r| r.contains("still declares `comments`")), "{:?}", plan.refusals);
    Ok(())
}

async fn admin(t: &TestDb, args: &[&str]) -> (Exit, String, String) {
    let mut console = Console::captured();
    let mut full = vec!["admin", "--db", t.db.name()];
    full.extend_from_slice(args);
    let exit = run(full, &mut console, std::future::pending()).await;
    (exit, console.output(), console.errors())
}

/// `schema diff --json` carries the plan; `schema apply` runs the move to
/// `switched` and backfills the new subset; run again, it changes nothing.
#[tokio::test]
async fn the_command_line_plans_and_applies_the_move() -> docrel::Result<()> {
    let t = TestDb::new("mv_cli").await?;
    publish_old(&t).await;
    let posts = old_posts(&t, &[3, 4]).await;
    let file = std::env::temp_dir().join(format!("docrel_mv_{}.json", std::process::id()));
    let export = serde_json::json!({"format": 2, "types": new_export().types, "moves": new_export().moves});
    std::fs::write(&file, export.to_string()).expect("write the export");
    let path = file.to_str().unwrap();
    let (exit, out, err) = admin(&t, &["schema", "diff", "--file", path, "--json", "--no-probe"]).await;
    assert_eq!(exit, Exit::Found, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(json["moves"][0]["from"], "mv_posts.comments");
    assert_eq!(json["moves"][0]["counts"]["elements"], 7);

    let (exit, _, err) = admin(&t, &["schema", "apply", "--file", path, "--wait", "0"]).await;
    assert_eq!(exit, Exit::Ok, "{err}");
    assert!(err.contains("mv_posts.comments → mv_comments: switched"), "{err}");
    // The copy's progress, counted (a bar on a terminal).
    assert!(err.contains("mv_posts.comments → mv_comments: copied 7 of 7 element(s), from "), "{err}");
    let docs = t.db.collection::<BsonDoc>("mv_comments");
    for p in &posts {
        let id = p.get("_id").unwrap().clone();
        let (have, want) = moved_and_wanted(&t, p).await;
        assert_eq!(have, want, "every element is a document, once");
        // The new version's subset, the newest three, is backfilled.
        let stored = t.db.collection::<BsonDoc>("mv_posts").find_one(doc! {"_id": &id}).await.expect("read").unwrap();
        let recent: Vec<Bson> = stored
            .get_array("recent")
            .unwrap()
            .iter()
            .map(|s| s.as_document().unwrap().get("_id").unwrap().clone())
            .collect();
        let newest: Vec<Bson> = want.iter().rev().take(3).map(|d| d.get("_id").unwrap().clone()).collect();
        assert_eq!(recent, newest);
        assert_eq!(stored.get_array("comments").unwrap(), p.get_array("comments").unwrap(), "old readers keep theirs");
    }
    let status = stored::load_moves(&t.db).await?;
    assert_eq!(status[0].state, stored::MoveState::Switched);
    let (exit, _, err) = admin(&t, &["schema", "apply", "--file", path, "--wait", "0"]).await;
    assert_eq!(exit, Exit::Ok, "{err}");
    assert_eq!(docs.count_documents(doc! {}).await.expect("count"), 7, "run again, nothing changes");

    // This process links the old `Post` too: while its lease lives, the
    // old shape stays, and the refusal names it.
    let retire = ["schema", "retire", "--file", path, "--drop-old", "--lease", "0.001", "--json"];
    let (exit, _, err) = admin(&t, &retire).await;
    assert_ne!(exit, Exit::Ok);
    assert!(err.contains(&format!("pid {}", std::process::id())) && err.contains("nothing was written"), "{err}");
    assert!(
        t.db.collection::<BsonDoc>("mv_posts").count_documents(doc! {"comments": {"$exists": true}}).await.unwrap() > 0
    );
    // `moves_online` retires it from a process of the new version only.
    let _ = std::fs::remove_file(&file);
    Ok(())
}

/// A move its plan refuses is not started: nothing is written.
#[tokio::test]
async fn apply_refuses_a_move_its_plan_refuses() -> docrel::Result<()> {
    let t = TestDb::new("mv_refused").await?;
    publish_old(&t).await;
    let posts = vec![doc! {"_id": ObjectId::new(), "title": "a", "comments": [{"author": "bo", "text": "no key"}]}];
    t.db.collection::<BsonDoc>("mv_posts").insert_many(posts).await.expect("raw insert");
    let e = new_export();
    let refused =
        docrel::admin::moves::run(&t.db, &e.types, &e.moves, std::time::Duration::ZERO, || false, |_| {}).await;
    let text = refused.unwrap_err().to_string();
    assert!(text.contains("is refused, nothing was written") && text.contains("have no `_id`"), "{text}");
    assert!(stored::load_moves(&t.db).await?.is_empty());
    assert_eq!(t.db.collection::<BsonDoc>("mv_comments").count_documents(doc! {}).await.expect("count"), 0);

    // Keyed now, but one key is held by two elements (in two posts) and
    // one is a string where the new `_id` is an ObjectId: both refused,
    // as the diff's full plan refuses them.
    let (twice, raw) = (ObjectId::new(), t.db.collection::<BsonDoc>("mv_posts"));
    raw.delete_many(doc! {}).await.expect("raw delete");
    let posts = vec![
        doc! {"_id": ObjectId::new(), "title": "a", "comments": [{"_id": twice, "author": "bo", "text": "one"}]},
        doc! {"_id": ObjectId::new(), "title": "b", "comments": [{"_id": twice, "author": "al", "text": "two"}, {"_id": "c3", "author": "al", "text": "three"}]},
    ];
    raw.insert_many(posts).await.expect("raw insert");
    let refused =
        docrel::admin::moves::run(&t.db, &e.types, &e.moves, std::time::Duration::ZERO, || false, |_| {}).await;
    let text = refused.unwrap_err().to_string();
    assert!(text.contains("1 `_id` value(s) are held by more than one element"), "{text}");
    assert!(text.contains("of type `string`"), "{text}");
    let plan = docrel::admin::change_preview::preview_export(&t.db, &e, false).await?;
    assert_eq!(plan.moves[0].refusals.len(), 2, "{:?}", plan.moves[0].refusals);
    assert!(stored::load_moves(&t.db).await?.is_empty());
    assert_eq!(t.db.collection::<BsonDoc>("mv_comments").count_documents(doc! {}).await.expect("count"), 0);
    Ok(())
}

/// An array the new version drops while a collection appears is never
/// taken for a move: without `moved_from` the diff only says what it could
/// mean, and with it the note is gone.
#[tokio::test]
async fn a_dropped_array_without_moved_from_is_a_note_not_a_move() -> docrel::Result<()> {
    let t = TestDb::new("mv_undeclared").await?;
    publish_old(&t).await;
    let undeclared = stored::Exported { types: new_export().types, moves: Vec::new() };
    let preview = docrel::admin::change_preview::preview_export(&t.db, &undeclared, false).await?;
    assert!(preview.moves.is_empty());
    assert_eq!(preview.notes.len(), 1, "{:?}", preview.notes);
    assert!(
        preview.notes[0].starts_with("`mv_posts.comments` is no longer declared and `mv_comments` is new: not a move")
    );
    assert!(preview.notes[0].contains("`#[document(moved_from = Post::comments)]`"), "{}", preview.notes[0]);
    let declared = docrel::admin::change_preview::preview_export(&t.db, &new_export(), false).await?;
    assert!(declared.notes.is_empty(), "{:?}", declared.notes);
    Ok(())
}

/// `schema apply --offline` is for a maintenance window: refused, with
/// nothing written, while another program holds a live lease; with none,
/// the move runs to `switched` and builds the parent reference's index
/// after the copy (said after the copy's progress), not before it.
#[tokio::test]
async fn an_offline_move_is_refused_while_another_program_holds_a_lease_and_indexes_after_its_copy(
) -> docrel::Result<()> {
    let t = TestDb::new("mv_offline").await?;
    publish_old(&t).await;
    let posts = old_posts(&t, &[3, 0, 5]).await;
    let file = std::env::temp_dir().join(format!("docrel_mv_offline_{}.json", std::process::id()));
    let export = serde_json::json!({"format": 2, "types": new_export().types, "moves": new_export().moves});
    std::fs::write(&file, export.to_string()).expect("write the export");
    let path = file.to_str().unwrap();
    let apply = ["schema", "apply", "--file", path, "--wait", "0", "--offline"];

    // Another program renewed its lease a moment ago.
    let leases = t.db.collection::<BsonDoc>(stored::LEASES_COLLECTION);
    let other = doc! {"_id": "another", "host": "h2", "pid": 4242_i64, "program": "shop-api", "lease_ms": 600_000_i64,
    "renewed_at": docrel::bson::DateTime::now(), "seen": {}, "old_shape": ["mv_posts.comments"], "new_shape": []};
    leases.insert_one(other).await.expect("raw insert");
    let (exit, _, err) = admin(&t, &apply).await;
    assert_ne!(exit, Exit::Ok, "{err}");
    assert!(err.contains("an offline move runs only while no other program holds the schema"), "{err}");
    assert!(err.contains("shop-api (pid 4242 on h2)") && err.contains("nothing was written"), "{err}");
    assert!(stored::load_moves(&t.db).await?.is_empty());
    let names = t.db.list_collection_names().await.expect("list");
    assert!(!names.contains(&"mv_comments".to_owned()), "no collection, no index: {names:?}");

    // It stopped: the move runs, and the index comes after the copy.
    leases.delete_one(doc! {"_id": "another"}).await.expect("raw delete");
    let (exit, _, err) = admin(&t, &apply).await;
    assert_eq!(exit, Exit::Ok, "{err}");
    let copied = err.find("copied 8 of 8 element(s)").unwrap_or_else(|| panic!("the copy: {err}"));
    let indexed = err.find("index build: mv_comments {post: 1").unwrap_or_else(|| panic!("the index: {err}"));
    assert!(copied < indexed, "the index is built after the copy: {err}");
    assert!(err.contains("mv_posts.comments → mv_comments: switched"), "{err}");
    let indexes = t.db.collection::<BsonDoc>("mv_comments").list_index_names().await.expect("list");
    assert!(indexes.iter().any(|i| i.starts_with("post_1")), "{indexes:?}");
    for p in &posts {
        let (have, want) = moved_and_wanted(&t, p).await;
        assert_eq!(have, want, "every element is a document, once");
    }
    let _ = std::fs::remove_file(&file);
    Ok(())
}
