//! The one-to-N designs of the reference texts, stored with their shapes,
//! read back with the raw driver, with the round trips each load costs.

use docrel::bson::{doc, oid::ObjectId, Bson, DateTime, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::{Document, Error, Filter, View};
use serde::{Deserialize, Serialize};

// ---- one-to-few: patron.addresses -------------------------------------------------

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Address {
    street: String,
    city: String,
    state: String,
    zip: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[document(collection = "patrons")]
struct Patron {
    #[serde(rename = "_id")]
    id: String,
    name: String,
    #[embed(max = 10)]
    addresses: Vec<Address>,
}

fn address(street: &str, city: &str) -> Address {
    Address { street: street.into(), city: city.into(), state: "MA".into(), zip: "12345".into() }
}

async fn raw_one(t: &TestDb, collection: &str, filter: BsonDoc) -> BsonDoc {
    t.db.collection::<BsonDoc>(collection).find_one(filter).await.expect("raw read").expect("stored")
}

#[tokio::test]
async fn patron_addresses_are_embedded_as_in_the_reference_text() -> docrel::Result<()> {
    let t = TestDb::new("patrons").await?;
    let joe = Patron {
        id: "joe".into(),
        name: "Joe Bookreader".into(),
        addresses: vec![address("123 Fake Street", "Faketon"), address("1 Some Other Street", "Boston")],
    };
    Patron::repo(&t.db).insert(&joe).await?;
    let stored = raw_one(&t, "patrons", doc! {"_id": "joe"}).await;
    assert_eq!(
        stored,
        doc! {
            "_id": "joe",
            "name": "Joe Bookreader",
            "addresses": [
                {"street": "123 Fake Street", "city": "Faketon", "state": "MA", "zip": "12345"},
                {"street": "1 Some Other Street", "city": "Boston", "state": "MA", "zip": "12345"},
            ]
        }
    );
    Ok(())
}

#[tokio::test]
async fn an_embed_over_its_bound_is_refused_before_any_write() -> docrel::Result<()> {
    let t = TestDb::new("embed_bound").await?;
    let repo = Patron::repo(&t.db);
    let crowded = Patron { id: "kate".into(), name: "Kate".into(), addresses: vec![address("a", "b"); 11] };
    let mark = t.trips.mark();
    let err = repo.insert(&crowded).await.unwrap_err();
    assert_eq!(t.trips.since(mark), 0);
    let text = err.to_string();
    assert!(
        matches!(err, Error::EmbedFull { collection: "patrons", field: "addresses", max: 10, len: 11, .. }),
        "{text}"
    );
    assert!(text.contains("\"kate\""), "names the document: {text}");
    assert_eq!(repo.count(Filter::all()).await?, 0);

    let mut ok = crowded.clone();
    ok.addresses.truncate(10);
    repo.insert(&ok).await?;
    assert!(matches!(repo.replace(&crowded).await, Err(Error::EmbedFull { .. })));
    // A push into the full array: refused by the guarded filter, nothing written.
    let push = Patron::fields().addresses.push([address("c", "d")]);
    let err = repo.update_by_id(&"kate".to_owned(), push).await.unwrap_err();
    assert!(matches!(err, Error::EmbedFull { len: 11, .. }), "{err}");
    assert_eq!(raw_one(&t, "patrons", doc! {"_id": "kate"}).await.get_array("addresses").unwrap().len(), 10);
    Ok(())
}

#[tokio::test]
async fn sixteen_concurrent_pushes_into_a_bound_of_ten_end_with_ten() -> docrel::Result<()> {
    let t = TestDb::new("embed_race").await?;
    let repo = Patron::repo(&t.db);
    repo.insert(&Patron { id: "joe".into(), name: "Joe".into(), addresses: vec![] }).await?;
    let mut tasks = Vec::new();
    for i in 0..16 {
        let repo = repo.clone();
        tasks.push(tokio::spawn(async move {
            let push = Patron::fields().addresses.push([address(&format!("{i} Main St"), "Boston")]);
            repo.update_by_id(&"joe".to_owned(), push).await
        }));
    }
    let mut ok = 0;
    let mut full = 0;
    for task in tasks {
        match task.await.expect("task") {
            Ok(_) => ok += 1,
            Err(Error::EmbedFull { max: 10, field: "addresses", .. }) => full += 1,
            Err(other) => panic!("unexpected error: {other}"),
        }
    }
    assert_eq!((ok, full), (10, 6));
    let stored = raw_one(&t, "patrons", doc! {"_id": "joe"}).await;
    assert_eq!(stored.get_array("addresses").unwrap().len(), 10);
    Ok(())
}

#[tokio::test]
async fn the_server_refuses_a_bound_breaking_write_from_any_client() -> docrel::Result<()> {
    let t = TestDb::new("validator").await?;
    let validator = Patron::repo(&t.db).ensure_validator().await?.expect("Patron has a bound");
    assert_eq!(
        validator,
        doc! {"$jsonSchema": {"bsonType": "object", "properties": {"addresses": {"bsonType": "array", "maxItems": 10_i64}}}}
    );
    let raw = t.db.collection::<BsonDoc>("patrons");
    let eleven: Vec<BsonDoc> = (0..11).map(|i| doc! {"street": i.to_string()}).collect();
    assert!(raw.insert_one(doc! {"_id": "x", "name": "x", "addresses": eleven}).await.is_err());
    assert!(raw.insert_one(doc! {"_id": "y", "name": "y", "addresses": []}).await.is_ok());
    // Idempotent: installing again over the existing collection works.
    assert!(Patron::repo(&t.db).ensure_validator().await?.is_some());
    Ok(())
}

// ---- one-to-many: products.parts as ids and as {id, name} --------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    partno: String,
    name: String,
    qty: i32,
    cost: f64,
    price: f64,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "companies")]
