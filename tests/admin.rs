//! The admin command line (`docrel::admin::run`, what `examples/admin_cli.rs`
//! calls through `docrel::admin::main`) against the server, on the example
//! schemas, each test in a database of its own seeded with the raw driver:
//! each subcommand, its findings and its exit code.
#![allow(
    clippy::duplicate_mod,
    reason = "each example is a program of its own that includes examples/common; here they are modules of one \
              program, each with its own copy"
)]

use docrel::admin::{run, Console, Exit};
use docrel::bson::{doc, oid::ObjectId, Bson, DateTime, Document as BsonDoc};
use docrel::testing::TestDb;
use std::time::Duration;

#[allow(dead_code)]
#[path = "../examples/blog.rs"]
mod blog;
#[allow(dead_code)]
#[path = "../examples/catalog.rs"]
mod catalog;
#[allow(dead_code)]
#[path = "../examples/library.rs"]
mod library;
#[allow(dead_code)]
#[path = "../examples/logging.rs"]
mod logging;
#[allow(dead_code)]
#[path = "../examples/patrons.rs"]
mod patrons;
#[allow(dead_code)]
#[path = "../examples/reviews.rs"]
mod reviews;
#[allow(dead_code)]
#[path = "../examples/tasks.rs"]
mod tasks;

/// What one command did.
struct Ran {
    exit: Exit,
    out: String,
    err: String,
}

/// Runs `admin --db <the test's database> args..` until it ends.
async fn admin(t: &TestDb, args: &[&str]) -> Ran {
    admin_until(t, args, std::future::pending()).await
}

async fn admin_until(t: &TestDb, args: &[&str], shutdown: impl std::future::Future<Output = ()> + Send) -> Ran {
    let mut console = Console::captured();
    let mut full = vec!["admin", "--db", t.db.name()];
    full.extend_from_slice(args);
    let exit = run(full, &mut console, shutdown).await;
    Ran { exit, out: console.output(), err: console.errors() }
}

async fn insert(t: &TestDb, collection: &str, docs: Vec<BsonDoc>) {
    t.db.collection::<BsonDoc>(collection).insert_many(docs).await.expect("raw insert");
}

async fn one(t: &TestDb, collection: &str, filter: BsonDoc) -> BsonDoc {
    t.db.collection::<BsonDoc>(collection).find_one(filter).await.expect("raw read").expect("a document")
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}):\n{text}"))
}

/// The findings of a doctor report (JSON) about `field`, by rule.
fn findings<'a>(report: &'a serde_json::Value, rule: &str, field: &str) -> Vec<&'a serde_json::Value> {
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["rule"] == rule && f["field"] == field)
        .collect()
}

/// One host with 250 messages in its subset (rule 3: a couple of hundred),
/// a part renamed 12 times by another client while its copies were never
/// read (rule 5), a task whose owner does not exist (dangling), and every
/// index but one (`people {tasks: 1}`).
async fn seed_doctor(t: &TestDb) {
    let lines: Vec<Bson> = (0..250)
        .map(|i| Bson::Document(doc! {"time": DateTime::from_millis(1_000 * i), "message": format!("line {i}")}))
        .collect();
    insert(t, "hosts", vec![doc! {"_id": ObjectId::new(), "name": "web1", "ipaddr": "10.0.0.1", "logmsgs": lines}])
        .await;
    let part = ObjectId::new();
    let product = ObjectId::new();
    insert(
        t,
        "parts",
        vec![doc! {"_id": part, "partno": "p-1", "name": "grommet", "product": product, "product_name": "shifter",
        "product_catalog_number": 1, "qty": 1, "cost": 1.0, "price": 2.0}],
    )
    .await;
    insert(
        t,
        "products",
        vec![doc! {"_id": product, "name": "shifter", "manufacturer": "Acme", "catalog_number": 1,
        "parts": [{"id": part, "name": "grommet"}]}],
    )
    .await;
    for i in 0..12 {
        t.db.collection::<BsonDoc>("parts")
            .update_one(doc! {"_id": part}, doc! {"$set": {"name": format!("grommet v{i}")}})
            .await
            .expect("raw update");
    }
    let person = ObjectId::new();
    insert(t, "people", vec![doc! {"_id": person, "name": "Kate", "tasks": []}]).await;
    insert(
        t,
        "tasks",
        vec![
            doc! {"_id": ObjectId::new(), "description": "lost", "due_date": DateTime::now(), "owner": ObjectId::new()},
        ],
    )
    .await;
}

