//! The replacement parts catalog of *6 Rules of Thumb*, parts 1 and 2:
//! products reference their parts (one-to-many), each product keeps the
//! names of its parts (denormalizing many -> one) and each part keeps the
//! name and catalog number of its product (one -> many).
//!
//! ```text
//! parts:    {_id, partno, name, product, product_name, product_catalog_number, qty, cost, price}
//! products: {_id, name, manufacturer, catalog_number, parts: [{id, name}]}
//! ```
//!
//! Run: `MONGODB_URI=mongodb://... cargo run --example catalog` (database
//! `DOCREL_DB`, default `docrel_catalog`; dropped first, left in place).

use docrel::bson::{doc, oid::ObjectId, Document as BsonDoc};
use docrel::mongodb::Database;
use docrel::{Document, Embedded, Filter, View};
use serde::{Deserialize, Serialize};

#[path = "common/mod.rs"]
pub mod common;

// ANCHOR: schema
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "parts")]
pub struct Part {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[document(unique)]
    pub partno: String,
    pub name: String,
    /// The product the part is made for (the copies below come through it).
    #[reference(to = Product)]
    pub product: ObjectId,
    #[denormalize(from = Product::name, via = product)]
    pub product_name: String,
    #[denormalize(from = Product::catalog_number, via = product)]
    pub product_catalog_number: i32,
    pub qty: i32,
    pub cost: f64,
    pub price: f64,
}

/// An element of `products.parts`: the part's id and a copy of its name.
#[derive(Embedded, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct PartRef {
    pub id: ObjectId,
    #[denormalize(from = Part::name)]
    pub name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "products")]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
    pub manufacturer: String,
    #[document(unique)]
    pub catalog_number: i32,
    /// "never more than a couple thousand or so"
    #[reference(many, to = Part, max = 2000)]
    pub parts: Vec<PartRef>,
}

/// What a product page shows of each part: only these fields travel.
#[derive(View, Deserialize, Debug)]
#[view(of = Part)]
pub struct PartLine {
    pub partno: String,
    pub name: String,
    pub qty: i32,
    pub price: f64,
}
// ANCHOR_END: schema

/// The ids the scenario created.
#[derive(Debug, Clone)]
pub struct Catalog {
    /// The left-handed smoke shifter (catalog number 1234) and the right-handed one.
    pub products: Vec<ObjectId>,
    /// #4 grommet, fan blade assembly, power switch, washer.
    pub parts: Vec<ObjectId>,
}

fn part(partno: &str, name: &str, product: ObjectId, qty: i32, cost: f64, price: f64) -> Part {
    Part {
        id: ObjectId::new(),
        partno: partno.into(),
        name: name.into(),
        product,
        // Filled from the product on insert.
        product_name: String::new(),
        product_catalog_number: 0,
        qty,
        cost,
        price,
    }
}

/// The two products and four parts of the catalog, in a fresh database.
pub async fn seed(db: &Database, log: &common::Log) -> docrel::Result<Catalog> {
    log.step("create the indexes of parts and products", async {
        Part::repo(db).ensure_indexes().await?;
        Product::repo(db).ensure_indexes().await
    })
    .await?;
    let (left, right) = (ObjectId::new(), ObjectId::new());
    let parts = vec![
        part("123-aff-456", "#4 grommet", left, 94, 0.94, 3.99),
        part("123-aff-457", "fan blade assembly", left, 12, 8.50, 24.99),
        part("123-aff-458", "power switch", left, 31, 2.10, 7.49),
        part("123-aff-459", "washer", right, 500, 0.05, 0.25),
    ];
    let refs = |ix: &[usize]| ix.iter().map(|&i| PartRef { id: parts[i].id, name: parts[i].name.clone() }).collect();
    let products = vec![
        Product {
            id: left,
            name: "left-handed smoke shifter".into(),
            manufacturer: "Acme Corp".into(),
            catalog_number: 1234,
            parts: refs(&[0, 1, 2]),
        },
        // Parts can be shared: the grommet is in both products (N-to-N without a join table).
        Product {
            id: right,
            name: "right-handed smoke shifter".into(),
            manufacturer: "Acme Corp".into(),
            catalog_number: 1235,
            parts: refs(&[0, 3]),
        },
    ];
    log.step("insert 2 products, each listing its parts as {id, name}", Product::repo(db).insert_many(&products))
        .await?;
    log.step("insert 4 parts; their product copies are filled from products", Part::repo(db).insert_many(&parts))
        .await?;
    Ok(Catalog { products: vec![left, right], parts: parts.iter().map(|p| p.id).collect() })
}