struct Company {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "products")]
struct Product {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    #[reference(to = Company)]
    manufacturer: ObjectId,
    catalog_number: i32,
    #[reference(many, to = Part, max = 2000, on_delete = pull)]
    parts: Vec<ObjectId>,
    #[reference(many, to = Part, max = 100)]
    spares: Vec<ObjectId>,
}

#[derive(docrel::Embedded, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct PartRef {
    id: ObjectId,
    name: String,
}

/// The denormalized shape: `parts: [{id, name}]`.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "catalog")]
struct CatalogProduct {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    #[reference(many, to = Part, max = 2000, on_delete = pull)]
    parts: Vec<PartRef>,
}

#[derive(View, Deserialize, Debug, PartialEq)]
#[view(of = Part)]
struct PartName {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(View, Deserialize, Debug)]
#[view(of = Company)]
struct CompanyName {
    name: String,
}

/// Arrays that may be absent (`Option<Vec<T>>`): bounded when present.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "shelves")]
struct Shelf {
    #[serde(rename = "_id")]
    id: i32,
    #[embed(max = 3)]
    labels: Option<Vec<String>>,
    #[reference(many, to = Part, max = 2)]
    parts: Option<Vec<ObjectId>>,
}

#[tokio::test]
async fn optional_arrays_are_bounded_when_present_and_load_when_absent() -> docrel::Result<()> {
    let t = TestDb::new("optional_arrays").await?;
    let repo = Shelf::repo(&t.db);
    let part = part(0);
    Part::repo(&t.db).insert(&part).await?;
    let empty = Shelf { id: 1, labels: None, parts: None };
    let full = Shelf { id: 2, labels: Some(vec!["a".into(); 3]), parts: Some(vec![part.id]) };
    repo.insert_many(&[empty.clone(), full.clone()]).await?;
    let crowded = Shelf { id: 3, labels: Some(vec!["a".into(); 4]), parts: None };
    let err = repo.insert(&crowded).await.unwrap_err();
    assert!(matches!(err, Error::EmbedFull { field: "labels", max: 3, len: 4, .. }), "{err}");
    let too_many = Shelf { id: 4, labels: None, parts: Some(vec![part.id; 3]) };
    assert!(matches!(repo.insert(&too_many).await, Err(Error::EmbedFull { field: "parts", max: 2, .. })));

    let loaded = Shelf::rels().parts.load::<Part>(&t.db, &[empty, full]).await?;
    assert_eq!(loaded.of(0).count(), 0);
    assert_eq!(loaded.of(1).map(|p| p.id).collect::<Vec<_>>(), [part.id]);

    // The server's validator lets an absent array (`null`) through, and no more than the bound.
    repo.ensure_validator().await?.expect("Shelf has bounds");
    let raw = t.db.collection::<BsonDoc>("shelves");
    assert!(raw.insert_one(doc! {"_id": 5, "labels": Bson::Null, "parts": Bson::Null}).await.is_ok());
    assert!(raw.insert_one(doc! {"_id": 6, "labels": ["a", "b", "c", "d"], "parts": Bson::Null}).await.is_err());
    Ok(())
}

