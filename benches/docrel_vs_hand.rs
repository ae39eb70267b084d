//! docrel against the same job written by hand with the raw driver, and
//! against the naive per-document way, on the same data in one process.
//!
//! Prints one JSON line per case and way:
//! `{case, way, median_ms, min_ms, max_ms, client_cpu_ms, round_trips, bytes_received, docs}`
//! and one per case with the ratios docrel / hand. Timed runs use a client
//! without command monitoring; round trips and bytes come from one more run
//! on a monitored client, so counting costs the timings nothing.
//!
//! `scripts/bench` runs it on the embedded server (or `MONGODB_URI`);
//! sizes are flags: `--products=200 --refs=20 --parts=1000 --fanout-products=2000
//! --fanout-logmsgs=1000 --subset-msgs=200 --tasks=100 --move-parents=100 --runs=11 --naive-runs=1
//! --chart=10,100,1000 --compile --only=eager|populate|latest|fanout|subset|reassign|delete|move|append`
//! (`--full` sets larger sizes, for a real mongod).
//!
//! Every way of a case does the same work (the same documents read or
//! written, the same result built); the ways differ only in how. The first
//! line names the server the figures came from.

mod cases {
    #[path = "append.rs"]
    pub mod append;
    #[path = "delete.rs"]
    pub mod delete;
    #[path = "migrate.rs"]
    pub mod migrate;
    #[path = "rename.rs"]
    pub mod rename;
    use super::{cpu_ms, err, ratio, Bench, Opts, Timing};
}

use docrel::bson::{doc, oid::ObjectId, Bson, DateTime, Document as BsonDoc};
use docrel::mongodb::options::{UpdateManyModel, UpdateOneModel, WriteModel};
use docrel::mongodb::{Collection, Database, Namespace};
use docrel::{client::RoundTrips, Document, Embedded, Filter, View};
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::time::Instant;

// ---- the schema ---------------------------------------------------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "suppliers")]
struct Supplier {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    country: String,
}

#[allow(dead_code)] // read by serde only
#[derive(View, Deserialize, Debug, Clone)]
#[view(of = Supplier)]
struct SupplierName {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    partno: String,
    name: String,
    qty: i32,
    cost: f64,
    price: f64,
    #[reference(to = Supplier)]
    supplier: ObjectId,
}

/// A part with its supplier reference, for the nested load.
#[allow(dead_code)] // read by serde only
#[derive(View, Deserialize, Debug, Clone)]
#[view(of = Part)]
struct PartSupplier {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    supplier: ObjectId,
}

#[allow(dead_code)] // read by serde only: the bench measures loading it
#[derive(View, Deserialize, Debug, Clone)]
#[view(of = Part)]
struct PartLine {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    price: f64,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "products")]
struct Product {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    catalog_number: i32,
    #[reference(many, to = Part, max = 2000)]
    parts: Vec<ObjectId>,
}

/// What a product list shows: the page reads its parents as this view.
#[derive(View, Deserialize, Debug, Clone)]
#[view(of = Product)]
struct ProductCard {
    name: String,
    parts: Vec<ObjectId>,
}

/// The hand-written twin of `ProductCard` (with its `_id`, which a
/// projection returns unless told otherwise).
#[allow(dead_code)] // read by serde only
#[derive(Deserialize, Debug, Clone)]
struct HandCard {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    parts: Vec<ObjectId>,
}

#[derive(Embedded, Serialize, Deserialize, Debug, Clone)]
struct PartRef {
    id: ObjectId,
    #[denormalize(from = Part::name)]
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "catalog")]
struct CatalogProduct {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    #[reference(many, to = Part, max = 2000)]
    parts: Vec<PartRef>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "hosts")]
struct Host {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    ipaddr: String,
    #[embed(max = 1000, subset_of = LogMsg, sort = "time", keep = last, allow_large)]
    logmsgs: Vec<LogLine>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "logmsg")]
struct LogMsg {
    #[serde(rename = "_id")]
    id: ObjectId,
    time: DateTime,
    message: String,
    #[denormalize(from = Host::ipaddr, via = host)]
    ipaddr: String,
    #[parent_ref(to = Host, sort = "-time")]
    host: ObjectId,
}

#[derive(View, Serialize, Deserialize, Debug, Clone)]
#[view(of = LogMsg)]
struct LogLine {
    #[serde(rename = "_id")]
    id: ObjectId,
    time: DateTime,
    message: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "people")]
struct Person {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    #[reference(many, to = Task, inverse = owner, max = 5000)]
    tasks: Vec<ObjectId>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "tasks")]
struct Task {
    #[serde(rename = "_id")]
    id: ObjectId,
    description: String,
    #[reference(to = Person, inverse = tasks)]
    owner: ObjectId,
}

// ---- options --------------------------------------------------------------------------

struct Opts {
    products: usize,
    refs: usize,
    parts: usize,
    host_msgs: usize,
    hosts: usize,
    fanout_products: usize,
    fanout_logmsgs: usize,
    subset_msgs: usize,
    tasks: usize,
    /// Parents of 100 embedded elements each, for the move.
    move_parents: usize,
    runs: usize,
    chart: Vec<usize>,
    compile: bool,
    only: Option<String>,
    naive_chart_max: usize,
    /// Timed runs of the naive ways that write one document per round trip
    /// (minutes each on the embedded server): they do the same work as the
    /// others, only fewer times.
    naive_runs: usize,
}

impl Opts {
    fn parse() -> Opts {
        let mut o = Opts {
            products: 200,
            refs: 20,
            parts: 1000,
            host_msgs: 5000,
            hosts: 100,
            fanout_products: 2000,
            fanout_logmsgs: 1000,
            subset_msgs: 200,
            tasks: 100,
            move_parents: 100,
            runs: 11,
            chart: vec![10, 100, 1000],
            compile: false,
            only: None,
            naive_chart_max: 100,
            naive_runs: 1,
        };
        for arg in std::env::args().skip(1) {
            let (k, v) = arg.split_once('=').unwrap_or((arg.as_str(), ""));
            let n = || v.parse::<usize>().unwrap_or_else(|_| panic!("{k} takes a whole number, got `{v}`"));
            match k {
                "--products" => o.products = n(),
                "--refs" => o.refs = n(),
                "--parts" => o.parts = n(),
                "--host-msgs" => o.host_msgs = n(),
                "--hosts" => o.hosts = n(),
                "--fanout-products" => o.fanout_products = n(),
                "--fanout-logmsgs" => o.fanout_logmsgs = n(),
                "--subset-msgs" => o.subset_msgs = n(),
                "--tasks" => o.tasks = n(),
                "--move-parents" => o.move_parents = n(),
                "--runs" => o.runs = n().max(1),
                "--naive-runs" => o.naive_runs = n().max(1),
                "--chart" => o.chart = v.split(',').filter_map(|x| x.parse().ok()).collect(),
                "--compile" => o.compile = true,
                "--only" => o.only = Some(v.to_owned()),
                "--full" => {
                    o.products = 1000;
                    o.refs = 50;
                    o.parts = 5000;
                    o.fanout_products = 10_000;
                    o.fanout_logmsgs = 100_000;
                    o.tasks = 1000;
                    o.move_parents = 1000;
                    o.subset_msgs = 1000;
                    o.chart = vec![10, 100, 1000, 10_000];
                    o.naive_chart_max = 1000;
                    o.naive_runs = 3;
                }
                "--bench" => {} // passed by `cargo bench`
                other => panic!("unknown option {other}: see the header of benches/docrel_vs_hand.rs"),
            }
        }
        o
    }
    fn wants(&self, case: &str) -> bool {
        self.only.as_deref().is_none_or(|o| case.starts_with(o))
    }
}

// ---- measuring ------------------------------------------------------------------------

fn cpu_ms() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    ms(usage.ru_utime) + ms(usage.ru_stime)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

#[derive(Clone, Copy, Debug)]
struct Stat {
    median_ms: f64,
    cpu_ms: f64,
    round_trips: u64,
    bytes: u64,
}

