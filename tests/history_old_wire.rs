//! The history checker (see `tests/history.rs`) on the write paths of a
//! server before MongoDB 8.0: no client-level `bulkWrite`, so a source
//! update and its fan-outs go as separate commands. The embedded server
//! reports 8.2; this binary makes docrel take it for 7.0 (wire version 21)
//! in both processes of each history, through `DOCREL_PRETEND_WIRE_VERSION`
//! (set before anything connects, inherited by the second process). Two of
//! the CI seeds, so both paths are checked on every run; a big run of the
//! old path: `DOCREL_PRETEND_WIRE_VERSION=21 cargo run --example history -- ..`.

#[path = "history/mod.rs"]
mod history;

/// Before any test of this binary connects (and in the second process,
/// which runs this binary again).
fn before_8_0() {
    std::env::set_var("DOCREL_PRETEND_WIRE_VERSION", "21");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histories_on_the_paths_before_8_0_keep_derived_data_true() {
    before_8_0();
    the_old_path_runs().await;
    let mut settings = history::Settings::from_env().expect("the DOCREL_HISTORY_* variables");
    if std::env::var("DOCREL_HISTORY_SEEDS").is_err() {
        settings.seeds = vec![5, 6];
    }
    let reports = history::run_all(&settings).await.expect("the histories ran");
    let failures = history::failures(&reports);
    assert!(
        failures.is_empty(),
        "{} of {} histories on the paths before MongoDB 8.0 broke the contract (details above):\n{}",
        failures.len(),
        reports.len(),
        failures.join("\n")
    );
}

/// The histories' own schema takes the separate commands here: a rename of
/// a product copied into its parts is its `update`, then the parts'.
async fn the_old_path_runs() {
    use history::schema::Product;
    let t = docrel::testing::TestDb::new("history_old_wire_path").await.expect("a test database");
    let product = Product { id: docrel::bson::oid::ObjectId::new(), name: "shifter".into(), parts: Vec::new() };
    Product::repo(&t.db).insert(&product).await.expect("insert");
    let mark = t.trips.mark();
    let rename = Product::fields().name.set("lever".into());
    Product::repo(&t.db).update_by_id(&product.id, rename).await.expect("rename");
    assert_eq!(t.trips.commands_since(mark), ["update products", "update parts"]);
}

/// Does nothing in a test run; in the second process of a history (this
/// binary started again by `history::process`), runs its job.
#[test]
fn history_child_process() {
    if !history::process::is_child() {
        return;
    }
    before_8_0();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    if let Err(e) = rt.block_on(history::process::child_main()) {
        panic!("the second process of a history failed: {e}");
    }
}