fn part(i: usize) -> Part {
    Part {
        id: ObjectId::new(),
        partno: format!("{i:03}-aff"),
        name: format!("part {i}"),
        qty: 94,
        cost: 0.94,
        price: 3.99,
    }
}

async fn catalog_fixture(t: &TestDb, parents: usize, parts_each: usize) -> docrel::Result<(Vec<Part>, Company)> {
    let parts: Vec<Part> = (0..parts_each * 2).map(part).collect();
    Part::repo(&t.db).insert_many(&parts).await?;
    let acme = Company { id: ObjectId::new(), name: "Acme Corp".into() };
    Company::repo(&t.db).insert(&acme).await?;
    let products: Vec<Product> = (0..parents)
        .map(|i| Product {
            id: ObjectId::new(),
            name: format!("smoke shifter {i}"),
            manufacturer: acme.id,
            catalog_number: i as i32,
            parts: (0..parts_each).map(|k| parts[(i + k) % parts.len()].id).collect(),
            spares: vec![],
        })
        .collect();
    Product::repo(&t.db).insert_many(&products).await?;
    Ok((parts, acme))
}

#[tokio::test]
async fn eager_loading_two_relations_costs_three_round_trips_for_1_10_and_1000_parents() -> docrel::Result<()> {
    let t = TestDb::new("eager").await?;
    let (parts, _) = catalog_fixture(&t, 1000, 5).await?;
    for n in [1_u64, 10, 1000] {
        let mark = t.trips.mark();
        let products = Product::repo(&t.db)
            .find(Filter::all())
            .sort(Product::fields().catalog_number.asc())
            .limit(n)
            .to_vec()
            .await?;
        let (loaded_parts, makers) = docrel::join(
            &t.db,
            (
                Product::rels().parts.of::<PartName>(&products),
                Product::rels().manufacturer.of::<CompanyName>(&products),
            ),
        )
        .await?;
        assert_eq!(t.trips.commands_since(mark), ["find products", "find parts", "find companies"], "{n} parents");
        assert_eq!(products.len() as u64, n);
        for (i, p) in products.iter().enumerate() {
            let names: Vec<&str> = loaded_parts.of(i).map(|v| v.name.as_str()).collect();
            let want: Vec<String> =
                p.parts.iter().map(|id| parts.iter().find(|x| x.id == *id).unwrap().name.clone()).collect();
            assert_eq!(names, want);
            assert_eq!(makers.one(i).map(|c| c.name.as_str()), Some("Acme Corp"));
        }
    }
    Ok(())
}

#[tokio::test]
async fn order_and_duplicates_are_kept_and_dangling_ids_reported() -> docrel::Result<()> {
    let t = TestDb::new("order").await?;
    let parts: Vec<Part> = (0..3).map(part).collect();
    Part::repo(&t.db).insert_many(&parts).await?;
    let ghost = ObjectId::new();
    let products = vec![
        Product {
            id: ObjectId::new(),
            name: "a".into(),
            manufacturer: ObjectId::new(),
            catalog_number: 1,
            parts: vec![parts[2].id, parts[0].id, parts[2].id, ghost],
            spares: vec![],
        },
        Product {
            id: ObjectId::new(),
            name: "b".into(),
            manufacturer: ObjectId::new(),
            catalog_number: 2,
            parts: vec![],
            spares: vec![],
        },
        Product {
            id: ObjectId::new(),
            name: "c".into(),
            manufacturer: ObjectId::new(),
            catalog_number: 3,
            parts: vec![parts[1].id],
            spares: vec![],
        },
    ];
    let mark = t.trips.mark();
    let loaded = Product::rels().parts.load::<PartName>(&t.db, &products).await?;
    assert_eq!(t.trips.since(mark), 1);
    let ids = |p: usize| loaded.of(p).map(|v| v.id).collect::<Vec<_>>();
    assert_eq!(ids(0), [parts[2].id, parts[0].id, parts[2].id]);
    assert!(ids(1).is_empty());
    assert_eq!(ids(2), [parts[1].id]);
    assert_eq!(loaded.missing(0), [ghost]);
    assert_eq!(loaded.all_missing().collect::<Vec<_>>(), [(0, &ghost)]);
    assert_eq!(loaded.distinct().len(), 3, "each document read once");
    // Makers all dangle: reported per parent, never a panic.
    let makers = Product::rels().manufacturer.load::<CompanyName>(&t.db, &products).await?;
    assert_eq!(makers.all_missing().count(), 3);
    Ok(())
}

