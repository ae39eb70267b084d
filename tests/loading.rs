//! Eager loading at the physical limit: parents read as views with only
//! what the page needs, 1 + K round trips, and what Mongoose's populate can
//! do (filter, sort, limits, reverse and nested loads), each with its exact
//! round trips and the commands the server saw.

use docrel::bson::{doc, oid::ObjectId, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::{Document, Filter, Sort, View};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "suppliers")]
struct Supplier {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    country: String,
}

#[derive(View, Deserialize, Debug)]
#[view(of = Supplier)]
struct SupplierName {
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    price: f64,
    #[reference(to = Supplier)]
    supplier: ObjectId,
}

#[derive(View, Deserialize, Debug)]
#[view(of = Part)]
struct PartLine {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    price: f64,
}

/// A part as the nested load needs it: its supplier reference.
#[derive(View, Deserialize, Debug)]
#[view(of = Part)]
struct PartWithSupplier {
    name: String,
    supplier: ObjectId,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "products")]
struct Product {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    description: String,
    #[reference(many, to = Part, max = 100)]
    parts: Vec<ObjectId>,
}

/// What a product list shows: the name, and the parts to load.
#[derive(View, Deserialize, Debug)]
#[view(of = Product)]
struct ProductCard {
    name: String,
    parts: Vec<ObjectId>,
}

struct Fixture {
    suppliers: Vec<Supplier>,
    parts: Vec<Part>,
    products: Vec<Product>,
}

/// 3 suppliers, 10 parts (price = index), 4 products of 5 parts each.
async fn fixture(t: &TestDb) -> docrel::Result<Fixture> {
    let suppliers: Vec<Supplier> =
        (0..3).map(|i| Supplier { id: ObjectId::new(), name: format!("s{i}"), country: "NZ".into() }).collect();
    Supplier::repo(&t.db).insert_many(&suppliers).await?;
    let parts: Vec<Part> = (0..10)
        .map(|i| Part { id: ObjectId::new(), name: format!("p{i}"), price: i as f64, supplier: suppliers[i % 3].id })
        .collect();
    Part::repo(&t.db).insert_many(&parts).await?;
    let products: Vec<Product> = (0..4)
        .map(|i| Product {
            id: ObjectId::new(),
            name: format!("product {i}"),
            description: "a long description that a list page does not show".repeat(40),
            parts: (0..5).map(|k| parts[(i * 2 + k * 3) % 10].id).collect(),
        })
        .collect();
    Product::repo(&t.db).insert_many(&products).await?;
    Ok(Fixture { suppliers, parts, products })
}

fn names<'a>(it: impl Iterator<Item = &'a PartLine>) -> Vec<String> {
    it.map(|p| p.name.clone()).collect()
}

#[tokio::test]
async fn a_view_of_the_parents_loads_their_relations_in_1_plus_k_round_trips() -> docrel::Result<()> {
    let t = TestDb::new("load_view").await?;
    let f = fixture(&t).await?;
    let mark = t.trips.mark();
    let cards = Product::repo(&t.db).find(Filter::all()).view::<ProductCard>().await?;
    let parents_bytes = t.trips.bytes_since(mark);
    let parts = Product::rels().parts.load::<PartLine>(&t.db, &cards).await?;
    assert_eq!(t.trips.commands_since(mark), ["find products", "find parts"]);
    assert_eq!(cards.len(), 4);
    for (i, card) in cards.iter().enumerate() {
        let want: Vec<String> = card
            .parts
            .iter()
            .map(|id| f.parts.iter().find(|p| p.id == *id).map(|p| p.name.clone()).unwrap_or_default())
            .collect();
        assert_eq!(names(parts.of(i)), want, "{}: in the product's order", card.name);
    }
    // The whole documents cost the descriptions too; the view did not read them.
    let mark = t.trips.mark();
    let whole = Product::repo(&t.db).find(Filter::all()).await?;
    assert!(t.trips.bytes_since(mark) > parents_bytes + 4 * 1000);
    assert_eq!(whole.len(), 4);
    // The same load from whole documents gives the same result.
    let again = Product::rels().parts.load::<PartLine>(&t.db, &whole).await?;
    assert_eq!(
        (0..4).map(|i| names(again.of(i))).collect::<Vec<_>>(),
        (0..4).map(|i| names(parts.of(i))).collect::<Vec<_>>()
    );
    assert_eq!(f.products.len(), 4);
    Ok(())
}

