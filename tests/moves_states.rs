//! Issue 39, stage 2: the states of a move published with the schema, and
//! the processes holding the lease while one runs. This binary plays the
//! new version of the blog (`link_only`); a second OS process, started from
//! it, plays the old one, and `schema status` shows both with what each
//! has seen, on the server's clock.

use docrel::admin::moves::{status, Wait};
use docrel::bson::{doc, oid::ObjectId, Document as BsonDoc};
use docrel::schema::stored::{self, ActiveMove, MoveState, LEASES_COLLECTION};
use docrel::testing::TestDb;
use std::time::Duration;

mod moves;

const DB_VARIABLE: &str = "DOCREL_MOVES_STATES_DB";
const LEASE: Duration = Duration::from_secs(60);

/// This process is the new version, whichever test runs first.
fn new_version() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| docrel::testing::link_only(&[moves::V2]));
}

fn announced(state: MoveState) -> ActiveMove {
    let spec = stored::program_moves().into_iter().find(|m| m.to.collection == "mv_comments").expect("v2 declares it");
    ActiveMove { spec, ..moves::active(state) }
}

/// The old version, in its own process: one write of a post, under a lease
/// of a minute, then it exits (its row stays live for that minute).
#[tokio::test]
#[ignore = "run by `an_old_and_a_new_process_appear_in_the_status_with_what_each_saw`"]
async fn old_writer() -> docrel::Result<()> {
    let Ok(name) = std::env::var(DB_VARIABLE) else { return Ok(()) };
    docrel::testing::link_only(&[moves::V1]);
    docrel::schema::set_lease(LEASE);
    let client = docrel::connect_from_env().await?;
    let post = moves::v1::Post { id: ObjectId::new(), title: "old".into(), comments: Vec::new() };
    moves::v1::Post::repo(&client.database(&name)).insert(&post).await?;
    println!("@pid {}", std::process::id());
    Ok(())
}

