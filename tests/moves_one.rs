//! Issue 39, one embedded document becomes a referenced document of its
//! own (one-to-one embedded → referenced): `mo_patrons.address` of the old
//! version, the `mo_addresses` document whose `_id` is its patron's in the
//! new one. The old field and the new document are one relation kept in
//! two places while the move runs.
//!
//! This binary plays the new version (`link_only`); a second OS process,
//! started from it, plays the old one: it publishes its schema and the
//! data, then sets, clears and replaces addresses while the move runs, is
//! cut, and resumes.

use docrel::admin::{moves, Exit};
use docrel::bson::{doc, Document as BsonDoc};
use docrel::schema::stored::{self, MoveState, StoredMove};
use docrel::testing::TestDb;
use docrel::{Error, Filter, Misuse};
use std::collections::HashMap;
use std::time::{Duration, Instant};

const V1: &str = concat!(module_path!(), "::v1");
const V2: &str = concat!(module_path!(), "::v2");
const DB_VARIABLE: &str = "DOCREL_MOVES_ONE_DB";
const MODE_VARIABLE: &str = "DOCREL_MOVES_ONE_MODE";
const SEED_VARIABLE: &str = "DOCREL_MOVES_ONE_SEED";
/// The seeds the fleet test runs without fail points (`1..9` or `3,5`; 1).
const SEEDS_VARIABLE: &str = "DOCREL_MOVES_ONE_SEEDS";
/// The seeds run with fail points on every client of the test's database
/// (both versions' and the move's), as the above; 2.
const FAULT_SEEDS_VARIABLE: &str = "DOCREL_MOVES_ONE_FAULT_SEEDS";
const FAULTS_VARIABLE: &str = "DOCREL_MOVES_ONE_FAULTS";
const LEASE: Duration = Duration::from_millis(400);
/// Patrons no writer touches during the move: only the copy moves theirs.
const COLD: std::ops::Range<i64> = 100..110;
/// The collection where the test tells the old version to stop.
const STOP: &str = "mo_stop";

mod faults;
use faults::fleet::{run_move, History};
use faults::{admin, client, raw, seeds, Seeded};

/// The old version: a patron embeds its address, if it has one; a member
/// always has its card.
pub mod v1 {
    use docrel::{Document, Embedded};
    use serde::{Deserialize, Serialize};

    #[derive(Embedded, Serialize, Deserialize, Debug, Clone, PartialEq)]
    pub struct Address {
        pub street: String,
        pub city: String,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mo_patrons")]
    pub struct Patron {
        #[serde(rename = "_id")]
        pub id: i64,
        pub name: String,
        #[embed]
        pub address: Option<Address>,
    }

    #[derive(Embedded, Serialize, Deserialize, Debug, Clone, PartialEq)]
    pub struct Card {
        pub number: String,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mo_members")]
    pub struct Member {
        #[serde(rename = "_id")]
        pub id: i64,
        #[embed]
        pub card: Card,
    }
}

/// The new version: an address, and a card, are documents of their own
/// whose `_id` is their parent's.
pub mod v2 {
    use docrel::Document;
    use serde::{Deserialize, Serialize};