#[tokio::test]
async fn a_result_set_that_fits_is_one_round_trip_and_a_stream_reads_batches() -> docrel::Result<()> {
    let t = TestDb::new("load_batches").await?;
    let many: Vec<Supplier> =
        (0..450).map(|i| Supplier { id: ObjectId::new(), name: format!("s{i}"), country: "NZ".into() }).collect();
    Supplier::repo(&t.db).insert_many(&many).await?;
    let mark = t.trips.mark();
    let all = Supplier::repo(&t.db).find(Filter::all()).await?;
    assert_eq!((all.len(), t.trips.since(mark)), (450, 1), "await: one batch, no getMore");
    let mark = t.trips.mark();
    let all = Supplier::repo(&t.db).find(Filter::all()).view::<SupplierName>().to_vec().await?;
    assert_eq!((all.len(), t.trips.since(mark)), (450, 1), "to_vec: one batch");
    let mark = t.trips.mark();
    let some = Supplier::repo(&t.db).find(Filter::all()).limit(300).await?;
    assert_eq!((some.len(), t.trips.since(mark)), (300, 1), "the limit is the batch");
    let mark = t.trips.mark();
    use futures::TryStreamExt;
    let streamed: Vec<Supplier> = Supplier::repo(&t.db).find(Filter::all()).stream().await?.try_collect().await?;
    assert_eq!(streamed.len(), 450);
    assert!(t.trips.since(mark) > 1, "a stream keeps the server's default batches");
    Ok(())
}

#[tokio::test]
async fn exclude_leaves_the_big_field_and_the_bookkeeping_on_the_server() -> docrel::Result<()> {
    #[derive(Document, Serialize, Deserialize, Debug)]
    #[document(collection = "products")]
    struct Light {
        #[serde(rename = "_id")]
        id: ObjectId,
        name: String,
        #[serde(default)]
        description: String,
    }
    let t = TestDb::new("load_exclude").await?;
    fixture(&t).await?;
    let mark = t.trips.mark();
    let light = Light::repo(&t.db).find(Filter::all()).exclude(Light::fields().description).await?;
    let light_bytes = t.trips.bytes_since(mark);
    assert!(light.iter().all(|p| p.description.is_empty() && p.name.starts_with("product")));
    let mark = t.trips.mark();
    let full = Light::repo(&t.db).find(Filter::all()).await?;
    assert!(full.iter().all(|p| p.description.len() > 1000));
    assert!(t.trips.bytes_since(mark) > light_bytes + 4 * 1000);
    Ok(())
}