#[tokio::test]
async fn doctor_names_each_rule_field_figure_and_fix_with_exit_codes() {
    let t = TestDb::new("admin_doctor").await.expect("server");
    seed_doctor(&t).await;
    let applied = admin(&t, &["indexes", "apply"]).await;
    assert_eq!(applied.exit, Exit::Ok, "{}{}", applied.out, applied.err);
    assert!(applied.out.contains("created people {tasks: 1}"), "{}", applied.out);
    t.db.collection::<BsonDoc>("people").drop_index("tasks_1").await.expect("drop one index");

    let plan = admin(&t, &["indexes", "plan"]).await;
    assert_eq!(plan.exit, Exit::Found, "a plan with a change to apply exits 1:\n{}", plan.out);
    assert!(plan.out.contains("+ people           {tasks: 1}"), "{}", plan.out);
    assert!(plan.out.contains("= parts            {partno: 1} unique"), "{}", plan.out);

    let doctor = admin(&t, &["doctor", "--json"]).await;
    // Warnings only: the default `--fail-on error` passes.
    assert_eq!(doctor.exit, Exit::Ok, "{}{}", doctor.out, doctor.err);
    let report = json(&doctor.out);

    let rule3 = findings(&report, "rule 3", "hosts.logmsgs");
    assert_eq!(rule3.len(), 1, "{report:#}");
    assert_eq!(rule3[0]["severity"], "warning");
    assert!(rule3[0]["figure"].as_str().unwrap().contains("max 250 elements"), "{}", rule3[0]);
    assert!(rule3[0]["figure"].as_str().unwrap().contains("(200)"), "{}", rule3[0]);
    assert!(rule3[0]["fix"].as_str().unwrap().contains("subset"), "{}", rule3[0]);
    let logmsgs = report["arrays"].as_array().unwrap().iter().find(|a| a["field"] == "logmsgs").expect("measured");
    assert_eq!((logmsgs["lengths"]["p50"].as_u64(), logmsgs["lengths"]["max"].as_u64()), (Some(250), Some(250)));
    assert_eq!(logmsgs["declared_max"].as_u64(), Some(1000));

    let rule5 = findings(&report, "rule 5", "products.parts[].name");
    assert_eq!(rule5.len(), 1, "{report:#}");
    assert!(rule5[0]["figure"].as_str().unwrap().contains("`parts` written 12 times (any field)"), "{}", rule5[0]);
    // `top` counts writes of any field of `parts`: a hint, not a measure.
    assert_eq!(rule5[0]["severity"], "info");
    assert!(rule5[0]["fix"].as_str().unwrap().contains("drop the copy"), "{}", rule5[0]);
    let measured = report["copies"].as_array().unwrap().iter().find(|c| c["copy"] == "products.parts[].name").unwrap();
    assert_eq!(measured["measured_from"], "top", "this server's profiler is off by default: `top` it is");

    let dangling = findings(&report, "dangling", "tasks.owner");
    assert_eq!(dangling.len(), 1, "{report:#}");
    assert!(dangling[0]["figure"].as_str().unwrap().starts_with("1 of 1 referenced ids do not exist in `people`"));

    let index = findings(&report, "index", "people");
    assert_eq!(index.len(), 1, "{report:#}");
    assert_eq!(index[0]["severity"], "warning");
    assert!(index[0]["figure"].as_str().unwrap().contains("`{tasks: 1}`"), "{}", index[0]);
    // Nothing else: every other index exists, and the rest follows the rules.
    assert_eq!(report["findings"].as_array().unwrap().len(), 4, "{report:#}");
    assert!(report["notes"].to_string().contains("`$indexStats`"), "the notes say what the server could tell");

    // Exit codes a CI job uses.
    assert_eq!(admin(&t, &["doctor", "--fail-on", "warning"]).await.exit, Exit::Found);
    assert_eq!(admin(&t, &["doctor", "--fail-on", "never"]).await.exit, Exit::Ok);
    let bad = admin(&t, &["doctor", "--fail-on", "sometimes"]).await;
    assert_eq!((bad.exit, bad.exit.code()), (Exit::Usage, 2));

    // The text report and the page say the same.
    let page = std::env::temp_dir().join(format!("{}.html", t.db.name()));
    let text = admin(&t, &["doctor", "--html", page.to_str().unwrap()]).await;
    assert!(text.out.contains("WARNING rule 3   hosts.logmsgs"), "{}", text.out);
    assert!(text.out.contains("rule 5 from the server's `top` counters"), "{}", text.out);
    let html = std::fs::read_to_string(&page).expect("the page");
    let _ = std::fs::remove_file(&page);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.matches("<svg").count() >= 4, "histograms and the diagram");
    assert!(html.contains("hosts.logmsgs") && html.contains("16 MiB") && html.contains("max 1000"));
}