struct Bench {
    timed: Database,
    counted: Database,
    trips: RoundTrips,
    runs: usize,
}

impl Bench {
    /// Times `job` (one warm-up, then `runs`) on the plain client, then runs
    /// it once more on the monitored one to count round trips and bytes.
    async fn way<F, Fut>(&self, case: &str, way: &str, docs: usize, job: F) -> Stat
    where
        F: FnMut(Database, usize) -> Fut,
        Fut: Future<Output = docrel::Result<()>>,
    {
        self.way_runs(case, way, docs, self.runs, true, job).await
    }

    /// [`Bench::way`] with `runs` timed runs, after a warm-up if `warm`.
    async fn way_runs<F, Fut>(&self, case: &str, way: &str, docs: usize, runs: usize, warm: bool, mut job: F) -> Stat
    where
        F: FnMut(Database, usize) -> Fut,
        Fut: Future<Output = docrel::Result<()>>,
    {
        let mut round = 0;
        if warm {
            job(self.timed.clone(), round).await.unwrap_or_else(|e| panic!("{case}/{way}: {e}"));
        }
        let mut timing = Timing::default();
        for _ in 0..runs {
            round += 1;
            let (c0, t0) = (cpu_ms(), Instant::now());
            job(self.timed.clone(), round).await.unwrap_or_else(|e| panic!("{case}/{way}: {e}"));
            timing.push(t0, c0);
        }
        round += 1;
        let mark = self.trips.mark();
        job(self.counted.clone(), round).await.unwrap_or_else(|e| panic!("{case}/{way}: {e}"));
        timing.report(case, way, docs, &self.trips, mark)
    }

    /// docrel and hand-written code on the same case, their timed runs
    /// interleaved (docrel first in even runs, hand first in odd ones), so
    /// that a server slowing down as the run goes on, or a neighbour's
    /// load, weighs on both ways alike. The round number passed to the jobs
    /// counts the calls of both, so a job that alternates a state by round
    /// (the reassign case) finds it flipped at every call.
    async fn pair<D, DFut, H, HFut>(&self, case: &str, docs: usize, mut docrel: D, mut hand: H) -> (Stat, Stat)
    where
        D: FnMut(Database, usize) -> DFut,
        DFut: Future<Output = docrel::Result<()>>,
        H: FnMut(Database, usize) -> HFut,
        HFut: Future<Output = docrel::Result<()>>,
    {
        let fail = |way: &str, e: docrel::Error| -> ! { panic!("{case}/{way}: {e}") };
        let mut round = 0;
        docrel(self.timed.clone(), round).await.unwrap_or_else(|e| fail("docrel", e));
        round += 1;
        hand(self.timed.clone(), round).await.unwrap_or_else(|e| fail("hand", e));
        let (mut d, mut h) = (Timing::default(), Timing::default());
        for run in 0..self.runs {
            for docrel_now in [run % 2 == 0, run % 2 == 1] {
                round += 1;
                let (c0, t0) = (cpu_ms(), Instant::now());
                if docrel_now {
                    docrel(self.timed.clone(), round).await.unwrap_or_else(|e| fail("docrel", e));
                    d.push(t0, c0);
                } else {
                    hand(self.timed.clone(), round).await.unwrap_or_else(|e| fail("hand", e));
                    h.push(t0, c0);
                }
            }
        }
        round += 1;
        let mark = self.trips.mark();
        docrel(self.counted.clone(), round).await.unwrap_or_else(|e| fail("docrel", e));
        let d = d.report(case, "docrel", docs, &self.trips, mark);
        round += 1;
        let mark = self.trips.mark();
        hand(self.counted.clone(), round).await.unwrap_or_else(|e| fail("hand", e));
        let h = h.report(case, "hand", docs, &self.trips, mark);
        (d, h)
    }
}

/// The timed runs of one way.
#[derive(Default)]
struct Timing {
    walls: Vec<f64>,
    cpus: Vec<f64>,
}

impl Timing {
    fn push(&mut self, t0: Instant, c0: f64) {
        self.walls.push(t0.elapsed().as_secs_f64() * 1000.0);
        self.cpus.push(cpu_ms() - c0);
    }

    /// Prints the way's JSON line; round trips and bytes are those counted
    /// since `mark` (its one monitored run).
    fn report(mut self, case: &str, way: &str, docs: usize, trips: &RoundTrips, mark: docrel::client::Mark) -> Stat {
        let runs = self.walls.len();
        let min = self.walls.iter().copied().fold(f64::MAX, f64::min);
        let max = self.walls.iter().copied().fold(0.0, f64::max);
        let stat = Stat {
            median_ms: median(&mut self.walls),
            cpu_ms: median(&mut self.cpus),
            round_trips: trips.since(mark),
            bytes: trips.bytes_since(mark),
        };
        println!(
            "{{\"case\":\"{case}\",\"way\":\"{way}\",\"median_ms\":{:.2},\"min_ms\":{min:.2},\"max_ms\":{max:.2},\"client_cpu_ms\":{:.2},\"round_trips\":{},\"bytes_received\":{},\"docs\":{docs},\"runs\":{runs}}}",
            stat.median_ms, stat.cpu_ms, stat.round_trips, stat.bytes
        );
        stat
    }
}

fn ratio(case: &str, docrel: Stat, hand: Stat, naive: Option<Stat>) {
    let r = |a: f64, b: f64| if b > 0.0 { a / b } else { 1.0 };
    println!(
        "{{\"case\":\"{case}\",\"ratio\":\"docrel/hand\",\"wall\":{:.3},\"client_cpu\":{:.3},\"round_trips\":{},\"bytes\":{:.3}{}}}",
        r(docrel.median_ms, hand.median_ms),
        r(docrel.cpu_ms, hand.cpu_ms),
        if docrel.round_trips == hand.round_trips { "\"same\"".to_owned() } else { format!("\"{} vs {}\"", docrel.round_trips, hand.round_trips) },
        r(docrel.bytes as f64, hand.bytes as f64),
        naive.map(|n| format!(",\"naive/docrel_wall\":{:.2}", r(n.median_ms, docrel.median_ms))).unwrap_or_default()
    );
}

fn err(e: docrel::mongodb::error::Error) -> docrel::Error {
    docrel::Error::driver("bench", "bench", e)
}

async fn drain<T: serde::de::DeserializeOwned + Send + Sync>(
    coll: &Collection<T>,
    filter: BsonDoc,
) -> docrel::Result<Vec<T>> {
    coll.find(filter).batch_size(i32::MAX as u32).await.map_err(err)?.try_collect().await.map_err(err)
}

// ---- case 1: eager load ------------------------------------------------------------------

async fn seed_catalog(db: &Database, products: usize, refs: usize, parts: usize) -> docrel::Result<()> {
    let suppliers: Vec<Supplier> = (0..50)
        .map(|i| Supplier { id: ObjectId::new(), name: format!("supplier {i}"), country: "NZ".into() })
        .collect();
    Supplier::repo(db).insert_many(&suppliers).await?;
    let parts: Vec<Part> = (0..parts.max(refs))
        .map(|i| Part {
            id: ObjectId::new(),
            partno: format!("p-{i}"),
            name: format!("part {i}"),
            qty: 94,
            cost: 0.94,
            price: (i % 100) as f64 / 10.0,
            supplier: suppliers[i % suppliers.len()].id,
        })
        .collect();
    for chunk in parts.chunks(10_000) {
        Part::repo(db).insert_many(chunk).await?;
    }
    let all: Vec<Product> = (0..products)
        .map(|i| Product {
            id: ObjectId::new(),
            name: format!("smoke shifter {i}"),
            catalog_number: i as i32,
            parts: (0..refs).map(|k| parts[(i * 7 + k * 13) % parts.len()].id).collect(),
        })
        .collect();
    for chunk in all.chunks(10_000) {
        Product::repo(db).insert_many(chunk).await?;
    }
    Product::repo(db).ensure_indexes().await?; // {parts: 1}, for the reverse loads
    Ok(())
}