#[tokio::test]
async fn only_the_views_fields_travel() -> docrel::Result<()> {
    let t = TestDb::new("projection").await?;
    let (_, _) = catalog_fixture(&t, 20, 10).await?;
    let products = Product::repo(&t.db).find(Filter::all()).to_vec().await?;
    let mark = t.trips.mark();
    let names = Product::rels().parts.load::<PartName>(&t.db, &products).await?;
    let projected = t.trips.bytes_since(mark);
    let mark = t.trips.mark();
    let whole = Product::rels().parts.load::<Part>(&t.db, &products).await?;
    let full = t.trips.bytes_since(mark);
    assert_eq!(names.distinct().len(), 20);
    assert_eq!(whole.distinct().len(), 20);
    // Each whole part adds partno (20 bytes), qty (9), cost (14) and price (15).
    assert_eq!(full - projected, 20 * (20 + 9 + 14 + 15));
    Ok(())
}

#[tokio::test]
async fn two_relations_into_parts_are_merged_into_one_query() -> docrel::Result<()> {
    let t = TestDb::new("merge").await?;
    let parts: Vec<Part> = (0..4).map(part).collect();
    Part::repo(&t.db).insert_many(&parts).await?;
    let products = vec![Product {
        id: ObjectId::new(),
        name: "a".into(),
        manufacturer: ObjectId::new(),
        catalog_number: 1,
        parts: vec![parts[0].id, parts[1].id],
        spares: vec![parts[1].id, parts[3].id],
    }];
    let mark = t.trips.mark();
    let (main, spare) = docrel::join(
        &t.db,
        (Product::rels().parts.of::<PartName>(&products), Product::rels().spares.of::<Part>(&products)),
    )
    .await?;
    assert_eq!(t.trips.commands_since(mark), ["find parts"]);
    assert_eq!(main.of(0).map(|p| p.id).collect::<Vec<_>>(), [parts[0].id, parts[1].id]);
    assert_eq!(spare.of(0).map(|p| p.partno.as_str()).collect::<Vec<_>>(), ["001-aff", "003-aff"]);
    Ok(())
}

#[tokio::test]
async fn long_id_lists_are_split_into_bounded_chunks() -> docrel::Result<()> {
    let t = TestDb::new("chunks").await?;
    let parts: Vec<Part> = (0..5).map(part).collect();
    Part::repo(&t.db).insert_many(&parts).await?;
    let products = vec![Product {
        id: ObjectId::new(),
        name: "a".into(),
        manufacturer: ObjectId::new(),
        catalog_number: 1,
        parts: parts.iter().rev().map(|p| p.id).collect(),
        spares: vec![],
    }];
    let mark = t.trips.mark();
    let loaded = docrel::load::join_chunked(&t.db, Product::rels().parts.of::<PartName>(&products), 2).await?;
    assert_eq!(t.trips.since(mark), 3, "5 ids in chunks of 2");
    assert_eq!(loaded.of(0).map(|p| p.id).collect::<Vec<_>>(), products[0].parts);
    Ok(())
}