#[tokio::test]
async fn rule_five_from_the_profiler_counts_writes_of_the_copied_field_only() {
    let t = TestDb::new("admin_profiler").await.expect("server");
    t.db.run_command(doc! {"profile": 2}).await.expect("profiler on");
    let part = ObjectId::new();
    let product = ObjectId::new();
    insert(&t, "parts", vec![doc! {"_id": part, "partno": "p-1", "name": "grommet", "product": product, "qty": 0}])
        .await;
    insert(&t, "products", vec![doc! {"_id": product, "name": "shifter", "parts": [{"id": part, "name": "grommet"}]}])
        .await;
    let parts = t.db.collection::<BsonDoc>("parts");
    for i in 0..11 {
        parts.update_one(doc! {"_id": part}, doc! {"$set": {"name": format!("grommet v{i}")}}).await.unwrap();
    }
    // Writes of a field nothing copies do not count.
    for i in 0..20 {
        parts.update_one(doc! {"_id": part}, doc! {"$set": {"qty": i}}).await.unwrap();
    }
    t.db.collection::<BsonDoc>("products").find_one(doc! {}).await.unwrap();
    let doctor = admin(&t, &["doctor", "--json", "--fail-on", "warning"]).await;
    t.db.run_command(doc! {"profile": 0}).await.expect("profiler off");
    assert_eq!(doctor.exit, Exit::Found, "{}{}", doctor.out, doctor.err);
    let report = json(&doctor.out);
    let rule5 = findings(&report, "rule 5", "products.parts[].name");
    assert_eq!(rule5.len(), 1, "{report:#}");
    assert_eq!(rule5[0]["severity"], "warning");
    let figure = rule5[0]["figure"].as_str().unwrap();
    assert!(
        figure.starts_with("`parts` written 11 times in `name`, the copies' collection `products` read 1 times"),
        "{figure}"
    );
    assert!(report["notes"].to_string().contains("rule 5 from the profiler"));
}