/// The idiomatic way, as the README writes it: the parents as the view the
/// page shows, then one load for all of them.
async fn eager_docrel(db: Database, n: usize) -> docrel::Result<usize> {
    let cards = Product::repo(&db).find(Filter::all()).limit(n as u64).view::<ProductCard>().await?;
    let parts = Product::rels().parts.load::<PartLine>(&db, &cards).await?;
    Ok((0..cards.len()).map(|i| parts.of(i).len()).sum())
}

async fn hand_cards(db: &Database, n: usize) -> docrel::Result<Vec<HandCard>> {
    db.collection::<HandCard>("products")
        .find(doc! {})
        .projection(doc! {"name": 1, "parts": 1})
        .limit(n as i64)
        .batch_size(n as u32)
        .await
        .map_err(err)?
        .try_collect()
        .await
        .map_err(err)
}

async fn eager_hand(db: Database, n: usize) -> docrel::Result<usize> {
    let products = hand_cards(&db, n).await?;
    let ids: Vec<ObjectId> =
        products.iter().flat_map(|p| p.parts.iter().copied()).collect::<HashSet<_>>().into_iter().collect();
    let lines: Collection<PartLine> = db.collection("parts");
    let found: Vec<PartLine> = lines
        .find(doc! {"_id": {"$in": ids}})
        .projection(doc! {"name": 1, "price": 1})
        .batch_size(i32::MAX as u32)
        .await
        .map_err(err)?
        .try_collect()
        .await
        .map_err(err)?;
    let by_id: HashMap<ObjectId, &PartLine> = found.iter().map(|p| (p.id, p)).collect();
    let per_product: Vec<Vec<&PartLine>> =
        products.iter().map(|p| p.parts.iter().filter_map(|id| by_id.get(id).copied()).collect()).collect();
    Ok(per_product.iter().map(Vec::len).sum())
}

async fn eager_naive(db: Database, n: usize) -> docrel::Result<usize> {
    // A query per parent, as an ORM's lazy relation does.
    let products = hand_cards(&db, n).await?;
    let lines: Collection<PartLine> = db.collection("parts");
    let mut total = 0;
    for p in &products {
        let found: Vec<PartLine> = lines
            .find(doc! {"_id": {"$in": &p.parts}})
            .projection(doc! {"name": 1, "price": 1})
            .await
            .map_err(err)?
            .try_collect()
            .await
            .map_err(err)?;
        let by_id: HashMap<ObjectId, &PartLine> = found.iter().map(|l| (l.id, l)).collect();
        let mine: Vec<&PartLine> = p.parts.iter().filter_map(|id| by_id.get(id).copied()).collect();
        total += mine.len();
    }
    Ok(total)
}

// ---- case 1b: what populate can do -------------------------------------------------------

