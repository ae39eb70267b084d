//! The randomized history checker of issue 12 (see `tests/history/mod.rs`
//! for the design and the `DOCREL_HISTORY_*` knobs), and the tests that keep
//! the checker honest: a checker that cannot fail is a defect.
//!
//! Run: `cargo test -p docrel --test history -- --nocapture` (the CI size,
//! 4 seeds x 250 operations); a big run: `cargo run --example history --
//! --seeds 20 --ops 2000 --faults`.

#[path = "history/mod.rs"]
mod history;

use docrel::bson::{doc, oid::ObjectId, Bson, DateTime, Document};
use docrel::testing::TestDb;
use history::check::{self, Facts, Inv, Snapshot};
use history::coverage;
use history::plan::{self, OpKind, PlanConfig};
use std::collections::BTreeSet;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn randomized_histories_keep_derived_data_true() {
    let settings = history::Settings::from_env().expect("the DOCREL_HISTORY_* variables");
    let reports = history::run_all(&settings).await.expect("the histories ran");
    let failures = history::failures(&reports);
    assert!(
        failures.is_empty(),
        "{} of {} histories broke the contract of issue 12 (details above):\n{}",
        failures.len(),
        reports.len(),
        failures.join("\n")
    );
}

/// Does nothing in a test run; in the second process of a history (this
/// binary started again by `history::process`), runs its job.
#[test]
fn history_child_process() {
    if !history::process::is_child() {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    if let Err(e) = rt.block_on(history::process::child_main()) {
        panic!("the second process of a history failed: {e}");
    }
}

#[test]
fn a_seed_always_makes_the_same_history_and_every_kind_is_made() {
    let cfg = |seed| PlanConfig {
        seed,
        ops: 3000,
        workers: 3,
        faults: Some(true),
        deferred: None,
        skip: vec![],
        serial_transactions: false,
        processes: 2,
        skew_ms: -2000,
        include_gaps: true,
        strict_records: false,
        rule_change: true,
    };
    let a = plan::generate(&cfg(7));
    let b = plan::generate(&cfg(7));
    assert_eq!(a.workers, b.workers);
    assert_eq!((a.mode, a.faults), (b.mode, b.faults));
    assert_ne!(plan::generate(&cfg(8)).workers, a.workers);
    let made: BTreeSet<OpKind> = a.workers.iter().flatten().map(|op| op.kind()).collect();
    let all: BTreeSet<OpKind> = OpKind::ALL.iter().copied().collect();
    assert_eq!(made, all, "a long history makes every kind of operation");
    // Skipped kinds, and fault injection when faults are off, are never made.
    let skipped =
        plan::generate(&PlanConfig { faults: Some(false), skip: vec![OpKind::MovePart, OpKind::Reassign], ..cfg(7) });
    assert!(skipped
        .workers
        .iter()
        .flatten()
        .all(|op| !matches!(op.kind(), OpKind::MovePart | OpKind::Reassign) && !op.is_fault()));
    assert_eq!(history::parse_seeds("3"), Ok(vec![1, 2, 3]));
    assert_eq!(history::parse_seeds("42,"), Ok(vec![42]));
    assert_eq!(history::parse_seeds("7, 9"), Ok(vec![7, 9]));
    assert_eq!(history::parse_seeds("10..12"), Ok(vec![10, 11, 12]));
    assert_eq!(history::parse_skip("movepart,Reassign"), Ok(vec![OpKind::MovePart, OpKind::Reassign]));
    assert!(history::parse_skip("Teleport").is_err());
    let shown = history::run::short_ids(
        r#"task ObjectId("b20000000000000000000005") of ObjectId("b1000000000000000000000c") in ObjectId("ffffffffffffffffffffffff")"#,
    );
    assert_eq!(shown, r#"task T5 of H12 in ObjectId("ffffffffffffffffffffffff")"#);
}

fn oid(i: u8) -> ObjectId {
    ObjectId::from_bytes([0xdd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, i])
}

fn at(minutes: i64) -> DateTime {
    DateTime::from_millis(plan::BASE_DATE_MS + minutes * 60_000)
}

fn review(rid: i32, minutes: i64) -> Document {
    doc! {"_id": oid(100 + rid as u8), "rid": rid, "product_id": 1, "author": format!("a{rid}"),
    "text": format!("text {rid}"), "published_date": at(minutes), "item_name": "widget",
    "_docrel": {"copies": {"product_id": {"1": 40_i64}}}}
}

/// A review as `items.newest` keeps it.
fn line(r: &Document) -> Bson {
    Bson::Document(
        doc! {"_id": r.get("_id").cloned().unwrap_or(Bson::Null), "published_date": r.get("published_date").cloned().unwrap_or(Bson::Null)},
    )
}

fn summary(r: &Document) -> Bson {
    let mut s = Document::new();
    for f in ["rid", "author", "text", "published_date"] {
        s.insert(f, r.get(f).cloned().unwrap_or(Bson::Null));
    }
    Bson::Document(s)
}

/// A small state that keeps every invariant, written with the raw driver
/// (no docrel code involved, so this test does not depend on docrel's bugs).
async fn clean_state(t: &TestDb) -> Facts {
    let db = &t.db;
    for c in ["parts", "products", "people", "tasks", "items", "reviews", "comment_pages"] {
        db.collection::<Document>(c).drop().await.unwrap();
    }
    let (p0, r0, h0, h1, t0) = (oid(1), oid(2), oid(3), oid(4), oid(5));
    db.collection::<Document>("parts")
        .insert_one(doc! {"_id": p0, "name": "bolt", "product": r0, "productName": "shifter", "qty": 1, "label": "top",
        "_docrel": {"v": 10_i64, "copies": {"product": {r0.to_hex(): 20_i64}}}})
        .await
        .unwrap();
    db.collection::<Document>("products")
        .insert_one(doc! {"_id": r0, "name": "shifter",
        "parts": [{"id": p0, "pname": "bolt", "qty": 1, "label": "top"}, {"id": oid(99), "pname": "gone"}],
        "_docrel": {"v": 20_i64, "copies": {"parts": {p0.to_hex(): 10_i64}}}})
        .await
        .unwrap();
    // Two people called kate, so that moving a task between them leaves its copy right.
    db.collection::<Document>("people")
        .insert_many([
            doc! {"_id": h0, "name": "kate", "tasks": [t0], "_docrel": {"v": 30_i64}},
            doc! {"_id": h1, "name": "kate", "tasks": [], "_docrel": {"v": 31_i64}},
        ])
        .await
        .unwrap();
    // A note by the other kate, her name copied beside the reference `who`.
    db.collection::<Document>("tasks")
        .insert_one(doc! {"_id": t0, "description": "chalk", "owner": h0, "owner_name": "kate",
        "notes": [{"text": "n1", "who": h1, "by_name": "kate"}],
        "_docrel": {"copies": {"owner": {h0.to_hex(): 30_i64, h1.to_hex(): 31_i64}, "notes": {h1.to_hex(): 31_i64}}}})
        .await
        .unwrap();
    // Five reviews of item 1, the 4 newest kept newest first (and the 3
    // newest in `newest`); one of item 2 (absent).
    let reviews = [review(1, 10), review(2, 50), review(3, 30), review(4, 40), review(5, 20)];
    db.collection::<Document>("reviews").insert_many(reviews.clone()).await.unwrap();
    let kept: Vec<Bson> = [1, 3, 2, 4].iter().map(|&k| summary(&reviews[k])).collect();
    let newest: Vec<Bson> = [1, 3, 2].iter().map(|&k| line(&reviews[k])).collect();
    db.collection::<Document>("items")
        .insert_one(doc! {"_id": 1, "name": "widget", "reviews": kept, "newest": newest, "_docrel": {"v": 40_i64}})
        .await
        .unwrap();
    let comment = |k: i32| doc! {"name": "reader", "text": format!("c{k}")};
    db.collection::<Document>("comment_pages")
        .insert_many([
            doc! {"_id": oid(50), "blog_entry_id": 1, "page": 1, "count": 3, "comments": [comment(1), comment(2), comment(3)]},
            doc! {"_id": oid(51), "blog_entry_id": 1, "page": 2, "count": 1, "comments": [comment(4)]},
        ])
        .await
        .unwrap();
    // Person 6 was deleted (Ok) at 10 s, after note n2 was made at 5 s and
    // the task written back at 6 s.
    let pulls = history::pulled::Timeline {
        deletes: vec![(Bson::ObjectId(oid(6)), Duration::from_secs(10))],
        creations: vec![(Bson::ObjectId(oid(6)), Duration::from_secs(2))],
        notes: vec![("n2".into(), Duration::from_secs(5))],
        rewrites: vec![(Bson::ObjectId(t0), Duration::from_secs(6))],
    };
    Facts { appended: (1..=4).map(|k| (1, format!("c{k}"))).collect(), pulls, ..Facts::default() }
}

async fn broken(t: &TestDb, facts: &Facts) -> (BTreeSet<Inv>, Vec<String>) {
    let snapshot = Snapshot::read(&t.db).await.unwrap();
    let found =
        check::check(&snapshot, facts, &[Inv::I1, Inv::I2, Inv::I3, Inv::I4, Inv::I5, Inv::Unrecorded, Inv::Pulled]);
    (found.iter().map(|v| v.inv).collect(), found.iter().map(ToString::to_string).collect())
}

async fn upd(t: &TestDb, coll: &str, filter: Document, update: Document) {
    let r = t.db.collection::<Document>(coll).update_one(filter, update).await.unwrap();
    assert_eq!(r.modified_count, 1, "the corruption applied");
}

/// Each corruption, and the invariants the checker must report for it.
const CORRUPTIONS: &[(&str, &[Inv])] = &[
    ("an element copy overwritten", &[Inv::I1]),
    ("an element copy removed", &[Inv::I1]),
    ("a top-level copy overwritten", &[Inv::I1]),
    ("a copy through a two-way reference overwritten", &[Inv::I1]),
    ("a copy inside a note overwritten", &[Inv::I1]),
    ("a note's writer renamed behind docrel's back", &[Inv::I1]),
    ("a note's version record lost", &[Inv::Unrecorded]),
    ("a note by a deleted person left", &[Inv::Pulled]),
    ("notes over their bound", &[Inv::I5]),
    ("a source renamed behind docrel's back", &[Inv::I1]),
    ("a copied quantity off", &[Inv::I1]),
    ("a copied label left after the source lost it", &[Inv::I1]),
    ("a version record ahead of its source", &[Inv::I1]),
    ("a version record lost", &[Inv::Unrecorded]),
    ("the inverse side lost", &[Inv::I2]),
    ("the owner moved on one side only", &[Inv::I2]),
    ("a task listed twice", &[Inv::I2]),
    ("a task listed by someone else too", &[Inv::I2]),
    ("a dangling task id", &[Inv::I2]),
    ("an owner that does not exist", &[Inv::I2]),
    ("a subset out of order", &[Inv::I3]),
    ("a subset missing one", &[Inv::I3]),
    ("a stale summary", &[Inv::I3]),
    ("a summary with an extra field", &[Inv::I3]),
    ("a newer child not in the subset", &[Inv::I3]),
    ("a child moved away still summarized", &[Inv::I3]),
    ("a count off", &[Inv::I4]),
    ("a gap between pages", &[Inv::I4]),
    ("a page twice", &[Inv::I4]),
    ("a page over its size (also a bound)", &[Inv::I4, Inv::I5]),
    ("an appended comment lost", &[Inv::I4]),
    ("a comment stored twice", &[Inv::I4]),
    ("a reference array over its bound", &[Inv::I5]),
    ("a two-way array over its bound", &[Inv::I5]),
];

/// Applies corruption `case` (an index into [`CORRUPTIONS`]) with the raw driver.
async fn corrupt(t: &TestDb, case: usize) {
    let coll = |c: &str| t.db.collection::<Document>(c);
    let name = CORRUPTIONS[case].0;
    if corrupt_copies(t, name).await {
        return;
    }
    match name {
        "the inverse side lost" => upd(t, "people", doc! {"_id": oid(3)}, doc! {"$set": {"tasks": []}}).await,
        "the owner moved on one side only" => upd(t, "tasks", doc! {}, doc! {"$set": {"owner": oid(4)}}).await,
        "a task listed twice" => upd(t, "people", doc! {"_id": oid(3)}, doc! {"$push": {"tasks": oid(5)}}).await,
        "a task listed by someone else too" => {
            upd(t, "people", doc! {"_id": oid(4)}, doc! {"$push": {"tasks": oid(5)}}).await
        }
        "a dangling task id" => upd(t, "people", doc! {"_id": oid(4)}, doc! {"$push": {"tasks": oid(77)}}).await,
        "an owner that does not exist" => {
            coll("people").delete_one(doc! {"_id": oid(3)}).await.unwrap();
        }
        "a subset out of order" => {
            let item = coll("items").find_one(doc! {}).await.unwrap().unwrap();
            let mut kept = item.get_array("reviews").unwrap().clone();
            kept.swap(1, 2);
            upd(t, "items", doc! {"_id": 1}, doc! {"$set": {"reviews": kept}}).await
        }
        "a subset missing one" => upd(t, "items", doc! {}, doc! {"$pop": {"reviews": 1}}).await,
        "a stale summary" => upd(t, "items", doc! {}, doc! {"$set": {"reviews.2.text": "old"}}).await,
        "a summary with an extra field" => upd(t, "items", doc! {}, doc! {"$set": {"reviews.0.product_id": 1}}).await,
        "a newer child not in the subset" => {
            coll("reviews").insert_one(review(6, 45)).await.unwrap();
        }
        "a child moved away still summarized" => {
            upd(t, "reviews", doc! {"rid": 2}, doc! {"$set": {"product_id": 2}}).await
        }
        "a count off" => upd(t, "comment_pages", doc! {"page": 1}, doc! {"$set": {"count": 2}}).await,
        "a gap between pages" => upd(t, "comment_pages", doc! {"page": 2}, doc! {"$set": {"page": 3}}).await,
        "a page twice" => {
            let page = doc! {"_id": oid(52), "blog_entry_id": 1, "page": 2, "count": 1,
            "comments": [{"name": "reader", "text": "c5"}]};
            coll("comment_pages").insert_one(page).await.unwrap();
        }
        "a page over its size (also a bound)" => {
            let update = doc! {"$push": {"comments": {"name": "reader", "text": "c9"}}, "$set": {"count": 4}};
            upd(t, "comment_pages", doc! {"page": 1}, update).await
        }
        "an appended comment lost" => {
            upd(t, "comment_pages", doc! {"page": 2}, doc! {"$set": {"comments": [], "count": 0}}).await
        }
        "a comment stored twice" => {
            let update = doc! {"$push": {"comments": {"name": "reader", "text": "c1"}}, "$set": {"count": 2}};
            upd(t, "comment_pages", doc! {"page": 2}, update).await
        }
        "a note by a deleted person left" => {
            let note = doc! {"text": "n2", "who": oid(6), "by_name": "gone"};
            upd(t, "tasks", doc! {}, doc! {"$push": {"notes": note}}).await
        }
        "notes over their bound" => {
            let notes: Vec<Document> =
                (0..4).map(|k| doc! {"text": format!("n{k}"), "who": oid(4), "by_name": "kate"}).collect();
            upd(t, "tasks", doc! {}, doc! {"$set": {"notes": notes}}).await
        }
        "a reference array over its bound" => {
            let elements: Vec<Document> =
                (0..7).map(|_| doc! {"id": oid(1), "pname": "bolt", "qty": 1, "label": "top"}).collect();
            upd(t, "products", doc! {}, doc! {"$set": {"parts": elements}}).await
        }
        "a two-way array over its bound" => {
            let ids: Vec<ObjectId> = (20..23).map(oid).collect();
            let tasks: Vec<Document> = ids
                .iter()
                .map(|id| {
                    doc! {"_id": *id, "description": "more", "owner": oid(3), "owner_name": "kate",
                    "_docrel": {"copies": {"owner": {oid(3).to_hex(): 30_i64}}}}
                })
                .collect();
            coll("tasks").insert_many(tasks).await.unwrap();
            upd(t, "people", doc! {"_id": oid(3)}, doc! {"$push": {"tasks": {"$each": ids}}}).await
        }
        other => unreachable!("no corruption named {other:?}"),
    }
}

/// Applies a corruption of copies or their version records; whether
/// `name` is one.
async fn corrupt_copies(t: &TestDb, name: &str) -> bool {
    match name {
        "an element copy overwritten" => upd(t, "products", doc! {}, doc! {"$set": {"parts.0.pname": "corrupt"}}).await,
        "an element copy removed" => upd(t, "products", doc! {}, doc! {"$unset": {"parts.0.pname": ""}}).await,
        "a top-level copy overwritten" => upd(t, "parts", doc! {}, doc! {"$set": {"productName": "corrupt"}}).await,
        "a copy through a two-way reference overwritten" => {
            upd(t, "tasks", doc! {}, doc! {"$set": {"owner_name": "corrupt"}}).await
        }
        "a source renamed behind docrel's back" => upd(t, "parts", doc! {}, doc! {"$set": {"name": "nut"}}).await,
        "a copy inside a note overwritten" => {
            upd(t, "tasks", doc! {}, doc! {"$set": {"notes.0.by_name": "corrupt"}}).await
        }
        "a note's writer renamed behind docrel's back" => {
            upd(t, "people", doc! {"_id": oid(4)}, doc! {"$set": {"name": "kat"}}).await
        }
        "a note's version record lost" => {
            let path = format!("_docrel.copies.notes.{}", oid(4).to_hex());
            upd(t, "tasks", doc! {}, doc! {"$unset": {path: ""}}).await
        }
        "a copied quantity off" => upd(t, "products", doc! {}, doc! {"$inc": {"parts.0.qty": 1}}).await,
        "a copied label left after the source lost it" => {
            upd(t, "parts", doc! {}, doc! {"$unset": {"label": ""}}).await
        }
        "a version record ahead of its source" => {
            let path = format!("_docrel.copies.parts.{}", oid(1).to_hex());
            upd(t, "products", doc! {}, doc! {"$set": {path: 11_i64}}).await
        }
        "a version record lost" => {
            let path = format!("_docrel.copies.product.{}", oid(2).to_hex());
            upd(t, "parts", doc! {}, doc! {"$unset": {path: ""}}).await
        }
        _ => return false,
    }
    true
}

#[tokio::test]
async fn the_checker_reports_every_corrupted_invariant() -> docrel::Result<()> {
    let t = TestDb::new("history_checker").await?;
    let facts = clean_state(&t).await;
    let (found, what) = broken(&t, &facts).await;
    assert!(found.is_empty(), "the clean state keeps every invariant: {what:#?}");
    let mut reported = BTreeSet::new();
    for (case, (name, expected)) in CORRUPTIONS.iter().enumerate() {
        let facts = clean_state(&t).await;
        corrupt(&t, case).await;
        let (found, what) = broken(&t, &facts).await;
        let expected: BTreeSet<Inv> = expected.iter().copied().collect();
        assert_eq!(found, expected, "{name}: the checker reported {what:#?}");
        reported.extend(found);
    }
    let every = [Inv::I1, Inv::I2, Inv::I3, Inv::I4, Inv::I5, Inv::Unrecorded, Inv::Pulled];
    assert_eq!(reported, every.into_iter().collect());
    Ok(())
}

/// The rule change's check (`history/rule_change.rs`) reads the holders of
/// the rules only the stored schema declares, raw: true copies pass, a
/// stale copy or a version record ahead of its source is I1, a copy of a
/// missing source dangles, a removed rule is not compared.
#[test]
fn the_rule_change_check_reports_stale_copies_of_rules_only_the_store_declares() {
    use history::rule_change::{copies, holder_type};
    let part = doc! {"_id": oid(1), "name": "bolt", "_docrel": {"v": 10_i64}};
    let product = doc! {"_id": oid(2), "name": "shifter", "_docrel": {"v": 20_i64}};
    let holder = |name: &str, part_name: &str, record: i64| {
        doc! {"_id": 1, "ref": oid(2), "name": name,
        "refs": [{"id": oid(1), "name": part_name}, {"id": oid(9), "name": "gone"}],
        "_docrel": {"copies": {"ref": {oid(2).to_hex(): record}, "refs": {oid(1).to_hex(): 10_i64}}}}
    };
    let check = |h: Document, elements: bool| {
        let (found, compared) = copies(&[h], std::slice::from_ref(&part), std::slice::from_ref(&product), elements);
        let invs: BTreeSet<Inv> = found.iter().map(|v| v.inv).collect();
        (invs.into_iter().collect::<Vec<_>>(), compared, found)
    };
    let (found, compared, what) = check(holder("shifter", "bolt", 20), true);
    assert!(found.is_empty() && compared == 2, "{what:?}");
    let (found, _, what) = check(holder("stale", "bolt", 19), true);
    assert_eq!(found, [Inv::I1], "{what:?}");
    let (found, _, what) = check(holder("shifter", "stale", 20), true);
    assert!(found == [Inv::I1] && what[0].what.contains("refs[0]"), "{what:?}");
    let (found, compared, what) = check(holder("shifter", "stale", 20), false);
    assert!(found.is_empty() && compared == 1, "{what:?}");
    let (found, _, what) = check(holder("shifter", "bolt", 21), true);
    assert!(found == [Inv::I1] && what[0].what.contains("ahead"), "{what:?}");
    // The rules are well formed: a change backfills both sources.
    let diff = docrel::schema::stored::diff(&[], &[holder_type()]);
    assert_eq!(diff.repairs, ["parts", "products"], "{diff:?}");
}

/// Every public write of the repository and of the relation handles, and
/// every update operator, read from docrel's sources, is called by some
/// kind of operation (a known gap counts: the runner can still run it).
#[test]
fn the_checker_generates_every_public_write() {
    let api = coverage::public_api();
    let must_find = [
        ("Repository", "insert"),
        ("Repository", "delete_many"),
        ("Call", "session"),
        ("RefMany", "link"),
        ("RefOne", "reassign"),
        ("LinkWrite", "session"),
        ("Subset", "rebuild"),
        ("Bucket", "append"),
        ("Field", "set"),
        ("Field", "pull_where"),
        ("Update", "raw"),
    ];
    for (ty, name) in must_find {
        assert!(api.contains(&(ty.to_owned(), name.to_owned())), "the source reader missed {ty}::{name}: {api:#?}");
    }
    let listed = |ty: &str, name: &str| coverage::NOT_WRITES.contains(&(ty, name));
    let stale: Vec<String> = coverage::NOT_WRITES
        .iter()
        .filter(|(t, m)| !api.contains(&((*t).to_owned(), (*m).to_owned())))
        .map(|(t, m)| format!("{t}::{m}"))
        .collect();
    assert!(stale.is_empty(), "NOT_WRITES names methods that no longer exist: {stale:?}");

    let generated: BTreeSet<&str> = OpKind::ALL
        .iter()
        .flat_map(|k| k.exercises().iter().copied())
        .chain(history::kinds::MODE_EXERCISES.iter().copied())
        .collect();
    let known: BTreeSet<String> = api.iter().map(|(t, m)| format!("{t}::{m}")).collect();
    let unknown: Vec<&&str> = generated.iter().filter(|g| !known.contains(**g)).collect();
    assert!(unknown.is_empty(), "the kinds claim to call methods docrel does not have: {unknown:?}");
    // A claim is only as good as the call: the checker's code calls each.
    let dir = coverage::root().join("tests/history");
    let code: String =
        coverage::rust_files(&dir).iter().map(|f| coverage::code_only(&std::fs::read_to_string(f).unwrap())).collect();
    let uncalled: Vec<&&str> = generated
        .iter()
        .filter(|g| {
            let name = g.rsplit("::").next().unwrap_or_default();
            !code.contains(&format!(".{name}(")) && !code.contains(&format!("::{name}("))
        })
        .collect();
    assert!(uncalled.is_empty(), "the checker's code never calls {uncalled:?}");

    let missing: Vec<String> = api
        .iter()
        .filter(|(t, m)| !listed(t, m))
        .map(|(t, m)| format!("{t}::{m}"))
        .filter(|name| !generated.contains(name.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "the history checker never generates these public writes (add an operation kind calling each, and name \
         it in the kind's list in tests/history): {missing:?}"
    );
}

/// Seed 10 of issue 27's big run (2,000 operations, faults, concurrent
/// transactions, two processes) hung the test server: a user's transaction
/// (`Session([IncPartQty(P5, by 1); UpsertPart(P13, .., R2); MovePart(P11,
/// R0)], Commit)`) ran beside `MovePartsMany([P5 P8 P3], R3, txn)`, which
/// the gate took for a transaction by its flag, but which docrel runs as a
/// plain `updateMany` (a write of references alone has no copies to fan
/// out). The update met the transaction's P5 and held `parts` while the
/// transaction's next statement waited for it (`history/gate.rs`). The
/// gate now holds the two apart, and lets an operation that does both in a
/// group in alone.
#[tokio::test]
async fn the_gate_holds_a_plain_update_of_references_apart_from_a_transaction() {
    use history::gate::{entry, Class, Gate, Group, Pass};
    use history::op::{End, Op};
    use std::time::Duration;
    let session = Op::Session {
        steps: vec![
            Op::IncPartQty { p: 5, by: 1, txn: false },
            Op::UpsertPart { p: 13, name: "p".into(), product: 2, txn: false },
            Op::MovePart { p: 11, product: 0, txn: false },
        ],
        end: End::Commit,
    };
    let moving = Op::MovePartsMany { ps: vec![5, 8, 3], product: 3, txn: true };
    let inserting = Op::InsertManyParts { parts: vec![(1, "a".into(), 0), (2, "b".into(), 0)] };
    assert_eq!(entry(&session), [(Group::Catalog, Class::Transaction)]);
    assert_eq!(entry(&moving), [(Group::Catalog, Class::Plain)]);
    assert_eq!(entry(&inserting), [(Group::Catalog, Class::Both)]);
    let gate = Gate::new(false);
    // Whether `op` is let in within a moment; the pass when it is.
    async fn waits(gate: &Gate, op: &Op) -> Option<Pass> {
        tokio::time::timeout(Duration::from_millis(200), gate.enter(op)).await.ok().map(|(pass, _)| pass)
    }
    let txn = gate.enter(&session).await;
    assert!(waits(&gate, &moving).await.is_none(), "a plain multi-document write overlapped a transaction");
    assert!(waits(&gate, &inserting).await.is_none(), "an operation doing both overlapped a transaction");
    drop(txn);
    let plain = waits(&gate, &moving).await.expect("the plain write goes in once the transaction left");
    assert!(waits(&gate, &inserting).await.is_none(), "an operation doing both overlapped a plain write");
    drop(plain);
    let alone = waits(&gate, &inserting).await.expect("alone in the group");
    assert!(waits(&gate, &session).await.is_none(), "a transaction overlapped an operation doing both");
    drop(alone);
}

/// What an operation sends is seen (`history/monitor.rs`) and checked
/// against its entry to the gate: `MovePartsMany(.., txn)` sends a plain
/// multi-document update, which an entry as a transaction would not
/// declare. And a transaction an operation left open (its end never sent,
/// as after a cut connection) is ended before the operation leaves the
/// gate: a plain multi-document update of its document then goes through
/// instead of waiting for the server to reap it.
#[tokio::test]
async fn the_monitor_sees_what_an_operation_sends_and_ends_what_it_left_open() -> docrel::Result<()> {
    use history::gate::{entry, Class, Group};
    use history::{exec, monitor, op::Op, plan::Mode, process, universe::Universe};
    use std::time::Duration;
    let t = TestDb::new("history_monitor").await?;
    let db = process::connect_like(t.db.name()).await.expect("a monitored client");
    history::setup::setup(&db, 1).await?;
    let janitor = process::janitor().await.expect("a client");
    let ctx = exec::Ctx { db: db.clone(), mode: Mode::Inline, janitor: janitor.clone() };
    let moving = Op::MovePartsMany { ps: (0..6).collect(), product: 1, txn: true };
    let (moved, seen) = monitor::watch(exec::exec(&ctx, &moving)).await;
    moved?;
    assert!(seen.plain_multi.contains("parts") && seen.transactions.is_empty(), "{seen:?}");
    assert_eq!(seen.undeclared(&entry(&moving)), None);
    assert!(seen.undeclared(&[(Group::Catalog, Class::Transaction)]).is_some(), "{seen:?}");

    // A client-level bulkWrite's multi-document statements count as plain
    // multi-document writes of their collections.
    let (bulk, seen) = monitor::watch(async {
        use docrel::mongodb::{options::UpdateManyModel, Namespace};
        let ns = Namespace::new(db.name(), "parts");
        let relabel = UpdateManyModel::builder().namespace(ns).filter(doc! {}).update(doc! {"$set": {"label": "b"}});
        db.client().bulk_write(vec![relabel.build()]).await
    })
    .await;
    bulk.expect("bulkWrite");
    assert!(seen.plain_multi.contains("parts") && seen.transactions.is_empty(), "{seen:?}");

    let parts = db.collection::<Document>("parts");
    let (left, seen) = monitor::watch(async {
        let mut s = db.client().start_session().await?;
        s.start_transaction().await?;
        parts.update_one(doc! {"_id": Universe::part(1)}, doc! {"$set": {"label": "open"}}).session(&mut s).await?;
        // Neither committed nor aborted, and not dropped (its drop would abort it).
        std::mem::forget(s);
        Ok::<_, docrel::mongodb::error::Error>(())
    })
    .await;
    left.expect("a transaction");
    assert_eq!(seen.maybe_open().len(), 1, "{seen:?}");
    monitor::end_open(&janitor, &seen).await.expect("killSessions");
    let plain = parts.update_many(doc! {}, doc! {"$set": {"label": "after"}});
    let done = tokio::time::timeout(Duration::from_secs(20), plain).await;
    if done.is_err() {
        // Ended now, or the update would hold the collection (and the
        // database's drop) until the server reaps the transaction.
        let _ = monitor::end_open(&janitor, &seen).await;
    }
    assert!(done.is_ok(), "the plain update waited on a transaction the operation left open");
    Ok(())
}

/// A copied field written by the caller must be refused (issue 38's recipe
/// finding: it returned `Ok` and the write was dropped). The history records
/// each `SetPartCopy` that returned `Ok`, and the check reports it.
#[test]
fn the_checker_reports_a_copied_field_write_that_returned_ok() {
    let quiet = check::check(&Snapshot::default(), &Facts::default(), &[Inv::Call]);
    assert!(quiet.is_empty(), "{quiet:?}");
    let facts = Facts { accepted: vec!["SetPartCopy(P1, \"c.7\")".into()], ..Facts::default() };
    let found = check::check(&Snapshot::default(), &facts, &[Inv::Call]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].inv == Inv::Call && found[0].what.contains("SetPartCopy(P1"), "{found:?}");
}

/// The twin database (`history/twin.rs`) holds the rule-change holders with
/// no rule of theirs: a rule that reaches it (here published there on
/// purpose, as a process-global graph would have run it) is reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_twin_reports_a_rule_of_another_database_run_in_it() -> docrel::Result<()> {
    let t = TestDb::new("history_twin").await?;
    let quiet = history::twin::Twin::start(&t.db).await.expect("twin");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(quiet.conclude(1).await.expect("conclude"), []);

    let twin = history::twin::Twin::start(&t.db).await.expect("twin");
    docrel::schema::stored::publish_types(twin.db(), &[history::rule_change::holder_type()]).await?;
    docrel::schema::obey(twin.db()).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let found = twin.conclude(2).await.expect("conclude");
    assert!(found.iter().any(|v| v.inv == Inv::I1 && v.what.contains("ran in another")), "{found:?}");
    Ok(())
}