    #[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
    #[document(collection = "mo_addresses", moved_from = Patron::address)]
    pub struct Address {
        #[serde(rename = "_id")]
        pub id: i64,
        #[parent_ref(to = Patron)]
        pub patron: i64,
        pub street: String,
        pub city: String,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mo_patrons")]
    pub struct Patron {
        #[serde(rename = "_id")]
        pub id: i64,
        pub name: String,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mo_cards", moved_from = Member::card)]
    pub struct Card {
        #[serde(rename = "_id")]
        pub id: i64,
        #[parent_ref(to = Member)]
        pub member: i64,
        pub number: String,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mo_members")]
    pub struct Member {
        #[serde(rename = "_id")]
        pub id: i64,
    }
}

/// This process is the new version, whichever test runs first.
fn new_version() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| docrel::testing::link_only(&[V2]));
}

fn err(e: docrel::mongodb::error::Error) -> Error {
    Error::driver("test", "mo", e)
}

/// The move into `collection`, of the ones this program declares.
fn declared(collection: &str) -> Vec<StoredMove> {
    stored::program_moves().into_iter().filter(|m| m.to.collection == collection).collect()
}

fn address(street: &str) -> v1::Address {
    v1::Address { street: street.into(), city: "Lyon".into() }
}

/// The old version's data: eight patrons, six with an address; three
/// members with their cards.
async fn seed(db: &docrel::mongodb::Database) -> docrel::Result<()> {
    docrel::schema::publish(db).await?;
    for p in 0..8 {
        let address = (p % 4 != 3).then(|| address(&format!("{p} rue Neuve")));
        v1::Patron::repo(db).insert(&v1::Patron { id: p, name: format!("p{p}"), address }).await?;
    }
    for m in 0..3 {
        v1::Member::repo(db).insert(&v1::Member { id: m, card: v1::Card { number: format!("c{m}") } }).await?;
    }
    Ok(())
}

/// One write of the old version, drawn by `n`: an address set, cleared or
/// replaced with its patron, a patron inserted (`next` numbers them),
/// deleted or renamed.
async fn old_write(db: &docrel::mongodb::Database, n: &mut Seeded, next: &mut i64) -> docrel::Result<()> {
    let patrons: Vec<i64> = raw(db, "mo_patrons")
        .await?
        .iter()
        .filter_map(|p| p.get_i64("_id").ok())
        .filter(|p| !COLD.contains(p))
        .collect();
    let repo = v1::Patron::repo(db);
    let (op, p) = (n.below(8), patrons.get(n.below(patrons.len())).copied());
    let fields = v1::Patron::fields();
    let Some(p) = p.filter(|_| op != 4 && op != 7) else {
        *next += 1;
        let address = Some(address("new patron"));
        return repo.insert(&v1::Patron { id: *next, name: "new".into(), address }).await.map(drop);
    };
    match op {
        0 | 1 => repo.update_by_id(&p, fields.address.set(Some(address("set by old")))).await.map(drop),
        2 => repo.update_by_id(&p, fields.address.set(None)).await.map(drop),
        3 => {
            let address = (n.below(2) == 0).then(|| address("replaced by old"));
            repo.replace(&v1::Patron { id: p, name: "replaced".into(), address }).await.map(drop)
        }
        5 => repo.delete_by_id(&p).await.map(drop),
        _ => repo.update_by_id(&p, fields.name.set("renamed".into())).await.map(drop),
    }
}

/// The old version, in its own process: `seed` publishes its schema and
/// data; `write` writes until the test inserts into [`STOP`], then prints
/// how many writes it made.
#[tokio::test]
#[ignore = "run by `the_address_becomes_a_document_while_both_versions_write`"]
async fn old_version() -> docrel::Result<()> {
    let Ok(name) = std::env::var(DB_VARIABLE) else { return Ok(()) };
    docrel::testing::link_only(&[V1]);
    docrel::schema::set_lease(LEASE);
    let faulted = std::env::var(FAULTS_VARIABLE).is_ok();
    // The fail points target the clients named after the database.
    let db = client(&name, if faulted { &name } else { "mo-old" }).await?.database(&name);
    let clean = client(&name, "mo-janitor").await?.database(&name);
    if std::env::var(MODE_VARIABLE).as_deref() == Ok("seed") {
        return seed(&db).await;
    }
    let seed: u64 = std::env::var(SEED_VARIABLE).ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    let (mut n, mut writes, until) = (Seeded(5 + seed * 97), 0u64, Instant::now() + Duration::from_secs(90));
    let mut next = 1_000;
    let marker = clean.collection::<BsonDoc>(STOP);
    while Instant::now() < until && marker.find_one(doc! {}).await.map_err(err)?.is_none() {
        match old_write(&db, &mut n, &mut next).await {
            Ok(()) | Err(Error::NotFound { .. }) => writes += 1,
            // A fault: the write may or may not have landed.
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

/// Seeds a new database with the old version in its own process.
async fn seeded(name: &str) -> docrel::Result<TestDb> {
    let t = TestDb::new(name).await?;
    docrel::schema::set_lease_for(&t.db, LEASE);
    let seeded = old_version_process(t.db.name(), "seed").output().expect("the old version seeds");
    assert!(seeded.status.success(), "{}", String::from_utf8_lossy(&seeded.stderr));
    docrel::schema::obey(&t.db).await?;
    Ok(t)
}

/// One write of the new version, drawn by `n`: an address inserted,
/// edited, replaced or deleted. Refused, with nothing written, until the
/// move is maintained.
async fn new_write(db: &docrel::mongodb::Database, n: &mut Seeded) -> docrel::Result<()> {
    let patrons: Vec<i64> = raw(db, "mo_patrons")
        .await?
        .iter()
        .filter_map(|p| p.get_i64("_id").ok())
        .filter(|p| !COLD.contains(p))
        .collect();
    let Some(&p) = patrons.get(n.below(patrons.len())) else { return Ok(()) };
    let repo = v2::Address::repo(db);
    let mine = |street: &str| v2::Address { id: p, patron: p, street: street.into(), city: "Paris".into() };
    let written = match n.below(5) {
        0 | 1 => repo.insert(&mine("inserted by new")).await.map(drop),
        2 => repo.update_by_id(&p, v2::Address::fields().street.set("edited by new".into())).await.map(drop),
        3 => repo.replace(&mine("replaced by new")).await.map(drop),
        _ => repo.delete_by_id(&p).await.map(drop),
    };
    match written {
        // Before the move is maintained (announced, or not yet applied).
        Err(Error::Invalid { message, .. })
            if message.contains("is moving") || message.contains("no move under way") =>
        {
            Ok(())
        }
        // The patron was deleted meanwhile: the old field cannot hold it.
        Err(Error::Invalid { what: Misuse::MovedWrite, message }) if message.contains("is not stored") => Ok(()),
        Err(Error::NotFound { .. }) => Ok(()),
        Err(e) if e.is_duplicate_key() => Ok(()),
        other => other,
    }
}

/// The relation, kept in two places, says the same in both: a patron
/// holding an address has exactly one address document, whose `_id` and
/// `patron` are its own and whose fields are the embedded ones; a patron
/// without one has none; no address belongs to a patron that is gone.
async fn assert_one_relation(db: &docrel::mongodb::Database) -> docrel::Result<usize> {
    let patrons = raw(db, "mo_patrons").await?;
    let mut documents: HashMap<i64, BsonDoc> = HashMap::new();
    for a in raw(db, "mo_addresses").await? {
        let id = a.get_i64("_id").expect("an i64 id");
        assert_eq!(a.get_i64("patron").ok(), Some(id), "address {id}'s patron is its `_id`: {a}");
        assert!(documents.insert(id, a).is_none());
    }
    let mut broken = Vec::new();
    for p in &patrons {
        let id = p.get_i64("_id").unwrap();
        match (p.get_document("address").ok(), documents.remove(&id)) {
            (Some(embedded), Some(mut document)) => {
                document.remove("_id");
                document.remove("patron");
                document.remove("_docrel");
                if *embedded != document {
                    broken.push(format!("patron {id} embeds {embedded}, its document holds {document}"));
                }
            }
            (Some(embedded), None) => broken.push(format!("patron {id} embeds {embedded} and has no document")),
            (None, Some(document)) => broken.push(format!("patron {id} embeds none and has {document}")),
            (None, None) => {}
        }
    }
    broken.extend(documents.values().map(|d| format!("{d} belongs to no patron")));
    assert!(broken.is_empty(), "{} violation(s): {broken:#?}", broken.len());
    Ok(patrons.iter().filter(|p| p.get_document("address").is_ok()).count())
}

/// Before the move is switched the new version reads every address the
/// patrons embed, whatever was copied: by its patron, by its own id, or
/// all of them.
async fn assert_reads(db: &docrel::mongodb::Database) -> docrel::Result<()> {
    let repo = v2::Address::repo(db);
    let mut all = Vec::new();
    for p in raw(db, "mo_patrons").await? {
        let id = p.get_i64("_id").unwrap();
        let want = p.get_document("address").ok().map(|a| v2::Address {
            id,
            patron: id,
            street: a.get_str("street").unwrap().into(),
            city: a.get_str("city").unwrap().into(),
        });
        let by_patron = repo.find(Filter::new(doc! {"patron": id})).to_vec().await?;
        assert_eq!(by_patron, want.clone().into_iter().collect::<Vec<_>>(), "patron {id}'s address by its patron");
        assert_eq!(repo.get(&id).await?, want, "patron {id}'s address by its `_id`");
        assert_eq!(repo.count(Filter::new(doc! {"_id": id})).await?, u64::from(want.is_some()));
        all.extend(want);
    }
    let mut read = repo.find(Filter::all()).to_vec().await?;
    read.sort_by_key(|a| a.id);
    assert_eq!(read, all, "every address");
    Ok(())
}

/// The invariant of the move under a fleet, for each seed: the embedded
/// addresses and the address documents hold one relation, after a run
/// cut at a moment the seed draws and resumed while both versions write.
#[tokio::test]
async fn the_address_becomes_a_document_while_both_versions_write() -> docrel::Result<()> {
    new_version();
    let plain = seeds(SEEDS_VARIABLE, "1").into_iter().map(|s| (s, false));
    for (seed, faulted) in plain.chain(seeds(FAULT_SEEDS_VARIABLE, "2").into_iter().map(|s| (s, true))) {
        println!("seed {seed}{}", if faulted { ", with fail points" } else { "" });
        fleet(seed, faulted).await?;
    }
    Ok(())
}

async fn fleet(seed: u64, faulted: bool) -> docrel::Result<()> {
    let t = seeded("mo_fleet").await?;
    let (program, declared) = (stored::program(), declared("mo_addresses"));
    assert_eq!(declared.len(), 1, "v2 declares the move of the address");

    // The plan, from the attributes and the data.
    let plan = moves::plan(&t.db, &program, &declared, false).await?.remove(0);
    let text = plan.to_text();
    assert!(plan.refusals.is_empty(), "{text}");
    assert!(text.contains(": one-to-one embedded document → a document of its own whose `_id` is its parent's"));
    assert!(text.contains("to move: 6 document(s), one per parent"), "{text}");
    assert!(text.contains("bound: `mo_patrons.address` is one document while both shapes are kept"), "{text}");
    let counts = plan.counts.clone().expect("counted");
    assert_eq!((counts.parents, counts.elements, counts.largest_array), (6, 6, 1), "{text}");
    assert_eq!(counts.key_types, ["long"], "the patrons' `_id`s become the addresses'");

    // Patrons no writer touches: only the copy moves their addresses.
    let cold: Vec<BsonDoc> = COLD
        .map(|p| doc! {"_id": p, "name": "cold", "address": {"street": format!("{p} quai"), "city": "Sète"}})
        .collect();
    t.db.collection::<BsonDoc>("mo_patrons").insert_many(cold).await.map_err(err)?;

    // The new version reads through the patrons before anything moved,
    // and its writes of addresses wait for the move.
    assert_reads(&t.db).await?;
    let early = v2::Address { id: 0, patron: 0, street: "early".into(), city: "Nice".into() };
    let refused = v2::Address::repo(&t.db).insert(&early).await.expect_err("no move under way");
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
        janitor: "mo-janitor",
        stop: STOP,
    };
    let stdout = run_move(&history, old, |db, n| Box::pin(new_write(db, n))).await?;
    let writes: u64 = stdout.lines().find_map(|l| l.strip_prefix("@writes ")?.parse().ok()).expect("it counted");
    assert!(faulted || writes > 10, "the old version wrote during the move: {writes}");
    assert_eq!(stored::active_moves(&t.db).first().map(|m| m.state), Some(MoveState::Switched));
    let held = assert_one_relation(&t.db).await?;
    assert!(held > 0, "some patrons hold an address: {:?}", raw(&t.db, "mo_patrons").await?);

    // Retired, with the old field dropped, once the old version's lease ran out.
    tokio::time::sleep(LEASE * 2).await;
    let retired = moves::retire(&t.db, &declared, true, LEASE, || false, |_| {}).await?;
    assert!(retired.iter().all(|r| r.complete), "{retired:?}");
    assert!(raw(&t.db, "mo_patrons").await?.iter().all(|p| !p.contains_key("address")));
    assert_eq!(raw(&t.db, "mo_addresses").await?.len(), held, "every address stays a document");
    Ok(())
}

/// While both shapes are kept, the new version cannot write what the old
/// field cannot hold, and nothing is written: an address whose `_id` is
/// not its patron's, or no card where the old type requires one. What it
/// can hold is written to both shapes.
#[tokio::test]
async fn writes_the_old_field_cannot_hold_are_refused() -> docrel::Result<()> {
    new_version();
    let t = seeded("mo_refused").await?;
    let program = stored::program();
    for collection in ["mo_addresses", "mo_cards"] {
        let reports = moves::run(&t.db, &program, &declared(collection), LEASE, || false, |_| {}).await?;
        assert!(reports.iter().all(moves::MoveReport::switched), "{reports:?}");
    }
    let before = (raw(&t.db, "mo_patrons").await?, raw(&t.db, "mo_addresses").await?);
    assert_eq!(before.1.len(), 6, "the six addresses were copied");

    let stray = v2::Address { id: 77, patron: 3, street: "stray".into(), city: "Metz".into() };
    let e = v2::Address::repo(&t.db).insert(&stray).await.expect_err("its `_id` is not its patron's");
    assert!(matches!(e, Error::Invalid { what: Misuse::MovedWrite, .. }), "{e}");
    assert!(e.to_string().contains("insert it with `_id` 3") && e.to_string().contains("nothing was written"), "{e}");
    assert_eq!((raw(&t.db, "mo_patrons").await?, raw(&t.db, "mo_addresses").await?), before, "nothing written");

    let orphan = v2::Address { id: 99, patron: 99, street: "nowhere".into(), city: "Metz".into() };
    let e = v2::Address::repo(&t.db).insert(&orphan).await.expect_err("patron 99 is not stored");
    assert!(matches!(e, Error::Invalid { what: Misuse::MovedWrite, .. }), "{e}");
    assert!(e.to_string().contains("`mo_patrons` 99 is not stored"), "{e}");
    assert_eq!((raw(&t.db, "mo_patrons").await?, raw(&t.db, "mo_addresses").await?), before, "nothing written");

    let e = v2::Card::repo(&t.db).delete_by_id(&1).await.expect_err("the old version requires a card");
    assert!(matches!(e, Error::Invalid { what: Misuse::MovedWrite, .. }), "{e}");
    assert!(e.to_string().contains("`Member::card` is required"), "{e}");
    assert_eq!(raw(&t.db, "mo_cards").await?.len(), 3, "the card stays");

    // What the old field holds, both shapes hold: patron 3 had none.
    let third = v2::Address { id: 3, patron: 3, street: "3 quai Sud".into(), city: "Metz".into() };
    v2::Address::repo(&t.db).insert(&third).await?;
    assert!(v2::Address::repo(&t.db).delete_by_id(&0).await?);
    let patrons = raw(&t.db, "mo_patrons").await?;
    assert_eq!(patrons[3].get_document("address").unwrap(), &doc! {"street": "3 quai Sud", "city": "Metz"});
    assert!(!patrons[0].contains_key("address"), "{}", patrons[0]);
    assert_one_relation(&t.db).await?;
    // A patron the new version deletes takes its address with it.
    assert!(v2::Patron::repo(&t.db).delete_by_id(&1).await?);
    assert!(!raw(&t.db, "mo_addresses").await?.iter().any(|a| a.get_i64("_id").ok() == Some(1)));
    assert_one_relation(&t.db).await?;
    let cards = raw(&t.db, "mo_cards").await?;
    let card = (cards[1].get_i64("_id").ok(), cards[1].get_i64("member").ok(), cards[1].get_str("number").ok());
    assert_eq!(card, (Some(1), Some(1), Some("c1")), "{}", cards[1]);
    Ok(())
}

/// From the command line, with the new version's export: `schema diff`
/// plans both moves, `schema apply` runs them to switched, `schema
/// status` shows them, and `schema retire --drop-old`, with no old version
/// running, removes the old fields; the documents stay.
#[tokio::test]
async fn the_command_line_moves_the_documents_out() -> docrel::Result<()> {
    new_version();
    let t = seeded("mo_cli").await?;
    let file = std::env::temp_dir().join(format!("docrel_mo_{}.json", std::process::id()));
    std::fs::write(&file, docrel::schema::export()).expect("export written");
    let path = file.to_str().expect("a UTF-8 path");
    let (exit, out, err) = admin(&t.db, &["schema", "diff", "--file", path, "--no-probe"]).await;
    assert_eq!(exit, Exit::Found, "{err}");
    assert!(out.contains("mo_patrons.address → mo_addresses: one-to-one embedded document"), "{out}");
    assert!(out.contains("to move: 6 document(s), one per parent"), "{out}");
    assert!(out.contains("to move: 3 document(s), one per parent"), "{out}");

    let (exit, _, err) = admin(&t.db, &["schema", "apply", "--file", path, "--wait", "0"]).await;
    assert_eq!(exit, Exit::Ok, "{err}");
    assert!(err.contains("mo_patrons.address → mo_addresses: switched"), "{err}");
    assert!(err.contains("mo_members.card → mo_cards: switched"), "{err}");
    assert_eq!(assert_one_relation(&t.db).await?, 6);
    let (exit, out, _) = admin(&t.db, &["schema", "status"]).await;
    assert_eq!(exit, Exit::Ok);
    assert!(out.contains("mo_patrons.address → mo_addresses") && out.contains("switched"), "{out}");

    let retire = ["schema", "retire", "--file", path, "--drop-old", "--lease", "0.05", "--json"];
    let (exit, out, err) = admin(&t.db, &retire).await;
    assert_eq!(exit, Exit::Ok, "{err}");
    let reports: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert!(reports.as_array().is_some_and(|r| r.len() == 2 && r.iter().all(|r| r["complete"] == true)), "{out}");
    assert!(raw(&t.db, "mo_patrons").await?.iter().all(|p| !p.contains_key("address")));
    assert!(raw(&t.db, "mo_members").await?.iter().all(|m| !m.contains_key("card")));
    assert_eq!((raw(&t.db, "mo_addresses").await?.len(), raw(&t.db, "mo_cards").await?.len()), (6, 3));
    let _ = std::fs::remove_file(&file);
    Ok(())
}

/// A parent whose `_id` the new type's `_id` cannot hold refuses the move
/// in the plan, and `schema apply` writes nothing.
#[tokio::test]
async fn a_parent_id_the_new_type_cannot_hold_refuses_the_move() -> docrel::Result<()> {
    new_version();
    let t = seeded("mo_plan").await?;
    let odd = doc! {"_id": "p-x", "name": "odd", "address": {"street": "1 rue Haute", "city": "Lyon"}};
    t.db.collection::<BsonDoc>("mo_patrons").insert_one(odd).await.map_err(err)?;
    let (program, moves) = (stored::program(), declared("mo_addresses"));
    let plan = moves::plan(&t.db, &program, &moves, false).await?.remove(0);
    let text = plan.to_text();
    let said = "refused: parents holding `mo_patrons.address` have `_id`s of type `string`, which become the new \
                documents' `_id`, where `Address`'s `_id` is `i64`: declare it so";
    assert!(text.contains(said), "{text}");
    let e = moves::run(&t.db, &program, &moves, LEASE, || false, |_| {}).await.expect_err("refused");
    assert!(e.to_string().contains("is refused, nothing was written"), "{e}");
    assert!(stored::load_moves(&t.db).await?.is_empty());
    assert!(raw(&t.db, "mo_addresses").await?.is_empty());
    Ok(())
}