/// Runs the old version's write in a child process; answers its pid.
fn run_old_writer(db: &str) -> i64 {
    let exe = std::env::current_exe().expect("this test binary");
    let out = std::process::Command::new(exe)
        .args(["old_writer", "--exact", "--ignored", "--nocapture"])
        .env(DB_VARIABLE, db)
        .output()
        .expect("the old version runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the old version failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout.lines().find_map(|l| l.strip_prefix("@pid ")).and_then(|p| p.parse().ok()).expect("it said its pid")
}

#[tokio::test]
async fn an_old_and_a_new_process_appear_in_the_status_with_what_each_saw() -> docrel::Result<()> {
    new_version();
    let t = TestDb::new("mv_states").await?;
    docrel::schema::set_lease_for(&t.db, LEASE);
    let mv = announced(MoveState::Announced);
    stored::publish_moves(&t.db, std::slice::from_ref(&mv)).await?;
    let child = run_old_writer(t.db.name());
    docrel::schema::obey(&t.db).await?;
    assert_eq!(stored::active_moves(&t.db), vec![mv.clone()]);

    let s = status(&t.db, LEASE).await?;
    assert_eq!(s.moves.len(), 1);
    assert_eq!(
        (s.moves[0].state, s.moves[0].label.as_str()),
        (MoveState::Announced, "mv_posts.comments → mv_comments")
    );
    let old = s.holders.iter().find(|h| h.pid == child).expect("the old version holds a lease");
    let new = s.holders.iter().find(|h| h.pid == i64::from(std::process::id())).expect("this process does");
    assert_eq!((old.old_shape.clone(), old.new_shape.clone()), (vec!["mv_posts.comments".to_owned()], vec![]));
    assert_eq!((new.old_shape.clone(), new.new_shape.clone()), (vec![], vec!["mv_comments".to_owned()]));
    for h in [old, new] {
        assert!(h.live && h.lease_ms == 60_000, "{h:?}");
        assert_eq!(h.seen.get(&mv.spec.id), Some(&MoveState::Announced));
    }
    // The move entered its state just now: the next waits for two leases.
    assert!(matches!(s.moves[0].next, Some((MoveState::Maintained, Wait::Time(_)))), "{:?}", s.moves[0].next);

    // Once the move is maintained, the old process (which has not renewed
    // since) holds the next state back; this one, having obeyed, does not.
    stored::publish_moves(&t.db, &[announced(MoveState::Maintained)]).await?;
    docrel::schema::obey(&t.db).await?;
    let s = status(&t.db, LEASE).await?;
    match &s.moves[0].next {
        Some((MoveState::Moved, Wait::Holders(behind))) => {
            assert_eq!(behind.len(), 1, "{behind:?}");
            assert!(
                behind[0].contains(&format!("pid {child} ")) && behind[0].ends_with("seen announced)"),
                "{behind:?}"
            );
        }
        other => panic!("the old process should hold `moved` back: {other:?}"),
    }
    let text = s.to_text();
    assert!(text.contains("mv_posts.comments → mv_comments: maintained for"), "{text}");
    assert!(text.contains("links old `mv_posts.comments`") && text.contains("links new `mv_comments`"), "{text}");

    // The move done, the document goes and nothing more is registered.
    stored::publish_moves(&t.db, &[]).await?;
    assert!(stored::load_moves(&t.db).await?.is_empty());
    Ok(())
}

/// Without a move, obeying the schema writes no lease row: a database
/// with no move costs what it cost before.
#[tokio::test]
async fn without_a_move_no_lease_is_registered() -> docrel::Result<()> {
    new_version();
    let t = TestDb::new("mv_no_move").await?;
    docrel::schema::obey(&t.db).await?;
    let rows = t.db.collection::<BsonDoc>(LEASES_COLLECTION).count_documents(doc! {}).await.expect("count");
    assert_eq!(rows, 0);
    assert!(stored::active_moves(&t.db).is_empty());
    Ok(())
}

/// A moves document of an unknown format is refused, and with it every
/// write: the process does not guess which shapes to keep.
#[tokio::test]
async fn a_moves_document_of_another_format_refuses_writes() -> docrel::Result<()> {
    new_version();
    let t = TestDb::new("mv_format").await?;
    t.db.collection::<BsonDoc>(stored::SCHEMA_COLLECTION)
        .insert_one(doc! {"_id": stored::MOVES_ID, "format": 3, "moves": []})
        .await
        .expect("raw insert");
    // The test's database holds its schema for long: a short lease makes
    // the write read it again, as a fleet's would within its lease.
    docrel::schema::set_lease_for(&t.db, Duration::from_millis(1));
    tokio::time::sleep(Duration::from_millis(5)).await;
    let err = docrel::schema::obey(&t.db).await.unwrap_err();
    assert!(err.to_string().contains("format 3 where this docrel reads 2; upgrade docrel"), "{err}");
    let post = moves::v2::Post { id: ObjectId::new(), title: "t".into(), recent: Vec::new() };
    let refused = moves::v2::Post::repo(&t.db).insert(&post).await.unwrap_err();
    assert!(matches!(refused, docrel::Error::SchemaLease { .. }), "{refused}");
    let stored = t.db.collection::<BsonDoc>("mv_posts").count_documents(doc! {}).await.expect("count");
    assert_eq!(stored, 0, "nothing was written");
    Ok(())
}

#[tokio::test]
async fn the_old_shape_is_retired_only_once_switched_and_no_live_process_links_it() -> docrel::Result<()> {
    new_version();
    let t = TestDb::new("mv_retire").await?;
    let db = &t.db;
    let retire = |spec: stored::StoredMove| async move {
        docrel::admin::moves::retire(db, &[spec], false, LEASE, || false, |_| {}).await
    };
    let mv = announced(MoveState::Moved);
    stored::publish_moves(&t.db, std::slice::from_ref(&mv)).await?;
    let err = retire(mv.spec.clone()).await.unwrap_err().to_string();
    assert!(err.contains("moved") && err.contains("schema apply") && err.contains("nothing was written"), "{err}");

    let mv = announced(MoveState::Switched);
    stored::publish_moves(&t.db, std::slice::from_ref(&mv)).await?;
    let pid = run_old_writer(t.db.name());
    let err = retire(mv.spec.clone()).await.unwrap_err().to_string();
    assert!(err.contains(&format!("pid {pid}")) && err.contains("mv_posts.comments"), "names who links it: {err}");
    assert_eq!(stored::load_moves(&t.db).await?[0].state, MoveState::Switched, "nothing was written");
    Ok(())
}