#[tokio::test]
async fn parts_as_id_name_structs_load_and_index_by_id() -> docrel::Result<()> {
    let t = TestDb::new("part_refs").await?;
    let parts: Vec<Part> = (0..3).map(part).collect();
    Part::repo(&t.db).insert_many(&parts).await?;
    let product = CatalogProduct {
        id: ObjectId::new(),
        name: "left-handed smoke shifter".into(),
        parts: parts.iter().map(|p| PartRef { id: p.id, name: p.name.clone() }).collect(),
    };
    CatalogProduct::repo(&t.db).insert(&product).await?;
    let stored = raw_one(&t, "catalog", doc! {"_id": product.id}).await;
    assert_eq!(stored.get_array("parts").unwrap()[0], Bson::Document(doc! {"id": parts[0].id, "name": "part 0"}));
    let loaded = CatalogProduct::rels().parts.load::<Part>(&t.db, std::slice::from_ref(&product)).await?;
    assert_eq!(loaded.of(0).map(|p| p.price).collect::<Vec<_>>(), [3.99, 3.99, 3.99]);
    let names = CatalogProduct::repo(&t.db).ensure_indexes().await?;
    assert_eq!(names, ["parts.id_1"]);
    Ok(())
}

#[tokio::test]
async fn deleting_a_part_pulls_it_from_every_product() -> docrel::Result<()> {
    let t = TestDb::new("pull").await?;
    let parts: Vec<Part> = (0..2).map(part).collect();
    Part::repo(&t.db).insert_many(&parts).await?;
    let product = Product {
        id: ObjectId::new(),
        name: "a".into(),
        manufacturer: ObjectId::new(),
        catalog_number: 1,
        parts: vec![parts[0].id, parts[1].id, parts[0].id],
        spares: vec![],
    };
    Product::repo(&t.db).insert(&product).await?;
    let catalog = CatalogProduct {
        id: ObjectId::new(),
        name: "c".into(),
        parts: parts.iter().map(|p| PartRef { id: p.id, name: p.name.clone() }).collect(),
    };
    CatalogProduct::repo(&t.db).insert(&catalog).await?;

    assert!(Part::repo(&t.db).delete_by_id(&parts[0].id).await?);
    let stored = raw_one(&t, "products", doc! {"_id": product.id}).await;
    assert_eq!(stored.get_array("parts").unwrap(), &vec![Bson::ObjectId(parts[1].id)]);
    let stored = raw_one(&t, "catalog", doc! {"_id": catalog.id}).await;
    assert_eq!(stored.get_array("parts").unwrap(), &vec![Bson::Document(doc! {"id": parts[1].id, "name": "part 1"})]);
    Ok(())
}

// ---- one-to-squillions: hosts / logmsg ----------------------------------------------

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
struct Line {
    time: DateTime,
    message: String,
}

fn at(ms: i64) -> DateTime {
    DateTime::from_millis(1_395_999_761_382 + ms)
}

#[tokio::test]
async fn the_latest_5000_messages_of_a_host_are_one_round_trip() -> docrel::Result<()> {
    let t = TestDb::new("latest").await?;
    let goofy = Host { id: ObjectId::new(), name: "goofy.example.com".into(), ipaddr: "127.66.66.66".into() };
    Host::repo(&t.db).insert(&goofy).await?;
    let other = ObjectId::new();
    let msgs: Vec<LogMsg> = (0..6000)
        .map(|i| LogMsg {
            id: ObjectId::new(),
            time: at(i),
            message: format!("cpu is on fire! #{i}"),
            host: if i % 7 == 0 { other } else { goofy.id },
        })
        .collect();
    LogMsg::repo(&t.db).insert_many(&msgs).await?;
    LogMsg::repo(&t.db).ensure_indexes().await?;

    let stored = raw_one(&t, "logmsg", doc! {"_id": msgs[1].id}).await;
    assert_eq!(stored, doc! {"_id": msgs[1].id, "time": at(1), "message": "cpu is on fire! #1", "host": goofy.id});

    let mark = t.trips.mark();
    let last: Vec<Line> = LogMsg::rels().host.children_of(&t.db, &goofy.id).limit(5000).to_vec().await?;
    assert_eq!(t.trips.since(mark), 1);
    assert_eq!(last.len(), 5000);
    let expected: Vec<DateTime> = (0..6000).rev().filter(|i| i % 7 != 0).take(5000).map(at).collect();
    assert_eq!(last.iter().map(|l| l.time).collect::<Vec<_>>(), expected);
    Ok(())
}

