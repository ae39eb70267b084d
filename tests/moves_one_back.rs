//! Issue 39, one referenced document becomes a struct embedded in its
//! parent (one-to-one referenced → embedded, the way back of
//! `tests/moves_one.rs`): `mb_addresses` documents with a parent reference
//! of the old version, `mb_patrons.address` of the new one, declared
//! `#[embed(moved_from = "mb_addresses")]`. The old documents keep their
//! own `_id`s (`ObjectId`s, where patrons have `i64`s).
//!
//! This binary plays the new version (`link_only`); a second OS process
//! plays the old one: it publishes its schema and the data, then writes
//! addresses and patrons while the move runs, is cut, and resumes.

use docrel::admin::moves;
use docrel::bson::{doc, oid::ObjectId, Document as BsonDoc};
use docrel::schema::stored::{self, MoveState, StoredMove};
use docrel::testing::TestDb;
use docrel::Error;
use std::collections::HashMap;
use std::time::{Duration, Instant};

const V1: &str = concat!(module_path!(), "::v1");
const V2: &str = concat!(module_path!(), "::v2");
const DB_VARIABLE: &str = "DOCREL_MOVES_BACK_DB";
const MODE_VARIABLE: &str = "DOCREL_MOVES_BACK_MODE";
const SEED_VARIABLE: &str = "DOCREL_MOVES_BACK_SEED";
/// The seeds the fleet test runs without fail points (`1..9` or `3,5`; 1).
const SEEDS_VARIABLE: &str = "DOCREL_MOVES_BACK_SEEDS";
/// The seeds run with fail points on every client of the test's database, as the above; 2.
const FAULT_SEEDS_VARIABLE: &str = "DOCREL_MOVES_BACK_FAULT_SEEDS";
const FAULTS_VARIABLE: &str = "DOCREL_MOVES_BACK_FAULTS";
const LEASE: Duration = Duration::from_millis(400);
/// Patrons no writer touches during the move: only the copy moves theirs.
const COLD: std::ops::Range<i64> = 100..110;
/// The collection where the test tells the old version to stop.
const STOP: &str = "mb_stop";

mod faults;
use faults::fleet::{run_move, History};
use faults::{client, raw, seeds, Seeded};

/// The old version: an address is a document of its own referring to its
/// patron.
pub mod v1 {
    use docrel::bson::oid::ObjectId;
    use docrel::Document;
    use serde::{Deserialize, Serialize};

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mb_addresses")]
    pub struct Address {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        #[parent_ref(to = Patron)]
        pub patron: i64,
        pub street: String,
        pub city: String,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mb_patrons")]
    pub struct Patron {
        #[serde(rename = "_id")]
        pub id: i64,
        pub name: String,
    }
}

/// The new version: a patron embeds its address.
pub mod v2 {
    use docrel::{Document, Embedded};
    use serde::{Deserialize, Serialize};

    #[derive(Embedded, Serialize, Deserialize, Debug, Clone, PartialEq)]
    pub struct Address {
        pub street: String,
        pub city: String,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mb_patrons")]
    pub struct Patron {
        #[serde(rename = "_id")]
        pub id: i64,
        pub name: String,
        #[embed(moved_from = "mb_addresses")]
        pub address: Option<Address>,
    }
}

/// This process is the new version, whichever test runs first.
fn new_version() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| docrel::testing::link_only(&[V2]));
}

fn err(e: docrel::mongodb::error::Error) -> Error {
    Error::driver("test", "mb", e)
}

fn declared() -> Vec<StoredMove> {
    stored::program_moves().into_iter().filter(|m| m.from.collection == "mb_patrons").collect()
}

fn address(patron: i64, street: &str) -> v1::Address {
    v1::Address { id: ObjectId::new(), patron, street: street.into(), city: "Lyon".into() }
}

/// The old version's data: eight patrons, six with an address.
async fn seed(db: &docrel::mongodb::Database) -> docrel::Result<()> {
    docrel::schema::publish(db).await?;
    for p in 0..8 {
        v1::Patron::repo(db).insert(&v1::Patron { id: p, name: format!("p{p}") }).await?;
        if p % 4 != 3 {
            v1::Address::repo(db).insert(&address(p, &format!("{p} rue Neuve"))).await?;
        }
    }
    Ok(())
}