/// Each capability on the same parents (read once, as the page's view),
/// docrel against the same job written by hand; only the load is timed.
async fn populate_cases(b: &Bench, o: &Opts) -> docrel::Result<()> {
    use std::sync::Arc;
    let n = o.products;
    let cards = Arc::new(Product::repo(&b.timed).find(Filter::all()).limit(n as u64).view::<ProductCard>().await?);
    let hands = Arc::new(hand_cards(&b.timed, n).await?);
    let refs = n * o.refs;

    // 1. filter: only the parts under 5.00 (Mongoose's populate `match`).
    let case = format!("populate_where_price_under_5_{n}_products");
    let c = cards.clone();
    let hc_h = hands.clone();
    let (d, h) = b
        .pair(
            &case,
            refs,
            move |db, _| {
                let c = c.clone();
                async move {
                    let l = Product::rels().parts.load_where::<PartLine>(&db, &c, Part::fields().price.lt(5.0)).await?;
                    assert!(l.distinct().iter().all(|p| p.price < 5.0));
                    Ok(())
                }
            },
            move |db, _| {
                let hc = hc_h.clone();
                async move {
                    let ids: Vec<ObjectId> =
                        hc.iter().flat_map(|p| p.parts.iter().copied()).collect::<HashSet<_>>().into_iter().collect();
                    let found: Vec<PartLine> = db
                        .collection::<PartLine>("parts")
                        .find(doc! {"_id": {"$in": ids}, "price": {"$lt": 5.0}})
                        .projection(doc! {"name": 1, "price": 1})
                        .batch_size(i32::MAX as u32)
                        .await
                        .map_err(err)?
                        .try_collect()
                        .await
                        .map_err(err)?;
                    let by_id: HashMap<ObjectId, &PartLine> = found.iter().map(|p| (p.id, p)).collect();
                    let per: Vec<Vec<&PartLine>> =
                        hc.iter().map(|p| p.parts.iter().filter_map(|id| by_id.get(id).copied()).collect()).collect();
                    assert!(per.iter().flatten().all(|p| p.price < 5.0));
                    Ok(())
                }
            },
        )
        .await;
    ratio(&case, d, h, None);

    // 2. sort and a limit per parent: each product's 3 dearest parts.
    let case = format!("populate_top_3_by_price_per_product_{n}_products");
    let c = cards.clone();
    let hc_h = hands.clone();
    let (d, h) = b
        .pair(
            &case,
            n * 3,
            move |db, _| {
                let c = c.clone();
                async move {
                    let l = Product::rels()
                        .parts
                        .load::<PartLine>(&db, &c)
                        .sort(Part::fields().price.desc())
                        .limit_per_parent(3)
                        .await?;
                    assert!(l.of(0).len() <= 3);
                    Ok(())
                }
            },
            move |db, _| {
                let hc = hc_h.clone();
                async move {
                    let ids: Vec<ObjectId> =
                        hc.iter().flat_map(|p| p.parts.iter().copied()).collect::<HashSet<_>>().into_iter().collect();
                    let found: Vec<PartLine> = db
                        .collection::<PartLine>("parts")
                        .find(doc! {"_id": {"$in": ids}})
                        .sort(doc! {"price": -1})
                        .projection(doc! {"name": 1, "price": 1})
                        .batch_size(i32::MAX as u32)
                        .await
                        .map_err(err)?
                        .try_collect()
                        .await
                        .map_err(err)?;
                    let rank: HashMap<ObjectId, usize> = found.iter().enumerate().map(|(i, p)| (p.id, i)).collect();
                    let per: Vec<Vec<&PartLine>> = hc
                        .iter()
                        .map(|p| {
                            let mut mine: Vec<usize> = p.parts.iter().filter_map(|id| rank.get(id).copied()).collect();
                            mine.sort_unstable();
                            mine.truncate(3);
                            mine.into_iter().map(|i| &found[i]).collect()
                        })
                        .collect();
                    assert!(per[0].len() <= 3);
                    Ok(())
                }
            },
        )
        .await;
    ratio(&case, d, h, None);

    // 3. reverse: the products of each of 50 parts, in one query.
    let targets: Arc<Vec<ObjectId>> =
        Arc::new(Part::repo(&b.timed).find(Filter::all()).limit(50).await?.into_iter().map(|p| p.id).collect());
    let case = "populate_reverse_products_of_50_parts".to_owned();
    let t = targets.clone();
    let t_h = targets.clone();
    let (d, h) = b
        .pair(
            &case,
            50,
            move |db, _| {
                let t = t.clone();
                async move {
                    let l = Product::rels().parts.referrers_of_many(&db, &t).view::<ProductCard>().await?;
                    assert_eq!(l.len(), 50);
                    Ok(())
                }
            },
            move |db, _| {
                let t = t_h.clone();
                async move {
                    let found: Vec<HandCard> = db
                        .collection::<HandCard>("products")
                        .find(doc! {"parts": {"$in": t.as_slice()}})
                        .projection(doc! {"name": 1, "parts": 1})
                        .batch_size(i32::MAX as u32)
                        .await
                        .map_err(err)?
                        .try_collect()
                        .await
                        .map_err(err)?;
                    let mut groups: HashMap<ObjectId, Vec<usize>> = t.iter().map(|id| (*id, Vec::new())).collect();
                    for (i, p) in found.iter().enumerate() {
                        for id in &p.parts {
                            if let Some(g) = groups.get_mut(id) {
                                if g.last() != Some(&i) {
                                    g.push(i);
                                }
                            }
                        }
                    }
                    let per: Vec<Vec<&HandCard>> =
                        t.iter().map(|id| groups[id].iter().map(|&i| &found[i]).collect()).collect();
                    assert_eq!(per.len(), 50);
                    Ok(())
                }
            },
        )
        .await;
    let t = targets.clone();
    let nv = b
        .way(&case, "naive", 50, move |db, _| {
            let t = t.clone();
            async move {
                let coll = db.collection::<HandCard>("products");
                let mut per = Vec::new();
                for id in t.iter() {
                    let found: Vec<HandCard> = coll
                        .find(doc! {"parts": id})
                        .projection(doc! {"name": 1, "parts": 1})
                        .await
                        .map_err(err)?
                        .try_collect()
                        .await
                        .map_err(err)?;
                    per.push(found);
                }
                assert_eq!(per.len(), 50);
                Ok(())
            }
        })
        .await;
    ratio(&case, d, h, Some(nv));

    // 4. nested: the supplier of each part of each product, one query per level.
    let case = format!("populate_nested_suppliers_of_parts_of_{n}_products");
    let c = cards.clone();
    let hc_h = hands.clone();
    let (d, h) = b
        .pair(
            &case,
            refs,
            move |db, _| {
                let c = c.clone();
                async move {
                    let parts = Product::rels().parts.load::<PartSupplier>(&db, &c).await?;
                    let sup = Part::rels().supplier.load::<SupplierName>(&db, parts.distinct()).await?;
                    let first: Vec<(&str, &str)> = parts
                        .indices(0)
                        .map(|k| (parts.distinct()[k].name.as_str(), sup.one(k).map_or("", |s| s.name.as_str())))
                        .collect();
                    assert_eq!(first.len(), c[0].parts.len());
                    Ok(())
                }
            },
            move |db, _| {
                let hc = hc_h.clone();
                async move {
                    let ids: Vec<ObjectId> =
                        hc.iter().flat_map(|p| p.parts.iter().copied()).collect::<HashSet<_>>().into_iter().collect();
                    let parts: Vec<PartSupplier> = db
                        .collection::<PartSupplier>("parts")
                        .find(doc! {"_id": {"$in": ids}})
                        .projection(doc! {"name": 1, "supplier": 1})
                        .batch_size(i32::MAX as u32)
                        .await
                        .map_err(err)?
                        .try_collect()
                        .await
                        .map_err(err)?;
                    let sids: Vec<ObjectId> =
                        parts.iter().map(|p| p.supplier).collect::<HashSet<_>>().into_iter().collect();
                    let sups: Vec<SupplierName> = db
                        .collection::<SupplierName>("suppliers")
                        .find(doc! {"_id": {"$in": sids}})
                        .projection(doc! {"name": 1})
                        .batch_size(i32::MAX as u32)
                        .await
                        .map_err(err)?
                        .try_collect()
                        .await
                        .map_err(err)?;
                    let part_by: HashMap<ObjectId, &PartSupplier> = parts.iter().map(|p| (p.id, p)).collect();
                    let sup_by: HashMap<ObjectId, &SupplierName> = sups.iter().map(|s| (s.id, s)).collect();
                    let per: Vec<Vec<(&str, &str)>> = hc
                        .iter()
                        .map(|p| {
                            p.parts
                                .iter()
                                .filter_map(|id| part_by.get(id))
                                .map(|p| (p.name.as_str(), sup_by.get(&p.supplier).map_or("", |s| s.name.as_str())))
                                .collect()
                        })
                        .collect();
                    assert_eq!(per[0].len(), hc[0].parts.len());
                    Ok(())
                }
            },
        )
        .await;
    ratio(&case, d, h, None);

    // 5. the `$lookup` strategy: parents and parts in ONE aggregate, against
    // the same aggregate by hand and against docrel's two queries.
    let case = format!("populate_lookup_{n}_products_x{}_refs", o.refs);
    let (d, h) = b
        .pair(
            &case,
            refs,
            |db, _| async move {
                let (cards, parts) = Product::rels()
                    .parts
                    .with_parents(Product::repo(&db).find(Filter::all()).limit(n as u64).view::<ProductCard>())
                    .view::<PartLine>()
                    .strategy(docrel::load::Strategy::Lookup)
                    .await?;
                assert_eq!(parts.of(0).len(), cards[0].parts.len());
                Ok(())
            },
            |db, _| async move {
                #[derive(Deserialize)]
                struct Joined {
                    #[allow(dead_code)]
                    name: String,
                    parts: Vec<ObjectId>,
                    joined: Vec<PartLine>,
                }
                let pipeline = vec![
                    doc! {"$limit": n as i64},
                    doc! {"$project": {"name": 1, "parts": 1}},
                    doc! {"$lookup": {"from": "parts", "localField": "parts", "foreignField": "_id",
                    "pipeline": [{"$project": {"name": 1, "price": 1}}], "as": "joined"}},
                ];
                let found: Vec<Joined> = db
                    .collection::<BsonDoc>("products")
                    .aggregate(pipeline)
                    .batch_size(i32::MAX as u32)
                    .with_type::<Joined>()
                    .await
                    .map_err(err)?
                    .try_collect()
                    .await
                    .map_err(err)?;
                let per: Vec<Vec<&PartLine>> = found
                    .iter()
                    .map(|p| {
                        let by: HashMap<ObjectId, &PartLine> = p.joined.iter().map(|l| (l.id, l)).collect();
                        p.parts.iter().filter_map(|id| by.get(id).copied()).collect()
                    })
                    .collect();
                assert_eq!(per[0].len(), found[0].parts.len());
                Ok(())
            },
        )
        .await;
    let sep = b.way(&case, "docrel_separate", refs, |db, _| async move { eager_docrel(db, n).await.map(drop) }).await;
    ratio(&case, d, h, None);
    let r = |a: f64, b: f64| if b > 0.0 { a / b } else { 1.0 };
    println!(
        "{{\"case\":\"{case}\",\"ratio\":\"lookup/separate\",\"wall\":{:.3},\"client_cpu\":{:.3},\"round_trips\":\"{} vs {}\",\"bytes\":{:.3}}}",
        r(d.median_ms, sep.median_ms),
        r(d.cpu_ms, sep.cpu_ms),
        d.round_trips,
        sep.round_trips,
        r(d.bytes as f64, sep.bytes as f64)
    );
    Ok(())
}

// ---- case 2: latest messages -------------------------------------------------------------

async fn seed_logs(db: &Database, hosts: usize, host_msgs: usize) -> docrel::Result<Vec<ObjectId>> {
    let all: Vec<Host> = (0..hosts)
        .map(|i| Host {
            id: ObjectId::new(),
            name: format!("h{i}"),
            ipaddr: format!("10.0.{}.{}", i / 256, i % 256),
            logmsgs: vec![],
        })
        .collect();
    Host::repo(db).insert_many(&all).await?;
    let raw = db.collection::<BsonDoc>("logmsg");
    let mut docs = Vec::new();
    for (h, host) in all.iter().enumerate() {
        let n = if h == 0 { host_msgs + 100 } else { 20 };
        for k in 0..n {
            docs.push(doc! {"_id": ObjectId::new(), "time": DateTime::from_millis(1_395_999_761_382 + k as i64 * 1000 + h as i64), "message": format!("{h}:{k}"), "ipaddr": &host.ipaddr, "host": host.id});
        }
    }
    for chunk in docs.chunks(10_000) {
        raw.insert_many(chunk.to_vec()).await.map_err(err)?;
    }
    LogMsg::repo(db).ensure_indexes().await?;
    Ok(all.iter().map(|h| h.id).collect())
}

// ---- the run -------------------------------------------------------------------------------