#[tokio::test]
async fn the_10_latest_of_each_of_100_hosts_are_one_round_trip() -> docrel::Result<()> {
    let t = TestDb::new("per_parent").await?;
    let hosts: Vec<Host> = (0..100)
        .map(|i| Host { id: ObjectId::new(), name: format!("h{i}.example.com"), ipaddr: format!("10.0.0.{i}") })
        .collect();
    Host::repo(&t.db).insert_many(&hosts).await?;
    // Host i has 5 + i % 20 messages: some fewer than 10, most more.
    let mut msgs = Vec::new();
    for (h, host) in hosts.iter().enumerate() {
        for k in 0..(5 + h % 20) {
            msgs.push(LogMsg {
                id: ObjectId::new(),
                time: at((k * 1000 + h) as i64),
                message: format!("{h}:{k}"),
                host: host.id,
            });
        }
    }
    LogMsg::repo(&t.db).insert_many(&msgs).await?;
    LogMsg::repo(&t.db).ensure_indexes().await?;
    let ids: Vec<ObjectId> = hosts.iter().map(|h| h.id).collect();

    let mark = t.trips.mark();
    let latest = LogMsg::rels().host.latest_per_parent(&t.db, &ids, 10).load::<Line>().await?;
    assert_eq!(t.trips.since(mark), 1);
    for h in 0..100 {
        let count = 5 + h % 20;
        let want: Vec<String> = (0..count).rev().take(10).map(|k| format!("{h}:{k}")).collect();
        let got: Vec<String> = latest.of(h).map(|l| l.message.clone()).collect();
        assert_eq!(got, want, "host {h}");
    }
    // Grouping without a per-parent limit: one `$in` on the parent field.
    let mark = t.trips.mark();
    let all = LogMsg::rels().host.children_of_many(&t.db, &ids[..3]).load::<Line>().await?;
    assert_eq!(t.trips.since(mark), 1);
    assert_eq!((all.of(0).len(), all.of(1).len(), all.of(2).len()), (5, 6, 7));
    Ok(())
}

#[tokio::test]
async fn relationship_indexes_are_created() -> docrel::Result<()> {
    let t = TestDb::new("rel_indexes").await?;
    assert_eq!(LogMsg::repo(&t.db).ensure_indexes().await?, ["host_1_time_-1"]);
    assert_eq!(Host::repo(&t.db).ensure_indexes().await?, ["ipaddr_1"]);
    assert_eq!(Product::repo(&t.db).ensure_indexes().await?, ["manufacturer_1", "parts_1", "spares_1"]);
    assert_eq!(Book::repo(&t.db).ensure_indexes().await?, ["categories_1", "authors_1"]);
    Ok(())
}

#[tokio::test]
async fn deleting_a_host_cascades_to_its_messages_and_restrict_refuses() -> docrel::Result<()> {
    let t = TestDb::new("cascade").await?;
    let host = Host { id: ObjectId::new(), name: "h".into(), ipaddr: "1.2.3.4".into() };
    let keep = Host { id: ObjectId::new(), name: "k".into(), ipaddr: "1.2.3.5".into() };
    Host::repo(&t.db).insert_many(&[host.clone(), keep.clone()]).await?;
    let msgs: Vec<LogMsg> = (0..10)
        .map(|i| LogMsg {
            id: ObjectId::new(),
            time: at(i),
            message: "m".into(),
            host: if i < 7 { host.id } else { keep.id },
        })
        .collect();
    LogMsg::repo(&t.db).insert_many(&msgs).await?;
    assert!(Host::repo(&t.db).delete_by_id(&host.id).await?);
    assert_eq!(LogMsg::repo(&t.db).count(Filter::all()).await?, 3);
    assert_eq!(LogMsg::repo(&t.db).count(LogMsg::fields().host.eq(keep.id)).await?, 3);

    // A category still used by a book cannot be deleted.
    let drama = Category { id: 1, name: "drama".into() };
    Category::repo(&t.db).insert(&drama).await?;
    Book::repo(&t.db)
        .insert(&Book { id: 1, title: "A tale of two people".into(), categories: vec![1], authors: vec![] })
        .await?;
    let err = Category::repo(&t.db).delete_by_id(&1).await.unwrap_err();
    assert!(matches!(err, Error::StillReferenced { referrer: "books", field: "categories", count: 1, .. }), "{err}");
    assert_eq!(Category::repo(&t.db).count(Filter::all()).await?, 1, "nothing deleted");
    Ok(())
}