/// One write of the old version, drawn by `n`: a patron's address set
/// (inserted, or its document updated), replaced or deleted, a patron
/// inserted with its address, renamed, or deleted with its address.
async fn old_write(db: &docrel::mongodb::Database, n: &mut Seeded, next: &mut i64) -> docrel::Result<()> {
    let patrons: Vec<i64> = raw(db, "mb_patrons")
        .await?
        .iter()
        .filter_map(|p| p.get_i64("_id").ok())
        .filter(|p| !COLD.contains(p))
        .collect();
    let (op, p) = (n.below(8), patrons.get(n.below(patrons.len())).copied());
    let (repo, addresses) = (v1::Patron::repo(db), v1::Address::repo(db));
    let Some(p) = p.filter(|_| op != 4 && op != 7) else {
        *next += 1;
        repo.insert(&v1::Patron { id: *next, name: "new".into() }).await?;
        return addresses.insert(&address(*next, "new patron")).await.map(drop);
    };
    let held = raw(db, "mb_addresses").await?.into_iter().find(|a| a.get_i64("patron").ok() == Some(p));
    let held = held.and_then(|a| a.get_object_id("_id").ok());
    let f = v1::Address::fields();
    match (op, held) {
        (0 | 1, Some(id)) => addresses.update_by_id(&id, f.street.set("set by old".into())).await.map(drop),
        (0 | 1, None) => addresses.insert(&address(p, "inserted by old")).await.map(drop),
        (2, Some(id)) => addresses.delete_by_id(&id).await.map(drop),
        (3, Some(id)) => addresses.replace(&v1::Address { id, ..address(p, "replaced by old") }).await.map(drop),
        (5, held) => {
            if let Some(id) = held {
                addresses.delete_by_id(&id).await?;
            }
            repo.delete_by_id(&p).await.map(drop)
        }
        _ => repo.update_by_id(&p, v1::Patron::fields().name.set("renamed".into())).await.map(drop),
    }
}

/// The old version, in its own process: `seed`, or writes until told to stop.
#[tokio::test]
#[ignore = "run by `the_addresses_move_into_their_patrons_while_both_versions_write`"]
async fn old_version() -> docrel::Result<()> {
    let Ok(name) = std::env::var(DB_VARIABLE) else { return Ok(()) };
    docrel::testing::link_only(&[V1]);
    docrel::schema::set_lease(LEASE);
    let faulted = std::env::var(FAULTS_VARIABLE).is_ok();
    let db = client(&name, if faulted { &name } else { "mb-old" }).await?.database(&name);
    let clean = client(&name, "mb-janitor").await?.database(&name);
    if std::env::var(MODE_VARIABLE).as_deref() == Ok("seed") {
        return seed(&db).await;
    }
    let seed: u64 = std::env::var(SEED_VARIABLE).ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    let (mut n, mut writes, until) = (Seeded(3 + seed * 91), 0u64, Instant::now() + Duration::from_secs(90));
    let mut next = 1_000;
    let marker = clean.collection::<BsonDoc>(STOP);
    while Instant::now() < until && marker.find_one(doc! {}).await.map_err(err)?.is_none() {
        match old_write(&db, &mut n, &mut next).await {
            // A second address of a patron the new version gave one
            // meanwhile, or one of a patron it deleted: refused.
            Ok(()) | Err(Error::NotFound { .. }) | Err(Error::EmbedFull { .. }) => writes += 1,
            Err(Error::Invalid { what: docrel::Misuse::MovedWrite, message }) if message.contains("is not stored") => {
                writes += 1
            }
            Err(_) if faulted => {}
            Err(e) => return Err(e),
        }
    }
    println!("@writes {writes}");
    Ok(())
}

fn old_version_process(db: &str, mode: &str) -> std::process::Command {
    let mut command = std::process::Command::new(std::env::current_exe().expect("this test binary"));
    command.args(["old_version", "--exact", "--ignored", "--nocapture"]).env(DB_VARIABLE, db).env(MODE_VARIABLE, mode);
    command
}