#[tokio::test]
async fn verify_finds_and_repair_fixes_copies_inverses_subsets_and_buckets() {
    let t = TestDb::new("admin_verify").await.expect("server");
    // A copy another client made stale.
    let part = ObjectId::new();
    insert(&t, "parts", vec![doc! {"_id": part, "partno": "p-1", "name": "brass grommet"}]).await;
    insert(
        &t,
        "products",
        vec![doc! {"_id": ObjectId::new(), "name": "shifter", "parts": [{"id": part, "name": "grommet"}]}],
    )
    .await;
    // A task naming a person whose list lacks it.
    let person = ObjectId::new();
    let task = ObjectId::new();
    insert(&t, "people", vec![doc! {"_id": person, "name": "Kate", "tasks": []}]).await;
    insert(&t, "tasks", vec![doc! {"_id": task, "description": "write", "due_date": DateTime::now(), "owner": person}])
        .await;
    // A review its product's subset does not show.
    insert(&t, "products", vec![doc! {"_id": 1, "name": "camera", "reviews": []}]).await;
    insert(
        &t,
        "reviews",
        vec![
            doc! {"_id": ObjectId::new(), "review_id": 7, "product_id": 1, "review_author": "ann", "review_text": "ok",
            "published_date": DateTime::from_millis(5)},
        ],
    )
    .await;
    // A page whose count says 3 for one comment.
    insert(
        &t,
        "comments",
        vec![doc! {"_id": ObjectId::new(), "blog_entry_id": 1, "page": 1, "count": 3,
        "comments": [{"name": "bob", "created_on": DateTime::now(), "comment": "hi"}]}],
    )
    .await;

    let verify = admin(&t, &["verify"]).await;
    assert_eq!(verify.exit, Exit::Found, "{}{}", verify.out, verify.err);
    for line in [
        "copies   copies from parts",
        "inverse  inverse people.tasks <-> tasks.owner",
        "subset   subset products.reviews of reviews",
        "bucket   buckets comments.comments",
    ] {
        let found =
            verify.out.lines().find(|l| l.starts_with(line)).unwrap_or_else(|| panic!("{line}:\n{}", verify.out));
        assert!(found.contains("found    1  fixed    0"), "{found}");
    }
    let report = json(&admin(&t, &["verify", "--json"]).await.out);
    assert_eq!(report["dry_run"], false);

    let dry = admin(&t, &["repair", "--dry-run"]).await;
    assert_eq!(dry.exit, Exit::Found, "a dry run leaves the problems: {}", dry.out);
    assert!(dry.out.contains("(dry run: nothing written)"), "{}", dry.out);

    let repair = admin(&t, &["repair"]).await;
    assert_eq!(repair.exit, Exit::Ok, "{}{}", repair.out, repair.err);
    assert!(repair.out.contains("4 problems found, 4 fixed"), "{}", repair.out);
    assert_eq!(admin(&t, &["verify"]).await.exit, Exit::Ok);

    let stored = one(&t, "people", doc! {"_id": person}).await;
    assert_eq!(stored.get_array("tasks").unwrap(), &vec![Bson::ObjectId(task)], "the task's owner is the truth");
    let stored = one(&t, "products", doc! {"_id": 1}).await;
    assert_eq!(stored.get_array("reviews").unwrap().len(), 1);
    assert_eq!(one(&t, "comments", doc! {}).await.get_i32("count").unwrap(), 1);
    let stored = one(&t, "products", doc! {"parts.id": part}).await;
    assert_eq!(stored.get_array("parts").unwrap()[0].as_document().unwrap().get_str("name").unwrap(), "brass grommet");

    // Limited to one collection; an unknown one is a usage error naming the known ones.
    let only = admin(&t, &["verify", "comments"]).await;
    assert_eq!(only.exit, Exit::Ok);
    assert!(only.out.contains("buckets comments.comments") && !only.out.contains("copies from"), "{}", only.out);
    let unknown = admin(&t, &["verify", "nope"]).await;
    assert_eq!(unknown.exit, Exit::Usage);
    assert!(unknown.err.contains("nothing derived involves collection `nope`") && unknown.err.contains("comments"));
}