#[tokio::test]
async fn load_where_filters_sorts_and_limits_what_is_loaded_in_one_round_trip() -> docrel::Result<()> {
    let t = TestDb::new("load_where").await?;
    let f = fixture(&t).await?;
    let cards =
        Product::repo(&t.db).find(Filter::all()).sort(Sort::new(doc! {"name": 1})).view::<ProductCard>().await?;
    let price = |p: &PartLine| p.price;

    // Only parts under 5, in each product's order.
    let mark = t.trips.mark();
    let cheap = Product::rels().parts.load_where::<PartLine>(&t.db, &cards, Part::fields().price.lt(5.0)).await?;
    assert_eq!(t.trips.commands_since(mark), ["find parts"]);
    for (i, card) in cards.iter().enumerate() {
        assert!(cheap.of(i).all(|p| p.price < 5.0));
        assert_eq!(cheap.of(i).len() + cheap.missing(i).len(), card.parts.len(), "the rest are reported, not lost");
    }

    // Sorted by price, most expensive first, at most 2 per product.
    let mark = t.trips.mark();
    let top = Product::rels()
        .parts
        .load::<PartLine>(&t.db, &cards)
        .sort(Part::fields().price.desc())
        .limit_per_parent(2)
        .await?;
    assert_eq!(t.trips.since(mark), 1);
    for (i, card) in cards.iter().enumerate() {
        let mut want: Vec<f64> =
            card.parts.iter().filter_map(|id| f.parts.iter().find(|p| p.id == *id)).map(|p| p.price).collect();
        want.sort_by(|a, b| b.total_cmp(a));
        want.truncate(2);
        assert_eq!(top.of(i).map(price).collect::<Vec<_>>(), want, "{}", card.name);
    }

    // A total limit on the loaded documents (the server's limit).
    let mark = t.trips.mark();
    let three = Product::rels().parts.load::<PartLine>(&t.db, &cards).sort(Part::fields().price.asc()).limit(3).await?;
    assert_eq!(t.trips.since(mark), 1);
    let mut prices: Vec<f64> = three.distinct().iter().map(price).collect();
    prices.sort_by(f64::total_cmp);
    assert_eq!(prices, [0.0, 1.0, 2.0]);
    Ok(())
}

#[tokio::test]
async fn a_filtered_load_is_not_merged_with_a_plain_one_into_the_same_collection() -> docrel::Result<()> {
    let t = TestDb::new("load_join").await?;
    let f = fixture(&t).await?;
    let mark = t.trips.mark();
    let (all, cheap) = docrel::join(
        &t.db,
        (
            Product::rels().parts.of::<PartLine>(&f.products),
            Product::rels().parts.of::<PartLine>(&f.products).filter(Part::fields().price.lt(3.0)),
        ),
    )
    .await?;
    assert_eq!(t.trips.commands_since(mark), ["find parts", "find parts"]);
    assert_eq!(all.distinct().len(), 10);
    assert!(cheap.distinct().iter().all(|p| p.price < 3.0));
    Ok(())
}

#[tokio::test]
async fn reverse_load_of_many_targets_is_one_query_grouped_back() -> docrel::Result<()> {
    let t = TestDb::new("load_reverse").await?;
    let f = fixture(&t).await?;
    Product::repo(&t.db).ensure_indexes().await?;
    // The products of each part, for all 10 parts (and one that nothing uses).
    let mut targets: Vec<ObjectId> = f.parts.iter().map(|p| p.id).collect();
    targets.push(ObjectId::new());
    let mark = t.trips.mark();
    let users = Product::rels().parts.referrers_of_many(&t.db, &targets).view::<ProductCard>().await?;
    assert_eq!(t.trips.commands_since(mark), ["find products"]);
    for (k, part) in targets.iter().enumerate() {
        let mut want: Vec<&str> =
            f.products.iter().filter(|p| p.parts.contains(part)).map(|p| p.name.as_str()).collect();
        let mut got: Vec<&str> = users.of(k).map(|c| c.name.as_str()).collect();
        want.sort_unstable();
        got.sort_unstable();
        assert_eq!(got, want, "part {k}");
    }
    assert!(users.of(10).len() == 0);
    assert!(users.distinct().len() <= 4, "each product read once");
    // The same from the server's view, read back with the raw driver.
    let raw: Vec<BsonDoc> = {
        use futures::TryStreamExt;
        t.db.collection::<BsonDoc>("products")
            .find(doc! {"parts": f.parts[0].id})
            .await
            .expect("raw")
            .try_collect()
            .await
            .expect("raw")
    };
    assert_eq!(users.of(0).len(), raw.len());
    Ok(())
}