async fn seeded(name: &str) -> docrel::Result<TestDb> {
    let t = TestDb::new(name).await?;
    docrel::schema::set_lease_for(&t.db, LEASE);
    let seeded = old_version_process(t.db.name(), "seed").output().expect("the old version seeds");
    assert!(seeded.status.success(), "{}", String::from_utf8_lossy(&seeded.stderr));
    docrel::schema::obey(&t.db).await?;
    Ok(t)
}

/// One write of the new version, drawn by `n`: a patron's address set,
/// cleared or replaced with it, a patron inserted with one, or deleted.
async fn new_write(db: &docrel::mongodb::Database, n: &mut Seeded) -> docrel::Result<()> {
    let patrons: Vec<i64> = raw(db, "mb_patrons")
        .await?
        .iter()
        .filter_map(|p| p.get_i64("_id").ok())
        .filter(|p| !COLD.contains(p))
        .collect();
    let Some(&p) = patrons.get(n.below(patrons.len())) else { return Ok(()) };
    let repo = v2::Patron::repo(db);
    let mine = |street: &str| Some(v2::Address { street: street.into(), city: "Paris".into() });
    let f = v2::Patron::fields();
    let written = match n.below(6) {
        0 | 1 => repo.update_by_id(&p, f.address.set(mine("set by new"))).await.map(drop),
        2 => repo.update_by_id(&p, f.address.set(None)).await.map(drop),
        3 => repo
            .replace(&v2::Patron { id: p, name: "replaced".into(), address: mine("replaced by new") })
            .await
            .map(drop),
        4 => {
            let id = 5_000 + i64::try_from(n.below(1_000_000)).unwrap_or(0);
            repo.insert(&v2::Patron { id, name: "new by new".into(), address: mine("new by new") }).await.map(drop)
        }
        _ => repo.delete_by_id(&p).await.map(drop),
    };
    match written {
        // Before the move is maintained (announced, or not yet applied).
        Err(Error::Invalid { message, .. })
            if message.contains("is moving") || message.contains("no move under way") =>
        {
            Ok(())
        }
        Err(Error::NotFound { .. }) => Ok(()),
        Err(e) if e.is_duplicate_key() => Ok(()),
        other => other,
    }
}

/// The relation, kept in two places, says the same in both: a stored
/// patron with an address document embeds exactly its fields, one without
/// embeds none, and no patron has two. Documents of patrons that are gone
/// stay in the old collection only. Answers how many patrons hold one.
async fn assert_one_relation(db: &docrel::mongodb::Database) -> docrel::Result<usize> {
    let patrons = raw(db, "mb_patrons").await?;
    let mut documents: HashMap<i64, Vec<BsonDoc>> = HashMap::new();
    for a in raw(db, "mb_addresses").await? {
        documents.entry(a.get_i64("patron").expect("a patron")).or_default().push(a);
    }
    let mut broken = Vec::new();
    for p in &patrons {
        let id = p.get_i64("_id").unwrap();
        let embedded = p.get_document("address").ok();
        match documents.remove(&id).unwrap_or_default().as_slice() {
            [] if embedded.is_some() => broken.push(format!("patron {id} embeds {embedded:?} and has no document")),
            [] => {}
            [one] => {
                let mut one = one.clone();
                one.remove("_id");
                one.remove("patron");
                one.remove("_docrel");
                if embedded != Some(&one) {
                    broken.push(format!("patron {id} embeds {embedded:?}, its document holds {one}"));
                }
            }
            many => broken.push(format!("patron {id} has {} documents", many.len())),
        }
    }
    assert!(broken.is_empty(), "{} violation(s): {broken:#?}", broken.len());
    Ok(patrons.iter().filter(|p| p.get_document("address").is_ok()).count())
}

/// Before the switch the new version reads each patron's address from its
/// document, whatever was copied.
async fn assert_reads(db: &docrel::mongodb::Database) -> docrel::Result<()> {
    let documents = raw(db, "mb_addresses").await?;
    for p in raw(db, "mb_patrons").await? {
        let id = p.get_i64("_id").unwrap();
        let want = documents.iter().find(|a| a.get_i64("patron").ok() == Some(id)).map(|a| v2::Address {
            street: a.get_str("street").unwrap().into(),
            city: a.get_str("city").unwrap().into(),
        });
        let read = v2::Patron::repo(db).require(&id).await?;
        assert_eq!(read.address, want, "patron {id}'s address, read by the new version");
    }
    let with = v2::Patron::repo(db).count(docrel::Filter::new(doc! {"address.city": "Lyon"})).await?;
    assert_eq!(with as usize, documents.iter().filter(|a| a.get_str("city").ok() == Some("Lyon")).count());
    Ok(())
}

