//! A walk through docrel on the reference texts' catalog and logging
//! scenarios: typed documents in, relationships loaded with one `$in` per
//! relation, and the round trips each step cost.
//!
//! Run with `scripts/demo` (starts the embedded server), or against any
//! server: `MONGODB_URI=mongodb://... cargo run --example demo`. The
//! database is `DOCREL_DB` (default `docrel_demo`); it is dropped at the
//! start and left in place at the end for inspection.

use docrel::bson::{oid::ObjectId, DateTime};
use docrel::{client::RoundTrips, Document, Filter, View};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[document(unique)]
    partno: String,
    name: String,
    qty: i32,
    cost: f64,
    price: f64,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "products")]
struct Product {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    manufacturer: String,
    #[document(unique)]
    catalog_number: i32,
    #[reference(many, to = Part, max = 2000, on_delete = pull)]
    parts: Vec<ObjectId>,
}

#[derive(View, Deserialize, Debug)]
#[view(of = Part)]
struct PartLine {
    name: String,
    price: f64,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "hosts")]
struct Host {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    #[document(unique)]
    ipaddr: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "logmsg")]
struct LogMsg {
    #[serde(rename = "_id")]
    id: ObjectId,
    time: DateTime,
    message: String,
    #[parent_ref(to = Host, sort = "-time", on_delete = cascade)]
    host: ObjectId,
}

#[derive(View, Deserialize, Debug)]
#[view(of = LogMsg)]
struct LogLine {
    time: DateTime,
    message: String,
}

struct Step<'a> {
    trips: &'a RoundTrips,
}

impl Step<'_> {
    /// Runs one step and prints what it cost.
    async fn run<T>(
        &self,
        what: &str,
        f: impl std::future::IntoFuture<Output = docrel::Result<T>>,
    ) -> docrel::Result<T> {
        let mark = self.trips.mark();
        let out = f.await?;
        println!("  {what:<62} {} round trip(s)", self.trips.since(mark));
        Ok(out)
    }
}

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("demo failed: {e}");
        std::process::exit(1);
    }
}

async fn run() -> docrel::Result<()> {
    let uri = std::env::var(docrel::client::URI_VARIABLE).unwrap_or_else(|_| "mongodb://127.0.0.1:27017".into());
    let trips = RoundTrips::new();
    let mut options = docrel::client::options(&uri).await?;
    trips.install(&mut options);
    let client = docrel::connect_with(&uri, options).await?;
    let db = client.database(&std::env::var("DOCREL_DB").unwrap_or_else(|_| "docrel_demo".into()));
    db.drop().await.map_err(|e| docrel::Error::driver("dropDatabase", db.name(), e))?;
    let step = Step { trips: &trips };

    println!("catalog: products reference their parts (one-to-many)");
    step.run("ensure the indexes of parts and products", async {
        Part::repo(&db).ensure_indexes().await?;
        Product::repo(&db).ensure_indexes().await
    })
    .await?;
    let parts: Vec<Part> = ["#4 grommet", "fan blade assembly", "power switch", "washer", "bolt"]
        .iter()
        .enumerate()
        .map(|(i, name)| Part {
            id: ObjectId::new(),
            partno: format!("123-aff-{i:03}"),
            name: (*name).into(),
            qty: 94,
            cost: 0.94,
            price: 3.99 + i as f64,
        })
        .collect();
    step.run("insert 5 parts", Part::repo(&db).insert_many(&parts)).await?;
    let products: Vec<Product> = (0..100)
        .map(|i| Product {
            id: ObjectId::new(),
            name: format!("left-handed smoke shifter {i}"),
            manufacturer: "Acme Corp".into(),
            catalog_number: 1234 + i,
            parts: vec![parts[i as usize % 5].id, parts[(i as usize + 1) % 5].id, parts[2].id],
        })
        .collect();
    step.run("insert 100 products", Product::repo(&db).insert_many(&products)).await?;
    let loaded =
        step.run("load all 100 products", Product::repo(&db).find(Filter::all()).batch_size(1000).to_vec()).await?;
    let lines = step
        .run(
            "load the parts of all 100 products (one $in, name+price)",
            Product::rels().parts.load::<PartLine>(&db, &loaded),
        )
        .await?;
    let first: Vec<String> = lines.of(0).map(|p| format!("{} (${:.2})", p.name, p.price)).collect();
    println!("    {} -> {}", loaded[0].name, first.join(", "));
    step.run("delete a part: pulled from every product that holds it", Part::repo(&db).delete_by_id(&parts[2].id))
        .await?;
    let left = Product::repo(&db).count(Product::fields().parts.contains(parts[2].id)).await?;
    println!("    products still holding it: {left}");

    println!("logging: log messages reference their host (one-to-squillions)");
    let hosts: Vec<Host> = (0..10)
        .map(|i| Host { id: ObjectId::new(), name: format!("goofy{i}.example.com"), ipaddr: format!("127.66.66.{i}") })
        .collect();
    step.run("insert 10 hosts", Host::repo(&db).insert_many(&hosts)).await?;
    step.run("ensure the {host: 1, time: -1} index", LogMsg::repo(&db).ensure_indexes()).await?;
    let start = DateTime::now().timestamp_millis();
    let msgs: Vec<LogMsg> = (0..2000)
        .map(|i| LogMsg {
            id: ObjectId::new(),
            time: DateTime::from_millis(start + i),
            message: format!("cpu is on fire! #{i}"),
            host: hosts[i as usize % 10].id,
        })
        .collect();
    step.run("insert 2,000 log messages", LogMsg::repo(&db).insert_many(&msgs)).await?;
    let recent: Vec<LogLine> = step
        .run(
            "the most recent 100 messages of one host",
            LogMsg::rels().host.children_of(&db, &hosts[0].id).limit(100).to_vec(),
        )
        .await?;
    if let Some(newest) = recent.first() {
        println!("    newest: {} at {}", newest.message, newest.time);
    }
    let ids: Vec<ObjectId> = hosts.iter().map(|h| h.id).collect();
    let latest = step
        .run(
            "the 3 latest messages of EACH of the 10 hosts",
            LogMsg::rels().host.latest_per_parent(&db, &ids, 3).load::<LogLine>(),
        )
        .await?;
    for (h, host) in hosts.iter().enumerate().take(2) {
        let msgs: Vec<&str> = latest.of(h).map(|l| l.message.as_str()).collect();
        println!("    {}: {}", host.name, msgs.join(" | "));
    }
    println!("done: the data is left in database `{}` for inspection", db.name());
    Ok(())
}