#[tokio::test]
async fn nested_loads_cost_one_round_trip_per_level() -> docrel::Result<()> {
    let t = TestDb::new("load_nested").await?;
    let f = fixture(&t).await?;
    let mark = t.trips.mark();
    let cards = Product::repo(&t.db).find(Filter::all()).view::<ProductCard>().await?;
    let parts = Product::rels().parts.load::<PartWithSupplier>(&t.db, &cards).await?;
    let suppliers = Part::rels().supplier.load::<SupplierName>(&t.db, parts.distinct()).await?;
    assert_eq!(t.trips.commands_since(mark), ["find products", "find parts", "find suppliers"]);
    for (i, card) in cards.iter().enumerate() {
        let got: Vec<(String, String)> = parts
            .indices(i)
            .map(|k| (parts.distinct()[k].name.clone(), suppliers.one(k).map(|s| s.name.clone()).unwrap_or_default()))
            .collect();
        let want: Vec<(String, String)> = card
            .parts
            .iter()
            .map(|id| {
                let p = f.parts.iter().find(|p| p.id == *id).expect("part");
                let s = f.suppliers.iter().find(|s| s.id == p.supplier).expect("supplier");
                (p.name.clone(), s.name.clone())
            })
            .collect();
        assert_eq!(got, want);
    }
    Ok(())
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "companies")]
struct Company {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(docrel::Embedded, Serialize, Deserialize, Debug, Clone)]
struct PartRef {
    id: ObjectId,
    #[denormalize(from = Part::name)]
    name: String,
}

/// Two relations into two collections, and an array of `{id, name}` copies.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "catalog")]
struct CatalogProduct {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    #[reference(to = Company)]
    maker: ObjectId,
    #[reference(many, to = Part, max = 100)]
    parts: Vec<PartRef>,
}

#[derive(View, Deserialize, Debug)]
#[view(of = CatalogProduct)]
struct CatalogCard {
    name: String,
    maker: ObjectId,
    parts: Vec<PartRef>,
}

async fn catalog(t: &TestDb, f: &Fixture) -> docrel::Result<Vec<Company>> {
    let makers: Vec<Company> = (0..2).map(|i| Company { id: ObjectId::new(), name: format!("maker {i}") }).collect();
    Company::repo(&t.db).insert_many(&makers).await?;
    let products: Vec<CatalogProduct> = (0..6)
        .map(|i| CatalogProduct {
            id: ObjectId::new(),
            name: format!("c{i}"),
            maker: makers[i % 2].id,
            parts: (0..4).map(|k| PartRef { id: f.parts[(i + k * 3) % 10].id, name: String::new() }).collect(),
        })
        .collect();
    CatalogProduct::repo(&t.db).insert_many(&products).await?;
    Ok(makers)
}

#[tokio::test]
async fn k_relations_over_n_parents_cost_1_plus_k_round_trips() -> docrel::Result<()> {
    let t = TestDb::new("load_k").await?;
    let f = fixture(&t).await?;
    let makers = catalog(&t, &f).await?;
    let mark = t.trips.mark();
    let cards = CatalogProduct::repo(&t.db).find(Filter::all()).view::<CatalogCard>().await?;
    let (parts, made_by) = docrel::join(
        &t.db,
        (CatalogProduct::rels().parts.of::<PartLine>(&cards), CatalogProduct::rels().maker.of::<Company>(&cards)),
    )
    .await?;
    assert_eq!(t.trips.commands_since(mark), ["find catalog", "find parts", "find companies"]);
    for (i, card) in cards.iter().enumerate() {
        let ids: Vec<ObjectId> = parts.of(i).map(|p| p.id).collect();
        assert_eq!(ids, card.parts.iter().map(|p| p.id).collect::<Vec<_>>());
        assert_eq!(made_by.one(i).map(|m| m.id), Some(card.maker));
    }
    assert!(makers.len() == 2 && made_by.distinct().len() == 2);
    Ok(())
}