#[tokio::test]
async fn the_addresses_move_into_their_patrons_while_both_versions_write() -> docrel::Result<()> {
    new_version();
    let plain = seeds(SEEDS_VARIABLE, "1").into_iter().map(|s| (s, false));
    for (seed, faulted) in plain.chain(seeds(FAULT_SEEDS_VARIABLE, "2").into_iter().map(|s| (s, true))) {
        println!("seed {seed}{}", if faulted { ", with fail points" } else { "" });
        fleet(seed, faulted).await?;
    }
    Ok(())
}

async fn fleet(seed: u64, faulted: bool) -> docrel::Result<()> {
    let t = seeded("mb_fleet").await?;
    let (program, declared) = (stored::program(), declared());
    assert_eq!(declared.len(), 1, "v2 declares the move back");

    let plan = moves::plan(&t.db, &program, &declared, false).await?.remove(0);
    let text = plan.to_text();
    assert!(plan.refusals.is_empty(), "{text}");
    assert!(text.contains("one-to-one referenced document → embedded in its parent"), "{text}");
    assert!(text.contains("to move: 6 document(s) into their parents"), "{text}");

    // Patrons no writer touches: only the copy moves their addresses.
    let patrons: Vec<BsonDoc> = COLD.map(|p| doc! {"_id": p, "name": "cold"}).collect();
    t.db.collection::<BsonDoc>("mb_patrons").insert_many(patrons).await.map_err(err)?;
    let addresses: Vec<BsonDoc> = COLD
        .map(|p| doc! {"_id": ObjectId::new(), "patron": p, "street": format!("{p} quai"), "city": "Sète"})
        .collect();
    t.db.collection::<BsonDoc>("mb_addresses").insert_many(addresses).await.map_err(err)?;
    assert_reads(&t.db).await?;
    let early = v2::Patron::fields().address.set(None);
    let refused = v2::Patron::repo(&t.db).update_by_id(&0, early).await.expect_err("no move under way");
    assert!(refused.to_string().contains("no move under way"), "{refused}");

    let mut old = old_version_process(t.db.name(), "write");
    if faulted {
        old.env(FAULTS_VARIABLE, "1");
    }
    let old = old
        .env(SEED_VARIABLE, seed.to_string())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the old version writes");
    let history = History {
        db: &t.db,
        program: &program,
        declared: &declared,
        lease: LEASE,
        seed,
        faulted,
        janitor: "mb-janitor",
        stop: STOP,
    };
    let stdout = run_move(&history, old, |db, n| Box::pin(new_write(db, n))).await?;
    let writes: u64 = stdout.lines().find_map(|l| l.strip_prefix("@writes ")?.parse().ok()).expect("it counted");
    assert!(faulted || writes > 10, "the old version wrote during the move: {writes}");
    assert_eq!(stored::active_moves(&t.db).first().map(|m| m.state), Some(MoveState::Switched));
    let held = assert_one_relation(&t.db).await?;
    assert!(held > 0, "some patrons hold an address");

    tokio::time::sleep(LEASE * 2).await;
    let retired = moves::retire(&t.db, &declared, true, LEASE, || false, |_| {}).await?;
    assert!(retired.iter().all(|r| r.complete), "{retired:?}");
    assert!(raw(&t.db, "mb_addresses").await?.is_empty(), "the old documents are gone");
    let embedding = raw(&t.db, "mb_patrons").await?.iter().filter(|p| p.get_document("address").is_ok()).count();
    assert_eq!(embedding, held, "every address stays in its patron");
    // Complete: the new version reads and writes the field as stored.
    let some = raw(&t.db, "mb_patrons").await?[0].get_i64("_id").unwrap();
    let set = v2::Patron::fields().address.set(Some(v2::Address { street: "after".into(), city: "Nice".into() }));
    v2::Patron::repo(&t.db).update_by_id(&some, set).await?;
    assert_eq!(v2::Patron::repo(&t.db).require(&some).await?.address.map(|a| a.city), Some("Nice".into()));
    Ok(())
}