#[tokio::main(flavor = "current_thread")]
async fn main() -> docrel::Result<()> {
    let o = Opts::parse();
    let uri = std::env::var(docrel::client::URI_VARIABLE).unwrap_or_else(|_| "mongodb://127.0.0.1:27017".into());
    // No tracing subscriber here, so no command event handler either: the
    // hand-written ways run on a client like the driver's own.
    let plain = docrel::connect(&uri).await?;
    let trips = RoundTrips::new();
    let mut opts = docrel::client::options(&uri).await?;
    trips.install(&mut opts);
    let monitored = docrel::connect_with(&uri, opts).await?;
    let name = format!("docrel_bench_{}", std::process::id());
    let b = Bench { timed: plain.database(&name), counted: monitored.database(&name), trips, runs: o.runs };
    let db = b.timed.clone();
    db.drop().await.map_err(err)?;
    eprintln!("docrel bench on {uri}, database {name}, {} runs per way after one warm-up", o.runs);
    server_line(&db, &uri).await;

    if o.wants("eager") {
        let max_n = o.chart.iter().copied().chain([o.products]).max().unwrap_or(o.products);
        seed_catalog(&db, max_n, o.refs, o.parts).await?;
        let n = o.products;
        let case = format!("eager_load_{n}_products_x{}_refs", o.refs);
        let docs = n * o.refs;
        let (d, h) = b
            .pair(
                &case,
                docs,
                |db, _| async move { eager_docrel(db, n).await.map(drop) },
                |db, _| async move { eager_hand(db, n).await.map(drop) },
            )
            .await;
        let nv = b.way(&case, "naive", docs, |db, _| async move { eager_naive(db, n).await.map(drop) }).await;
        ratio(&case, d, h, Some(nv));
        let mut chart = Vec::new();
        for &n in &o.chart {
            let case = format!("chart_eager_load_{n}");
            let (d, h) = b
                .pair(
                    &case,
                    n * o.refs,
                    |db, _| async move { eager_docrel(db, n).await.map(drop) },
                    |db, _| async move { eager_hand(db, n).await.map(drop) },
                )
                .await;
            // The naive way costs a query per parent: measured up to 100 on the
            // embedded server (slow per document), up to 1,000 with --full.
            let nv = if n <= o.naive_chart_max {
                Some(b.way(&case, "naive", n * o.refs, |db, _| async move { eager_naive(db, n).await.map(drop) }).await)
            } else {
                None
            };
            chart.push((n, d, h, nv));
        }
        draw_chart(&chart, o.refs);
    }

    if o.wants("populate") {
        if !o.wants("eager") {
            seed_catalog(&db, o.products, o.refs, o.parts).await?;
        }
        populate_cases(&b, &o).await?;
    }

    if o.wants("latest") {
        let hosts = seed_logs(&db, o.hosts, o.host_msgs).await?;
        let first = hosts[0];
        let n = o.host_msgs;
        let case = format!("latest_{n}_of_one_host");
        let (d, h) = b
            .pair(
                &case,
                n,
                |db, _| async move {
                    let v: Vec<LogLine> = LogMsg::rels().host.children_of(&db, &first).limit(n as u64).to_vec().await?;
                    assert_eq!(v.len(), n);
                    Ok(())
                },
                |db, _| async move {
                    let coll: Collection<LogLine> = db.collection("logmsg");
                    let v: Vec<LogLine> = coll
                        .find(doc! {"host": first})
                        .sort(doc! {"time": -1})
                        .limit(n as i64)
                        .batch_size(n as u32)
                        .projection(doc! {"time": 1, "message": 1, "host": 1})
                        .await
                        .map_err(err)?
                        .try_collect()
                        .await
                        .map_err(err)?;
                    assert_eq!(v.len(), n);
                    Ok(())
                },
            )
            .await;
        let nv = b
            .way(&case, "naive", n, |db, _| async move {
                // Default batches: a getMore every 101 documents.
                let coll: Collection<LogLine> = db.collection("logmsg");
                let v: Vec<LogLine> = coll
                    .find(doc! {"host": first})
                    .sort(doc! {"time": -1})
                    .limit(n as i64)
                    .await
                    .map_err(err)?
                    .try_collect()
                    .await
                    .map_err(err)?;
                assert_eq!(v.len(), n);
                Ok(())
            })
            .await;
        ratio(&case, d, h, Some(nv));

        let many = hosts.clone();
        let case = format!("latest_10_of_each_of_{}_hosts", hosts.len());
        let docs = hosts.len() * 10;
        let ids = many.clone();
        let ids_h = many.clone();
        let (d, h) = b.pair(&case, docs, move |db, _| {
                let ids = ids.clone();
                async move {
                    let l = LogMsg::rels().host.latest_per_parent(&db, &ids, 10).load::<LogLine>().await?;
                    assert_eq!(l.of(1).len(), 10);
                    Ok(())
                }
            }, move |db, _| {
                let ids = ids_h.clone();
                async move {
                    #[derive(Deserialize)]
                    struct Group {
                        #[serde(rename = "_id")]
                        id: ObjectId,
                        children: Vec<LogLine>,
                    }
                    let pipeline = vec![
                        doc! {"$documents": ids.iter().map(|id| doc! {"_id": id}).collect::<Vec<_>>()},
                        doc! {"$lookup": {"from": "logmsg", "localField": "_id", "foreignField": "host", "pipeline": [
                            {"$sort": {"time": -1}}, {"$limit": 10_i64}, {"$project": {"time": 1, "message": 1, "host": 1}}
                        ], "as": "children"}},
                    ];
                    let groups: Vec<Group> = db
                        .aggregate(pipeline)
                        .batch_size(i32::MAX as u32)
                        .with_type::<Group>()
                        .await
                        .map_err(err)?
                        .try_collect()
                        .await
                        .map_err(err)?;
                    let by: HashMap<ObjectId, &Vec<LogLine>> = groups.iter().map(|g| (g.id, &g.children)).collect();
                    assert_eq!(by.get(&ids[1]).map(|c| c.len()), Some(10));
                    Ok(())
                }
            })
            .await;
        let ids = many.clone();
        let nv = b
            .way(&case, "naive", docs, move |db, _| {
                let ids = ids.clone();
                async move {
                    let coll: Collection<LogLine> = db.collection("logmsg");
                    for id in &ids {
                        let v: Vec<LogLine> = coll
                            .find(doc! {"host": id})
                            .sort(doc! {"time": -1})
                            .limit(10)
                            .await
                            .map_err(err)?
                            .try_collect()
                            .await
                            .map_err(err)?;
                        assert_eq!(v.len(), 10);
                    }
                    Ok(())
                }
            })
            .await;
        ratio(&case, d, h, Some(nv));
    }

    if o.wants("fanout") {
        fanout_cases(&b, &o).await?;
    }
    if o.wants("subset") {
        subset_case(&b, &o).await?;
    }
    if o.wants("reassign") {
        reassign_case(&b, &o).await?;
    }
    if o.wants("delete") {
        cases::delete::delete_case(&b, &o).await?;
    }
    // Two cases, each a dozen moves of the whole data at most: the
    // embedded server has died in a run of twice as many.
    if o.wants("move_offline") {
        cases::migrate::migrate_case(&b, &o, false).await?;
    }
    if o.wants("move_online") {
        cases::migrate::migrate_case(&b, &o, true).await?;
    }
    if o.wants("append") {
        cases::append::append_case(&b).await?;
    }
    if o.wants("rename") {
        cases::rename::rename_case(&b).await?;
    }
    // Dropped before the compile case: a minutes-long build can outlive an idle connection.
    if let Err(e) = db.drop().await {
        eprintln!("note: could not drop the bench database {name}: {e}");
    }
    if o.compile {
        compile_case();
    }
    Ok(())
}

/// Names the server the figures come from: its address (no credentials),
/// version and replica set, and whether it is the embedded SecantusDB.
async fn server_line(db: &Database, uri: &str) {
    let info = db.run_command(doc! {"buildInfo": 1}).await.unwrap_or_default();
    let hello = db.run_command(doc! {"hello": 1}).await.unwrap_or_default();
    let host = uri.split('@').next_back().unwrap_or(uri).trim_start_matches("mongodb://");
    let host = host.split(['/', '?']).next().unwrap_or(host);
    let version = info.get_str("version").unwrap_or("?");
    let set = hello.get_str("setName").unwrap_or("");
    let text = format!("{info} {hello}").to_lowercase();
    let kind = if text.contains("secantus") { "SecantusDB (embedded, Python)" } else { "MongoDB" };
    println!(
        "{{\"server\":\"{kind}\",\"host\":\"{host}\",\"version\":\"{version}\",\"set\":\"{set}\",\"client_threads\":\"current_thread\"}}"
    );
}