// ---- two-way: person / tasks ---------------------------------------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "people")]
struct Person {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    #[reference(many, to = Task, inverse = owner, max = 500, on_delete = pull)]
    tasks: Vec<ObjectId>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "tasks")]
struct Task {
    #[serde(rename = "_id")]
    id: ObjectId,
    description: String,
    due_date: DateTime,
    #[reference(to = Person, inverse = tasks)]
    owner: ObjectId,
}

#[tokio::test]
async fn reassigning_a_task_keeps_both_sides_right() -> docrel::Result<()> {
    let t = TestDb::new("two_way").await?;
    let kate = Person { id: ObjectId::new(), name: "Kate Monster".into(), tasks: vec![] };
    let joe = Person { id: ObjectId::new(), name: "Joe".into(), tasks: vec![] };
    Person::repo(&t.db).insert_many(&[kate.clone(), joe.clone()]).await?;
    let task = Task { id: ObjectId::new(), description: "Write lesson plan".into(), due_date: at(0), owner: kate.id };
    Task::repo(&t.db).insert(&task).await?;
    let linked = Person::rels().tasks.link(&t.db, &kate.id, &task.id).await?;
    assert!(linked.transactional, "the embedded server is a replica set: both sides in one transaction");
    assert_eq!(
        raw_one(&t, "people", doc! {"_id": kate.id}).await.get_array("tasks").unwrap(),
        &vec![Bson::ObjectId(task.id)]
    );

    let mark = t.trips.mark();
    let moved = Task::rels().owner.reassign(&t.db, &task.id, &joe.id).await?;
    assert!(moved.changed && moved.transactional);
    assert_eq!(
        t.trips.commands_since(mark),
        ["update people", "findAndModify tasks", "update people", "commitTransaction"]
    );
    assert_eq!(raw_one(&t, "tasks", doc! {"_id": task.id}).await.get_object_id("owner").unwrap(), joe.id);
    assert_eq!(raw_one(&t, "people", doc! {"_id": kate.id}).await.get_array("tasks").unwrap(), &Vec::<Bson>::new());
    assert_eq!(
        raw_one(&t, "people", doc! {"_id": joe.id}).await.get_array("tasks").unwrap(),
        &vec![Bson::ObjectId(task.id)]
    );

    // Reassigning to a person that does not exist changes nothing.
    let err = Task::rels().owner.reassign(&t.db, &task.id, &ObjectId::new()).await.unwrap_err();
    assert!(matches!(err, Error::NotFound { collection: "people", .. }), "{err}");
    assert_eq!(raw_one(&t, "tasks", doc! {"_id": task.id}).await.get_object_id("owner").unwrap(), joe.id);

    // A task must have an owner: unlinking it is refused before any write.
    let err = Person::rels().tasks.unlink(&t.db, &joe.id, &task.id).await.unwrap_err();
    assert!(matches!(err, Error::Invalid { what: docrel::Misuse::Unlink, .. }), "{err}");

    // The owner's loader, and the owner's tasks by the inverse array.
    let tasks = Task::repo(&t.db).find(Filter::all()).to_vec().await?;
    let owners = Task::rels().owner.load::<Person>(&t.db, &tasks).await?;
    assert_eq!(owners.one(0).map(|p| p.name.as_str()), Some("Joe"));
    Ok(())
}

// ---- N:M: books / authors two-way, books / categories one-way -------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "authors")]
struct Author {
    #[serde(rename = "_id")]
    id: i32,
    name: String,
    #[reference(many, to = Book, inverse = authors, max = 500)]
    books: Vec<i32>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "categories")]
struct Category {
    #[serde(rename = "_id")]
    id: i32,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "books")]
struct Book {
    #[serde(rename = "_id")]
    id: i32,
    title: String,
    #[reference(many, to = Category, max = 10, on_delete = restrict)]
    categories: Vec<i32>,
    #[reference(many, to = Author, inverse = books, max = 20)]
    authors: Vec<i32>,
}