pub async fn scenario(db: &Database, log: &common::Log) -> docrel::Result<Catalog> {
    log.title("catalog: products reference their parts, and both sides keep copies of the other's names");
    let ids = seed(db, log).await?;

    let product = log
        .step(
            "find the product with catalog number 1234",
            Product::repo(db).find(Product::fields().catalog_number.eq(1234)).one(),
        )
        .await?;
    if let Some(p) = &product {
        let names: Vec<&str> = p.parts.iter().map(|r| r.name.as_str()).collect();
        log.show(format!("{} by {}: parts {names:?} (names copied, no join needed)", p.name, p.manufacturer));
    }

    let products = log
        .step(
            "load every product",
            Product::repo(db).find(Filter::all()).sort(Product::fields().catalog_number.asc()).to_vec(),
        )
        .await?;
    let lines = log
        .step(
            "load the parts of every product (one $in, projected on PartLine)",
            Product::rels().parts.load::<PartLine>(db, &products),
        )
        .await?;
    for (i, p) in products.iter().enumerate() {
        log.show(format!("{} ({}):", p.name, p.catalog_number));
        for line in lines.of(i) {
            log.show(format!("  {} {:<20} qty {:>3}  ${:.2}", line.partno, line.name, line.qty, line.price));
        }
    }

    log.step(
        "rename part #4 grommet: the products holding it follow",
        Part::repo(db).update_by_id(&ids.parts[0], Part::fields().name.set("#4 grommet, stainless".into())),
    )
    .await?;
    log.step(
        "rename product 1234 and renumber it: its parts follow",
        Product::repo(db).update_by_id(
            &ids.products[0],
            Product::fields()
                .name
                .set("left-handed smoke shifter, mk II".into())
                .and(Product::fields().catalog_number.set(4321)),
        ),
    )
    .await?;

    // Read back with the raw driver: what any other client sees.
    let products: Vec<BsonDoc> = log.step("read the products as stored", raw_all(db, "products")).await?;
    for p in &products {
        let names: Vec<&str> =
            p.get_array("parts").into_iter().flatten().filter_map(|e| e.as_document()?.get_str("name").ok()).collect();
        log.show(format!("{}: parts {names:?}", p.get_str("name").unwrap_or("?")));
    }
    let parts: Vec<BsonDoc> = log.step("read the parts as stored", raw_all(db, "parts")).await?;
    for p in &parts {
        log.show(format!(
            "{}: product_name {:?}, product_catalog_number {}",
            p.get_str("name").unwrap_or("?"),
            p.get_str("product_name").unwrap_or("?"),
            p.get_i32("product_catalog_number").unwrap_or_default()
        ));
    }
    Ok(ids)
}

/// Every document of a collection, as stored, in `_id` order.
async fn raw_all(db: &Database, collection: &str) -> docrel::Result<Vec<BsonDoc>> {
    use futures::TryStreamExt;
    let coll = db.collection::<BsonDoc>(collection);
    let cursor =
        coll.find(doc! {}).sort(doc! {"_id": 1}).await.map_err(|e| docrel::Error::driver("find", collection, e))?;
    cursor.try_collect().await.map_err(|e| docrel::Error::driver("find", collection, e))
}

#[tokio::main]
async fn main() {
    common::finish("catalog", run().await);
}

async fn run() -> docrel::Result<()> {
    let (db, log) = common::open("catalog").await?;
    scenario(&db, &log).await?;
    common::done(&db);
    Ok(())
}