// ---- case 3: fan-out -------------------------------------------------------------------------

async fn fanout_cases(b: &Bench, o: &Opts) -> docrel::Result<()> {
    let db = &b.timed;
    let parts: Vec<Part> = (0..100)
        .map(|i| Part {
            id: ObjectId::new(),
            partno: format!("f-{i}"),
            name: format!("fan part {i}"),
            qty: 1,
            cost: 1.0,
            price: 2.0,
            supplier: ObjectId::new(),
        })
        .collect();
    Part::repo(db).insert_many(&parts).await?;
    let held = parts[0].id;
    let holders = (o.fanout_products / 100).max(1);
    let products: Vec<CatalogProduct> = (0..o.fanout_products)
        .map(|i| CatalogProduct {
            id: ObjectId::new(),
            name: format!("c{i}"),
            parts: if i < holders {
                vec![
                    PartRef { id: held, name: String::new() },
                    PartRef { id: parts[1 + i % 99].id, name: String::new() },
                ]
            } else {
                vec![PartRef { id: parts[1 + i % 99].id, name: String::new() }]
            },
        })
        .collect();
    for chunk in products.chunks(5_000) {
        CatalogProduct::repo(db).insert_many(chunk).await?;
    }
    CatalogProduct::repo(db).ensure_indexes().await?;
    let case = format!("fanout_rename_part_held_by_{holders}_of_{}_products", o.fanout_products);
    let (d, h) = b
        .pair(
            &case,
            holders,
            |db, r| async move {
                Part::repo(&db).update_by_id(&held, Part::fields().name.set(format!("docrel {r}"))).await.map(drop)
            },
            |db, r| async move {
                let name = format!("hand {r}");
                let copies = doc! {"$set": {"parts.$[e].name": &name}};
                let array_filters = Some(vec![Bson::Document(doc! {"e.id": held})]);
                let copies = ("catalog", doc! {"parts.id": held}, copies, array_filters);
                hand_fan_out(&db, ("parts", held), doc! {"name": &name}, copies).await
            },
        )
        .await;
    let nv = b
        .way(&case, "naive", holders, |db, r| async move {
            let name = format!("naive {r}");
            db.collection::<Part>("parts")
                .update_one(doc! {"_id": held}, doc! {"$set": {"name": &name}})
                .await
                .map_err(err)?;
            let coll = db.collection::<CatalogProduct>("catalog");
            for p in drain(&coll, doc! {"parts.id": held}).await? {
                coll.update_one(doc! {"_id": p.id, "parts.id": held}, doc! {"$set": {"parts.$.name": &name}})
                    .await
                    .map_err(err)?;
            }
            Ok(())
        })
        .await;
    ratio(&case, d, h, Some(nv));

    let host = Host { id: ObjectId::new(), name: "fan".into(), ipaddr: "127.66.66.66".into(), logmsgs: vec![] };
    Host::repo(db).insert(&host).await?;
    let raw = db.collection::<BsonDoc>("logmsg");
    let docs: Vec<BsonDoc> = (0..o.fanout_logmsgs)
        .map(|k| doc! {"_id": ObjectId::new(), "time": DateTime::from_millis(k as i64), "message": "m", "ipaddr": "127.66.66.66", "host": host.id})
        .collect();
    for chunk in docs.chunks(10_000) {
        raw.insert_many(chunk.to_vec()).await.map_err(err)?;
    }
    LogMsg::repo(db).ensure_indexes().await?;
    let id = host.id;
    let n = o.fanout_logmsgs;
    let case = format!("fanout_host_ipaddr_into_{n}_logmsgs");
    let (d, h) = b
        .pair(
            &case,
            n,
            |db, r| async move {
                Host::repo(&db)
                    .update_by_id(&id, Host::fields().ipaddr.set(format!("10.1.{}.{}", r / 256, r % 256)))
                    .await
                    .map(drop)
            },
            |db, r| async move {
                let ip = format!("10.2.{}.{}", r / 256, r % 256);
                let copies = ("logmsg", doc! {"host": id}, doc! {"$set": {"ipaddr": &ip}}, None);
                hand_fan_out(&db, ("hosts", id), doc! {"ipaddr": &ip}, copies).await
            },
        )
        .await;
    // The naive way writes every message, one round trip each: the same
    // work as the others, timed fewer times (`--naive-runs`).
    let nv = b
        .way_runs(&case, "naive", n, o.naive_runs, false, |db, r| async move {
            let ip = format!("10.3.{}.{}", r / 256, r % 256);
            db.collection::<BsonDoc>("hosts")
                .update_one(doc! {"_id": id}, doc! {"$set": {"ipaddr": &ip}})
                .await
                .map_err(err)?;
            let coll = db.collection::<BsonDoc>("logmsg");
            let ids: Vec<BsonDoc> = coll
                .find(doc! {"host": id})
                .projection(doc! {"_id": 1})
                .batch_size(i32::MAX as u32)
                .await
                .map_err(err)?
                .try_collect()
                .await
                .map_err(err)?;
            assert_eq!(ids.len(), n, "the naive way writes every message");
            for d in ids {
                coll.update_one(doc! {"_id": d.get("_id").cloned()}, doc! {"$set": {"ipaddr": &ip}})
                    .await
                    .map_err(err)?;
            }
            Ok(())
        })
        .await;
    ratio(&case, d, h, Some(nv));
    Ok(())
}

/// A fan-out by hand on MongoDB 8.0: the source's `$set` of `set` (by
/// `_id`) and the update of its copies (collection, filter, update, array
/// filters) in one client bulkWrite.
async fn hand_fan_out(
    db: &Database,
    (source, id): (&str, ObjectId),
    set: BsonDoc,
    (target, filter, update, array_filters): (&str, BsonDoc, BsonDoc, Option<Vec<Bson>>),
) -> docrel::Result<()> {
    let source = UpdateOneModel::builder()
        .namespace(Namespace::new(db.name(), source))
        .filter(doc! {"_id": id})
        .update(doc! {"$set": set})
        .build();
    let copies = UpdateManyModel::builder()
        .namespace(Namespace::new(db.name(), target))
        .filter(filter)
        .update(update)
        .array_filters(array_filters)
        .build();
    db.client().bulk_write(vec![WriteModel::from(source), copies.into()]).await.map_err(err)?;
    Ok(())
}

// ---- case 4: subset push -----------------------------------------------------------------------