#[tokio::test]
async fn repair_interrupted_half_way_resumes_and_fixes_nothing_twice() {
    const PRODUCTS: usize = 60;
    let t = TestDb::new("admin_resume").await.expect("server");
    let first_product = ObjectId::new();
    let grommet = catalog::Part {
        id: ObjectId::new(),
        partno: "123-aff-456".into(),
        name: "#4 grommet".into(),
        product: first_product,
        product_name: String::new(),
        product_catalog_number: 0,
        qty: 1,
        cost: 1.0,
        price: 2.0,
    };
    let products: Vec<catalog::Product> = (0..PRODUCTS)
        .map(|i| catalog::Product {
            id: if i == 0 { first_product } else { ObjectId::new() },
            name: format!("shifter {i}"),
            manufacturer: "Acme".into(),
            catalog_number: i as i32,
            parts: vec![catalog::PartRef { id: grommet.id, name: grommet.name.clone() }],
        })
        .collect();
    catalog::Product::repo(&t.db).insert_many(&products).await.expect("products");
    catalog::Part::repo(&t.db).insert(&grommet).await.expect("part");
    // Renamed behind docrel's back: every product's copy is stale.
    t.db.collection::<BsonDoc>("parts")
        .update_one(doc! {"_id": grommet.id}, doc! {"$set": {"name": "brass grommet"}})
        .await
        .expect("raw rename");

    // Ctrl-C once half the products are done (a task of its own watches the
    // checkpoint, the way a signal arrives from outside).
    let (ctrl_c, signalled) = tokio::sync::oneshot::channel::<()>();
    let db = t.db.clone();
    let watcher = tokio::spawn(async move {
        loop {
            let saved = db.collection::<BsonDoc>("_docrel_admin").find_one(doc! {"_id": "repair:parts"}).await;
            if saved.ok().flatten().and_then(|d| d.get_i64("done").ok()).is_some_and(|n| n >= PRODUCTS as i64 / 2) {
                let _ = ctrl_c.send(());
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    let half_way = async move {
        let _ = signalled.await;
    };
    let first = admin_until(&t, &["repair", "parts", "--batch", "5", "--json"], half_way).await;
    watcher.abort();
    assert_eq!((first.exit, first.exit.code()), (Exit::Interrupted, 130), "{}{}", first.out, first.err);
    let first_report = json(&first.out);
    assert_eq!(first_report["interrupted"], true);
    // The progress knows its total: 60 products holding copies of parts, 1 part holding copies of a product.
    assert!(first.err.contains("/61 documents"), "{}", first.err);
    let fixed_first = first_report["jobs"][0]["fixed"].as_u64().unwrap();
    assert!((25..=40).contains(&fixed_first), "stopped half way: {fixed_first} fixed\n{}", first.err);
    let stale_left = t.db.collection::<BsonDoc>("products").count_documents(doc! {"parts.name": "#4 grommet"}).await;
    assert_eq!(stale_left.unwrap(), PRODUCTS as u64 - fixed_first);

    let second = admin(&t, &["repair", "parts", "--batch", "5", "--json"]).await;
    assert_eq!(second.exit, Exit::Ok, "{}{}", second.out, second.err);
    assert!(second.err.contains("resuming the checkpoint saved before"), "{}", second.err);
    let second_report = json(&second.out);
    assert_eq!(second_report["interrupted"], false);
    // The job's counts carry over from the first run: every product fixed exactly once.
    assert_eq!(second_report["jobs"][0]["fixed"].as_u64(), Some(PRODUCTS as u64), "{second_report:#}");
    assert_eq!(second_report["jobs"][0]["scanned"].as_u64(), Some(PRODUCTS as u64), "{second_report:#}");
    assert_eq!(second_report["done"].as_u64(), Some(PRODUCTS as u64 + 1));
    assert!(second.err.contains(&format!("{}/61 documents", PRODUCTS + 1)), "{}", second.err);
    let stale_left = t.db.collection::<BsonDoc>("products").count_documents(doc! {"parts.name": "#4 grommet"}).await;
    assert_eq!(stale_left.unwrap(), 0);
    // The checkpoint is gone, and a new repair finds nothing to fix.
    let saved = t.db.collection::<BsonDoc>("_docrel_admin").count_documents(doc! {}).await.unwrap();
    assert_eq!(saved, 0);
    let again = json(&admin(&t, &["repair", "parts", "--json"]).await.out);
    assert_eq!((again["jobs"][0]["found"].as_u64(), again["jobs"][0]["fixed"].as_u64()), (Some(0), Some(0)));
}

#[tokio::test]
async fn sync_follows_deferred_writes_until_shutdown_and_reports_lag() {
    let t = TestDb::new("admin_sync").await.expect("server");
    let host = logging::Host { id: ObjectId::new(), name: "web1".into(), ipaddr: "10.0.0.1".into(), logmsgs: vec![] };
    logging::Host::repo(&t.db).insert(&host).await.expect("host");
    let msg = logging::LogMsg {
        id: ObjectId::new(),
        time: DateTime::now(),
        message: "up".into(),
        ipaddr: String::new(),
        host: host.id,
    };
    logging::LogMsg::repo(&t.db).insert(&msg).await.expect("message");

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let db = t.db.clone();
    let writer = async move {
        // Once the worker has saved its starting position, write in deferred mode.
        loop {
            let saved = db.collection::<BsonDoc>("_docrel_sync").count_documents(doc! {"_id": "admin"}).await;
            if saved.unwrap_or(0) > 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        logging::Host::repo(&db)
            .deferred_fan_out()
            .update_by_id(&host.id, logging::Host::fields().ipaddr.set("10.0.0.2".to_owned()))
            .await
            .expect("deferred write");
        for _ in 0..500 {
            let copy = db.collection::<BsonDoc>("logmsg").find_one(doc! {"_id": msg.id}).await.unwrap().unwrap();
            if copy.get_str("ipaddr").ok() == Some("10.0.0.2") {
                // Long enough for one lag report.
                tokio::time::sleep(Duration::from_millis(1200)).await;
                let _ = stop.send(());
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let _ = stop.send(());
        false
    };
    let shutdown = async {
        let _ = stopped.await;
    };
    let (ran, followed) =
        tokio::join!(admin_until(&t, &["sync", "--report-every", "1", "--checkpoint-every", "1"], shutdown), writer);
    assert!(followed, "the worker applied the deferred fan-out:\n{}", ran.err);
    assert_eq!(ran.exit, Exit::Ok, "{}", ran.err);
    assert!(ran.err.contains("sync `admin` on database"), "{}", ran.err);
    assert!(ran.err.contains("starting from now"), "{}", ran.err);
    assert!(ran.err.contains("changes applied"), "{}", ran.err);
    assert!(ran.err.contains("behind the server's clock") || ran.err.contains("saved"), "{}", ran.err);
    assert!(ran.err.contains("sync: stopped after"), "{}", ran.err);

    // A second run resumes from the stored token.
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let _ = stop.send(());
    let again = admin_until(&t, &["sync"], async {
        let _ = stopped.await;
    })
    .await;
    assert_eq!(again.exit, Exit::Ok, "{}", again.err);
    assert!(again.err.contains("resuming from its stored token"), "{}", again.err);
}

#[tokio::test]
async fn schema_report_help_and_usage_errors() {
    let t = TestDb::new("admin_schema").await.expect("server");
    let schema = admin(&t, &["schema"]).await;
    assert_eq!(schema.exit, Exit::Ok);
    // Two types share `products`: two entities, never merged.
    assert!(schema.out.contains("    products_catalog_Product {"), "{}", schema.out);
    assert!(schema.out.contains("    products_reviews_Product {"), "{}", schema.out);
    assert!(schema.out.contains("parts }o--o| products_catalog_Product : \"product\""), "{}", schema.out);
    assert!(schema.out.contains("products_reviews_Product ||--o{ reviews : \"reviews (subset)\""), "{}", schema.out);
    let as_json = json(&admin(&t, &["schema", "--json"]).await.out);
    assert!(as_json["types"].as_array().unwrap().iter().any(|s| s["collection"] == "comments"));
    let page = std::env::temp_dir().join(format!("{}-schema.html", t.db.name()));
    assert_eq!(admin(&t, &["schema", "--html", page.to_str().unwrap()]).await.exit, Exit::Ok);
    let html = std::fs::read_to_string(&page).expect("the page");
    let _ = std::fs::remove_file(&page);
    assert!(html.contains("<svg") && html.contains("products") && html.contains("(subset)"));

    for sub in ["schema", "indexes", "verify", "repair", "sync", "doctor"] {
        let help = admin(&t, &[sub, "--help"]).await;
        assert_eq!(help.exit, Exit::Ok, "{sub}");
        assert!(help.out.contains("Usage:"), "{sub}: {}", help.out);
    }
    let mut console = Console::captured();
    let no_db = run(["admin", "verify"], &mut console, std::future::pending()).await;
    if std::env::var_os("DOCREL_DB").is_none() {
        assert_eq!(no_db, Exit::Usage);
        assert!(console.errors().contains("name the database: `--db NAME`"), "{}", console.errors());
    }
    assert_eq!(admin(&t, &["frobnicate"]).await.exit, Exit::Usage);
    let unreachable = {
        let mut console = Console::captured();
        let exit = run(
            ["admin", "--uri", "mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=300", "--db", "x", "doctor"],
            &mut console,
            std::future::pending(),
        )
        .await;
        (exit, console.errors())
    };
    assert_eq!(unreachable.0, Exit::Failed, "{}", unreachable.1);
    assert!(unreachable.1.contains("cannot reach MongoDB"), "{}", unreachable.1);
}