#[tokio::test]
async fn books_and_authors_link_both_ways_and_categories_one_way() -> docrel::Result<()> {
    let t = TestDb::new("library").await?;
    Author::repo(&t.db)
        .insert_many(&[
            Author { id: 1, name: "Peter Stanford".into(), books: vec![] },
            Author { id: 2, name: "Georg Peterson".into(), books: vec![] },
        ])
        .await?;
    Category::repo(&t.db)
        .insert_many(&[Category { id: 1, name: "drama".into() }, Category { id: 2, name: "scifi".into() }])
        .await?;
    Book::repo(&t.db)
        .insert_many(&[
            Book { id: 1, title: "A tale of two people".into(), categories: vec![1], authors: vec![] },
            Book { id: 2, title: "A tale of two space ships".into(), categories: vec![2], authors: vec![] },
        ])
        .await?;
    let authors = Book::rels().authors;
    authors.link(&t.db, &1, &1).await?;
    authors.link(&t.db, &1, &2).await?;
    Author::rels().books.link(&t.db, &1, &2).await?;
    let again = authors.link(&t.db, &1, &1).await?;
    assert!(!again.changed, "linking twice changes nothing");

    // The stored shapes of the reference text.
    assert_eq!(
        raw_one(&t, "authors", doc! {"_id": 1}).await,
        doc! {"_id": 1, "name": "Peter Stanford", "books": [1, 2]}
    );
    assert_eq!(raw_one(&t, "authors", doc! {"_id": 2}).await, doc! {"_id": 2, "name": "Georg Peterson", "books": [1]});
    assert_eq!(
        raw_one(&t, "books", doc! {"_id": 1}).await,
        doc! {"_id": 1, "title": "A tale of two people", "categories": [1], "authors": [1, 2]}
    );
    assert_eq!(
        raw_one(&t, "books", doc! {"_id": 2}).await,
        doc! {"_id": 2, "title": "A tale of two space ships", "categories": [2], "authors": [1]}
    );

    // Example 1: books of an author. Example 2: authors of a book.
    let peter = Author::repo(&t.db).find(Author::fields().name.eq("Peter Stanford")).to_vec().await?;
    let books = Author::rels().books.load::<Book>(&t.db, &peter).await?;
    assert_eq!(books.of(0).map(|b| b.id).collect::<Vec<_>>(), [1, 2]);
    let ships = Book::repo(&t.db).find(Book::fields().title.eq("A tale of two space ships")).to_vec().await?;
    let their_authors = Book::rels().authors.load::<Author>(&t.db, &ships).await?;
    assert_eq!(their_authors.of(0).map(|a| a.name.as_str()).collect::<Vec<_>>(), ["Peter Stanford"]);
    // Example 3: categories of a book. Example 4: books of a category, through the multikey index.
    let categories = Book::rels().categories.load::<Category>(&t.db, &ships).await?;
    assert_eq!(categories.one(0).map(|c| c.name.as_str()), Some("scifi"));
    Book::repo(&t.db).ensure_indexes().await?;
    let mark = t.trips.mark();
    let drama: Vec<Book> = Book::rels().categories.referrers(&t.db, &1).to_vec().await?;
    assert_eq!(t.trips.since(mark), 1);
    assert_eq!(drama.iter().map(|b| b.id).collect::<Vec<_>>(), [1]);

    // Unlink both sides.
    let out = authors.unlink(&t.db, &1, &2).await?;
    assert!(out.changed);
    assert_eq!(raw_one(&t, "books", doc! {"_id": 1}).await.get_array("authors").unwrap(), &vec![Bson::Int32(1)]);
    assert_eq!(raw_one(&t, "authors", doc! {"_id": 2}).await.get_array("books").unwrap(), &Vec::<Bson>::new());
    // Linking to a book that does not exist is an error and writes nothing.
    let err = Author::rels().books.link(&t.db, &2, &99).await.unwrap_err();
    assert!(matches!(err, Error::NotFound { collection: "books", .. }), "{err}");
    assert_eq!(raw_one(&t, "authors", doc! {"_id": 2}).await.get_array("books").unwrap(), &Vec::<Bson>::new());
    Ok(())
}