async fn subset_case(b: &Bench, o: &Opts) -> docrel::Result<()> {
    // Each way pushes into hosts of its own: the hand-written pushes do not
    // keep docrel's subset bookkeeping, and docrel's would take them for
    // writes made outside it (the ways run interleaved).
    let hosts: Vec<Host> = (0..50)
        .map(|i| Host { id: ObjectId::new(), name: format!("s{i}"), ipaddr: format!("10.9.0.{i}"), logmsgs: vec![] })
        .collect();
    Host::repo(&b.timed).insert_many(&hosts).await?;
    let ids: Vec<ObjectId> = hosts.iter().map(|h| h.id).collect();
    let n = o.subset_msgs;
    // Way 0: docrel, 1: hand, 2: naive, 3: hand with no transaction, 4: hand with an update per parent.
    let batch = move |way: usize, r: usize| -> Vec<LogMsg> {
        (0..n)
            .map(|k| LogMsg {
                id: ObjectId::new(),
                time: DateTime::from_millis((r * n + k) as i64),
                message: format!("{r}:{k}"),
                ipaddr: format!("10.9.0.{}", way * 10 + k % 10),
                host: ids[way * 10 + k % 10],
            })
            .collect()
    };
    let case = format!("subset_push_{n}_logmsgs_into_10_hosts_max_1000");
    let (d, h) = b
        .pair(
            &case,
            n,
            |db, r| {
                let msgs = batch(0, r);
                async move { LogMsg::repo(&db).insert_many(&msgs).await }
            },
            |db, r| {
                let msgs = batch(1, r);
                async move { hand_subset_push(&db, msgs, HandPush::Atomic).await }
            },
        )
        .await;
    let nv = b
        .way(&case, "naive", n, |db, r| {
            let msgs = batch(2, r);
            async move {
            for m in msgs {
                db.collection::<LogMsg>("logmsg").insert_one(&m).await.map_err(err)?;
                db.collection::<BsonDoc>("hosts")
                    .update_one(
                        doc! {"_id": m.host},
                        doc! {"$push": {"logmsgs": {"$each": [{"time": m.time, "message": &m.message}], "$sort": {"time": 1}, "$slice": -1000}}},
                    )
                    .await
                    .map_err(err)?;
            }
            Ok(())
            }
        })
        .await;
    ratio(&case, d, h, Some(nv));
    // Hand-written with no transaction: one round trip less, not all or nothing.
    b.way(&case, "hand_not_atomic", n, |db, r| {
        let msgs = batch(3, r);
        async move { hand_subset_push(&db, msgs, HandPush::OneBatch).await }
    })
    .await;
    // Hand-written code as written before MongoDB 8.0: an update per parent.
    b.way(&case, "hand_per_parent", n, |db, r| {
        let msgs = batch(4, r);
        async move { hand_subset_push(&db, msgs, HandPush::PerParent).await }
    })
    .await;
    Ok(())
}

/// How the hand-written subset push sends its writes.
#[derive(Clone, Copy)]
enum HandPush {
    /// The children and every push in one `bulkWrite` in a transaction:
    /// all or nothing, as docrel's `insert_many` (the same work).
    Atomic,
    /// The same `bulkWrite` with no transaction: a refused child leaves
    /// the ones before it written and no push sent.
    OneBatch,
    /// `insert_many`, then an `update` per parent (before MongoDB 8.0).
    PerParent,
}

/// The subset push written by hand: each message carries its host's
/// current ipaddr (one read of the hosts), the messages inserted, and the
/// summaries pushed per host with `$each`/`$sort`/`$slice`, sent as `how`
/// says.
async fn hand_subset_push(db: &Database, mut msgs: Vec<LogMsg>, how: HandPush) -> docrel::Result<()> {
    let hosts: Vec<ObjectId> = msgs.iter().map(|m| m.host).collect::<HashSet<_>>().into_iter().collect();
    let ips: Vec<BsonDoc> = db
        .collection::<BsonDoc>("hosts")
        .find(doc! {"_id": {"$in": hosts}})
        .projection(doc! {"ipaddr": 1})
        .await
        .map_err(err)?
        .try_collect()
        .await
        .map_err(err)?;
    let ip: HashMap<ObjectId, String> =
        ips.iter().filter_map(|h| Some((h.get_object_id("_id").ok()?, h.get_str("ipaddr").ok()?.to_owned()))).collect();
    for m in &mut msgs {
        if let Some(i) = ip.get(&m.host) {
            m.ipaddr.clone_from(i);
        }
    }
    let mut by_host: HashMap<ObjectId, Vec<BsonDoc>> = HashMap::new();
    for m in &msgs {
        by_host.entry(m.host).or_default().push(doc! {"time": m.time, "message": &m.message});
    }
    let push =
        |lines: Vec<BsonDoc>| doc! {"$push": {"logmsgs": {"$each": lines, "$sort": {"time": 1}, "$slice": -1000}}};
    if let HandPush::PerParent = how {
        db.collection::<LogMsg>("logmsg").insert_many(&msgs).await.map_err(err)?;
        for (host, lines) in by_host {
            db.collection::<BsonDoc>("hosts").update_one(doc! {"_id": host}, push(lines)).await.map_err(err)?;
        }
        return Ok(());
    }
    let coll = db.collection::<LogMsg>("logmsg");
    let mut models: Vec<WriteModel> = Vec::with_capacity(msgs.len() + by_host.len());
    for m in &msgs {
        models.push(coll.insert_one_model(m).map_err(err)?.into());
    }
    let ns = Namespace::new(db.name(), "hosts");
    for (host, lines) in by_host {
        models.push(
            UpdateOneModel::builder()
                .namespace(ns.clone())
                .filter(doc! {"_id": host})
                .update(push(lines))
                .build()
                .into(),
        );
    }
    let client = db.client().clone();
    if let HandPush::OneBatch = how {
        client.bulk_write(models).await.map_err(err)?;
        return Ok(());
    }
    let mut session = client.start_session().await.map_err(err)?;
    session
        .start_transaction()
        .and_run((client, models), |s, (client, models)| {
            Box::pin(async move { client.bulk_write(models.clone()).session(s).await.map(|_| ()) })
        })
        .await
        .map_err(err)
}

// ---- case 5: two-way reassign ------------------------------------------------------------------

async fn reassign_case(b: &Bench, o: &Opts) -> docrel::Result<()> {
    let db = &b.timed;
    let people: Vec<Person> =
        (0..2).map(|i| Person { id: ObjectId::new(), name: format!("p{i}"), tasks: vec![] }).collect();
    Person::repo(db).insert_many(&people).await?;
    let tasks: Vec<Task> =
        (0..o.tasks).map(|i| Task { id: ObjectId::new(), description: format!("t{i}"), owner: people[0].id }).collect();
    Task::repo(db).insert_many(&tasks).await?;
    db.collection::<BsonDoc>("people")
        .update_one(
            doc! {"_id": people[0].id},
            doc! {"$set": {"tasks": tasks.iter().map(|t| t.id).collect::<Vec<_>>()}},
        )
        .await
        .map_err(err)?;
    let (a, z) = (people[0].id, people[1].id);
    let ids: Vec<ObjectId> = tasks.iter().map(|t| t.id).collect();
    let case = format!("reassign_{}_tasks_two_way", o.tasks);
    let target = move |r: usize| if r.is_multiple_of(2) { z } else { a };
    let list = ids.clone();
    let list_h = ids.clone();
    let (d, h) = b
        .pair(
            &case,
            o.tasks,
            move |db, r| {
                let list = list.clone();
                async move {
                    for t in &list {
                        Task::rels().owner.reassign(&db, t, &target(r)).await?;
                    }
                    Ok(())
                }
            },
            move |db, r| {
                let list = list_h.clone();
                async move {
                    let people = db.collection::<BsonDoc>("people");
                    let tasks = db.collection::<BsonDoc>("tasks");
                    let mut s = db.client().start_session().await.map_err(err)?;
                    let to = target(r);
                    for t in &list {
                        s.start_transaction().await.map_err(err)?;
                        people
                            .update_one(doc! {"_id": to}, doc! {"$addToSet": {"tasks": t}})
                            .session(&mut s)
                            .await
                            .map_err(err)?;
                        let before = tasks
                            .find_one_and_update(doc! {"_id": t}, doc! {"$set": {"owner": to}})
                            .projection(doc! {"owner": 1})
                            .session(&mut s)
                            .await
                            .map_err(err)?;
                        if let Some(old) = before.and_then(|b| b.get_object_id("owner").ok()).filter(|o| *o != to) {
                            people
                                .update_one(doc! {"_id": old}, doc! {"$pull": {"tasks": t}})
                                .session(&mut s)
                                .await
                                .map_err(err)?;
                        }
                        s.commit_transaction().await.map_err(err)?;
                    }
                    Ok(())
                }
            },
        )
        .await;
    let list = ids.clone();
    let nv = b
        .way(&case, "naive", o.tasks, move |db, r| {
            let list = list.clone();
            async move {
                // Read, then three separate writes, no transaction.
                let people = db.collection::<BsonDoc>("people");
                let tasks = db.collection::<BsonDoc>("tasks");
                let to = target(r);
                for t in &list {
                    let task = tasks.find_one(doc! {"_id": t}).await.map_err(err)?;
                    let old = task.and_then(|d| d.get_object_id("owner").ok());
                    tasks.update_one(doc! {"_id": t}, doc! {"$set": {"owner": to}}).await.map_err(err)?;
                    if let Some(old) = old.filter(|o| *o != to) {
                        people.update_one(doc! {"_id": old}, doc! {"$pull": {"tasks": t}}).await.map_err(err)?;
                    }
                    people.update_one(doc! {"_id": to}, doc! {"$addToSet": {"tasks": t}}).await.map_err(err)?;
                }
                Ok(())
            }
        })
        .await;
    ratio(&case, d, h, Some(nv));
    Ok(())
}

