//! Operating a docrel schema, on the catalog's types: the schema report
//! (relationships, fan-outs, indexes, advice, a diagram), the indexes the
//! relationships need, and the verify/repair of denormalized copies after
//! another client changed a source behind docrel's back.
//!
//! Run: `MONGODB_URI=mongodb://... cargo run --example admin` (database
//! `DOCREL_DB`, default `docrel_admin`; dropped first, left in place). The
//! report is also written to `schema.md` in the current directory.

use docrel::bson::{doc, oid::ObjectId};
use docrel::check;
use docrel::check::Report;
use docrel::mongodb::Database;
use std::io::{IsTerminal, Write};

/// The catalog example's types (its `main` is not used here).
#[allow(dead_code)]
#[path = "catalog.rs"]
pub mod catalog;

pub use catalog::common;
use catalog::{Part, PartRef, Product};

/// How many products the scenario makes, all holding the grommet.
pub const PRODUCTS: usize = 120;
/// Products read per repair batch.
pub const BATCH: usize = 20;

/// What the scenario found and did.
#[derive(Debug, Clone)]
pub struct Admin {
    /// The schema report (Markdown).
    pub report: String,
    /// The indexes of parts and products.
    pub indexes: Vec<String>,
    /// The verify after the outside rename, the repair, the verify after it.
    pub before: Report,
    pub repaired: Report,
    pub after: Report,
    /// The products scanned after each repair batch.
    pub progress: Vec<u64>,
}

/// `[#########---------------------] 40/120`
fn bar(done: u64, total: u64) -> String {
    const WIDTH: u64 = 30;
    let filled = (done.min(total) * WIDTH).checked_div(total).unwrap_or(WIDTH);
    format!("[{}{}] {done}/{total}", "#".repeat(filled as usize), "-".repeat((WIDTH - filled) as usize))
}

fn counts(r: &Report) -> String {
    format!("scanned {}, stale {}, dangling {}, fixed {}", r.scanned, r.stale, r.dangling, r.fixed)
}

pub async fn scenario(db: &Database, log: &common::Log) -> docrel::Result<Admin> {
    log.title("admin: the schema report, the indexes, and a repair of stale copies");
    let report = docrel::admin::report::schema_report();
    println!("{report}");

    let indexes = log
        .step("create the indexes of parts and products", async {
            let mut names = Part::repo(db).ensure_indexes().await?;
            names.extend(Product::repo(db).ensure_indexes().await?);
            Ok(names)
        })
        .await?;
    log.show(format!("{indexes:?}"));

    let first = ObjectId::new();
    let parts: Vec<Part> = ["#4 grommet", "fan blade assembly", "power switch", "washer"]
        .iter()
        .enumerate()
        .map(|(i, name)| Part {
            id: ObjectId::new(),
            partno: format!("123-aff-{}", 456 + i),
            name: (*name).into(),
            product: first,
            product_name: String::new(),
            product_catalog_number: 0,
            qty: 10,
            cost: 1.0,
            price: 2.5,
        })
        .collect();
    let products: Vec<Product> = (0..PRODUCTS)
        .map(|i| Product {
            id: if i == 0 { first } else { ObjectId::new() },
            name: format!("smoke shifter #{i}"),
            manufacturer: "Acme Corp".into(),
            catalog_number: 1000 + i as i32,
            parts: [0, 1 + i % 3].iter().map(|&k| PartRef { id: parts[k].id, name: parts[k].name.clone() }).collect(),
        })
        .collect();
    log.step(
        &format!("insert {PRODUCTS} products, every one holding the #4 grommet"),
        Product::repo(db).insert_many(&products),
    )
    .await?;
    log.step("insert their 4 parts", Part::repo(db).insert_many(&parts)).await?;

    // Another client renames the grommet with the plain driver: docrel's
    // fan-out does not run, and every product's copy of the name goes stale.
    log.step("another client renames the grommet, behind docrel's back", async {
        db.collection::<docrel::bson::Document>("parts")
            .update_one(doc! {"_id": parts[0].id}, doc! {"$set": {"name": "#4 grommet, brass"}})
            .await
            .map_err(|e| docrel::Error::driver("update", "parts", e))
    })
    .await?;

    let before = log.step("verify the copies of parts", check::copies::<Part>().verify(db).run()).await?;
    log.show(counts(&before));

    let total = log
        .step("count the products holding copies", Product::repo(db).count(doc! {"parts.id": {"$exists": true}}))
        .await?;
    let mut progress = Vec::new();
    let tty = std::io::stdout().is_terminal();
    let repaired = log
        .step(
            &format!("repair them, {BATCH} products per batch"),
            check::copies::<Part>()
                .repair(db)
                .batch(BATCH)
                .on_progress(|p| {
                    progress.push(p.report.scanned);
                    let line = format!("      {} {}", bar(p.report.scanned, total), p.part);
                    let mut out = std::io::stdout().lock();
                    // A terminal redraws one line; a log gets a line per batch.
                    let _ = if tty { write!(out, "\r{line}") } else { writeln!(out, "{line}") };
                    let _ = out.flush();
                })
                .run(),
        )
        .await;
    if tty {
        println!();
    }
    let repaired = repaired?;
    log.show(counts(&repaired));

    let after = log.step("verify again", check::copies::<Part>().verify(db).run()).await?;
    log.show(counts(&after));
    Ok(Admin { report, indexes, before, repaired, after, progress })
}

#[tokio::main]
async fn main() {
    common::finish("admin", run().await);
}

async fn run() -> docrel::Result<()> {
    let (db, log) = common::open("admin").await?;
    let admin = scenario(&db, &log).await?;
    let path = std::path::absolute("schema.md").unwrap_or_else(|_| "schema.md".into());
    std::fs::write(&path, &admin.report).map_err(|e| docrel::Error::Invalid {
        what: docrel::Misuse::Application("schema report"),
        message: format!("cannot write {}: {e}", path.display()),
    })?;
    println!("the schema report is also in {}", path.display());
    common::done(&db);
    Ok(())
}