#[tokio::test]
async fn the_lookup_strategy_is_one_round_trip_with_the_same_result() -> docrel::Result<()> {
    let t = TestDb::new("load_lookup").await?;
    let f = fixture(&t).await?;
    catalog(&t, &f).await?;
    let find = || Product::repo(&t.db).find(Filter::all()).sort(Sort::new(doc! {"name": 1})).view::<ProductCard>();

    let mark = t.trips.mark();
    let (cards, parts) = Product::rels().parts.with_parents(find()).view::<PartLine>().await?;
    assert_eq!(t.trips.commands_since(mark), ["find products", "find parts"]);
    let mark = t.trips.mark();
    let (cards2, parts2) =
        Product::rels().parts.with_parents(find()).view::<PartLine>().strategy(docrel::load::Strategy::Lookup).await?;
    assert_eq!(t.trips.commands_since(mark), ["aggregate products"]);
    assert_eq!(cards.iter().map(|c| &c.name).collect::<Vec<_>>(), cards2.iter().map(|c| &c.name).collect::<Vec<_>>());
    for i in 0..cards.len() {
        assert_eq!(names(parts.of(i)), names(parts2.of(i)), "in each parent's order, duplicates kept");
    }

    // An array of `{id, ..}` elements joins on `parts.id`.
    let mark = t.trips.mark();
    let (cat, cat_parts) = CatalogProduct::rels()
        .parts
        .with_parents(CatalogProduct::repo(&t.db).find(Filter::all()).view::<CatalogCard>())
        .view::<PartLine>()
        .strategy(docrel::load::Strategy::Lookup)
        .await?;
    assert_eq!(t.trips.since(mark), 1);
    for (i, card) in cat.iter().enumerate() {
        let ids: Vec<ObjectId> = cat_parts.of(i).map(|p| p.id).collect();
        assert_eq!(ids, card.parts.iter().map(|p| p.id).collect::<Vec<_>>());
    }
    Ok(())
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "logmsg")]
struct LogMsg {
    #[serde(rename = "_id")]
    id: ObjectId,
    n: i32,
    text: String,
    #[parent_ref(to = Supplier, sort = "-n")]
    host: ObjectId,
}

#[derive(View, Deserialize, Debug)]
#[view(of = LogMsg)]
struct LogN {
    n: i32,
}

#[tokio::test]
async fn children_and_latest_are_awaited_like_the_drivers_builders() -> docrel::Result<()> {
    let t = TestDb::new("load_children").await?;
    let f = fixture(&t).await?;
    let msgs: Vec<LogMsg> = (0..300)
        .map(|n| LogMsg { id: ObjectId::new(), n, text: "x".repeat(50), host: f.suppliers[(n % 3) as usize].id })
        .collect();
    LogMsg::repo(&t.db).insert_many(&msgs).await?;
    LogMsg::repo(&t.db).ensure_indexes().await?;
    let host = f.suppliers[0].id;
    let mark = t.trips.mark();
    let all: Vec<LogMsg> = LogMsg::rels().host.children_of(&t.db, &host).await?;
    assert_eq!((all.len(), t.trips.since(mark)), (100, 1));
    assert_eq!(all[0].n, 297, "the declared order");
    let mark = t.trips.mark();
    let last: Vec<LogN> = LogMsg::rels().host.children_of(&t.db, &host).view::<LogN>().limit(3).await?;
    assert_eq!(last.iter().map(|m| m.n).collect::<Vec<_>>(), [297, 294, 291]);
    let ids: Vec<ObjectId> = f.suppliers.iter().map(|s| s.id).collect();
    let latest = LogMsg::rels().host.latest_per_parent(&t.db, &ids, 2).view::<LogN>().await?;
    assert_eq!(t.trips.since(mark), 2);
    assert_eq!(latest.of(1).map(|m| m.n).collect::<Vec<_>>(), [298, 295]);
    Ok(())
}