// ---- case 6: compile time ---------------------------------------------------------------------

/// `cargo check` of a crate of 50 documents with relations (a bounded
/// embed, a single reference, a copy through it, a bounded reference array)
/// against the same structs with serde derives only, dependencies checked
/// first. Two lines: the crate re-checked after a touch (incremental: the
/// derives run again, rustc reuses what did not change), and checked clean
/// (`cargo clean -p` first: every generated item type-checked). Nine runs
/// of each way, interleaved (docrel first in every other pair) so that the
/// machine's load weighs on both alike; medians.
fn compile_case() {
    const RUNS: usize = 9;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    // Inside the target directory in use, which already holds the dependencies' sources.
    let base = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-compile");
    let ways = ["docrel", "serde"];
    for way in ways {
        let dir = base.join(way);
        std::fs::create_dir_all(dir.join("src")).expect("bench dir");
        std::fs::write(dir.join("src/lib.rs"), compile_source(way == "docrel")).expect("bench source");
        std::fs::write(
            dir.join("Cargo.toml"),
            format!(
                "[package]\nname = \"compile-{way}\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[dependencies]\ndocrel = {{ path = {:?} }}\nserde = {{ version = \"1\", features = [\"derive\"] }}\n\n[workspace]\n",
                root.display().to_string()
            ),
        )
        .expect("bench manifest");
        std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).expect("lock");
    }
    let cargo = |way: &str, args: &[&str]| {
        let t0 = Instant::now();
        let ok = std::process::Command::new(env!("CARGO"))
            .args(args)
            .args(["--quiet", "--offline"])
            .current_dir(base.join(way))
            .env("CARGO_TARGET_DIR", base.join("target"))
            .env_remove("RUSTFLAGS")
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(ok, "`cargo {}` of the {way} compile-time crate must succeed", args.join(" "));
        t0.elapsed().as_secs_f64() * 1000.0
    };
    for way in ways {
        cargo(way, &["check"]); // dependencies
    }
    let touched = |way: &str| {
        let lib = base.join(way).join("src/lib.rs");
        let text = std::fs::read_to_string(&lib).expect("source");
        std::fs::write(&lib, text).expect("touch");
        cargo(way, &["check"])
    };
    let clean = |way: &str| {
        cargo(way, &["clean", "-p", &format!("compile-{way}")]);
        cargo(way, &["check"])
    };
    for (case, from_clean) in
        [("check_50_documents_with_relations", false), ("check_50_documents_with_relations_clean", true)]
    {
        let mut times = [Vec::new(), Vec::new()];
        for run in 0..RUNS {
            let order = if run % 2 == 0 { [0, 1] } else { [1, 0] };
            for i in order {
                times[i].push(if from_clean { clean(ways[i]) } else { touched(ways[i]) });
            }
        }
        let mut medians = [0.0; 2];
        for (i, way) in ways.iter().enumerate() {
            medians[i] = median(&mut times[i]);
            println!(
                "{{\"case\":\"{case}\",\"way\":\"{way}\",\"median_ms\":{:.0},\"min_ms\":{:.0},\"max_ms\":{:.0}}}",
                medians[i],
                times[i][0],
                times[i][RUNS - 1]
            );
        }
        println!("{{\"case\":\"{case}\",\"ratio\":\"docrel/serde\",\"wall\":{:.2}}}", medians[0] / medians[1]);
    }
}

/// The 50 structs: each embeds a bounded array, refers to the one before
/// it (and copies its name through that reference), and holds up to 100
/// ids of it. Without `docrel`, the same fields with serde derives only.
fn compile_source(docrel: bool) -> String {
    let mut src =
        String::from("#![allow(dead_code)]\nuse docrel::bson::oid::ObjectId;\nuse serde::{Deserialize, Serialize};\n");
    let attr = |a: &str| if docrel { format!("    {a}\n") } else { String::new() };
    for i in 0..50 {
        let prev = (i + 49) % 50;
        let derive = if docrel { "docrel::Document, " } else { "" };
        src.push_str(&format!("#[derive({derive}Serialize, Deserialize)]\n"));
        src.push_str(&attr(&format!("#[document(collection = \"c{i}\")]")).replace("    ", ""));
        src.push_str(&format!("pub struct Doc{i} {{\n    #[serde(rename = \"_id\")]\n    pub id: ObjectId,\n"));
        src.push_str("    pub name: String,\n    pub qty: i32,\n    pub price: f64,\n");
        src.push_str(&attr("#[embed(max = 20)]"));
        src.push_str("    pub tags: Vec<String>,\n");
        src.push_str(&attr(&format!("#[reference(to = Doc{prev})]")));
        src.push_str("    pub prev: Option<ObjectId>,\n");
        src.push_str(&attr(&format!("#[denormalize(from = Doc{prev}::name, via = prev)]")));
        src.push_str("    pub prev_name: Option<String>,\n");
        src.push_str(&attr(&format!("#[reference(many, to = Doc{prev}, max = 100)]")));
        src.push_str("    pub items: Vec<ObjectId>,\n}\n\n");
    }
    src
}

// ---- the chart ----------------------------------------------------------------------------------

fn draw_chart(points: &[(usize, Stat, Stat, Option<Stat>)], refs: usize) {
    use plotters::prelude::*;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/eager_load.svg");
    let root = SVGBackend::new(&path, (900, 420)).into_drawing_area();
    let _ = root.fill(&WHITE);
    let (left, right) = root.split_horizontally(450);
    let xs: Vec<f64> = points.iter().map(|p| p.0 as f64).collect();
    let (xmin, xmax) = (xs.iter().copied().fold(f64::MAX, f64::min), xs.iter().copied().fold(0.0, f64::max));
    let series = |f: &dyn Fn(&Stat) -> f64| -> [Vec<(f64, f64)>; 3] {
        [
            points.iter().map(|p| (p.0 as f64, f(&p.1))).collect(),
            points.iter().map(|p| (p.0 as f64, f(&p.2))).collect(),
            points.iter().filter_map(|p| p.3.as_ref().map(|n| (p.0 as f64, f(n)))).collect(),
        ]
    };
    type Panel<'a, 'b> = (&'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>, &'static str, [Vec<(f64, f64)>; 3]);
    let panels: [Panel; 2] = [
        (&left, "wall time (ms)", series(&|s| s.median_ms.max(0.1))),
        (&right, "round trips", series(&|s| s.round_trips.max(1) as f64)),
    ];
    for (area, label, data) in panels {
        let ymax = data.iter().flatten().map(|p| p.1).fold(1.0, f64::max) * 2.0;
        let Ok(mut chart) = ChartBuilder::on(area)
            .caption(format!("eager load, {refs} refs per parent: {label}"), ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(55)
            .build_cartesian_2d((xmin..xmax).log_scale(), (0.1..ymax).log_scale())
        else {
            continue;
        };
        let _ = chart.configure_mesh().x_desc("parents").y_desc(label).draw();
        for (i, (name, color)) in [("docrel", BLUE), ("hand-written", GREEN), ("naive", RED)].into_iter().enumerate() {
            let _ = chart
                .draw_series(LineSeries::new(data[i].clone(), color.stroke_width(2)))
                .map(|s| s.label(name).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], color)));
            let _ = chart.draw_series(data[i].iter().map(|p| Circle::new(*p, 3, color.filled())));
        }
        let _ = chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw();
    }
    let _ = root.present();
    eprintln!("chart written to {}", path.display());
}
