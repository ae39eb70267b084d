//! The everyday API (issue 30): counts per parent without shipping the
//! children (Mongoose's virtual `count`), and a page per parent (skip `k`,
//! then at most `n`) on the loaders, each in one round trip for any number
//! of parents. Every answer is checked against the stored documents, read
//! back with the raw driver.

use docrel::bson::{doc, oid::ObjectId, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::{Document, Embedded, View};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "ec_hosts")]
struct Host {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "ec_msgs")]
struct Msg {
    #[serde(rename = "_id")]
    id: ObjectId,
    n: i32,
    level: String,
    #[parent_ref(to = Host, sort = "-n")]
    host: ObjectId,
}

#[derive(View, Deserialize, Debug)]
#[view(of = Msg)]
struct MsgN {
    n: i32,
}

/// `hosts` hosts, host `h` with `h * 3` messages (the first none), every
/// third one an error; returns the hosts' ids.
async fn hosts(db: &docrel::mongodb::Database, hosts: usize) -> docrel::Result<Vec<ObjectId>> {
    let ids: Vec<ObjectId> = (0..hosts).map(|_| ObjectId::new()).collect();
    let docs: Vec<Host> = ids.iter().map(|&id| Host { id, name: format!("h{id}") }).collect();
    Host::repo(db).insert_many(&docs).await?;
    let mut msgs = Vec::new();
    for (h, &host) in ids.iter().enumerate() {
        for n in 0..(h * 3) as i32 {
            let level = if n % 3 == 0 { "error" } else { "info" };
            msgs.push(Msg { id: ObjectId::new(), n, level: level.into(), host });
        }
    }
    if !msgs.is_empty() {
        Msg::repo(db).insert_many(&msgs).await?;
    }
    Ok(ids)
}

/// How many stored documents of `collection` match `filter`, by the raw driver.
async fn stored(db: &docrel::mongodb::Database, collection: &str, filter: BsonDoc) -> docrel::Result<u64> {
    Ok(db.collection::<BsonDoc>(collection).count_documents(filter).await?)
}

/// `children_of_many(..).count()`: one aggregate for any number of parents,
/// a parent with no child counted 0, a filter counts only matching children.
#[tokio::test]
async fn children_counts_per_parent_in_one_round_trip() -> docrel::Result<()> {
    let t = TestDb::new("ec_child_counts").await?;
    let ids = hosts(&t.db, 12).await?;
    let mark = t.trips.mark();
    let counts: HashMap<ObjectId, u64> = Msg::rels().host.children_of_many(&t.db, &ids).count().await?;
    assert_eq!(t.trips.commands_since(mark), ["aggregate ec_msgs"]);
    assert_eq!(counts.len(), ids.len());
    for (h, id) in ids.iter().enumerate() {
        assert_eq!(counts[id], stored(&t.db, "ec_msgs", doc! {"host": id}).await?, "host {h}");
        assert_eq!(counts[id], (h * 3) as u64);
    }
    assert_eq!(counts[&ids[0]], 0);

    let mark = t.trips.mark();
    let errors = Msg::rels().host.children_of_many(&t.db, &ids).filter(Msg::fields().level.eq("error")).count().await?;
    assert_eq!(t.trips.since(mark), 1);
    for id in &ids {
        assert_eq!(errors[id], stored(&t.db, "ec_msgs", doc! {"host": id, "level": "error"}).await?);
    }
    // One parent, an id asked twice, a parent that does not exist.
    let (one, gone) = (Msg::rels().host.children_of(&t.db, &ids[2]).count().await?, ObjectId::new());
    assert_eq!(one, HashMap::from([(ids[2], 6)]));
    let twice = Msg::rels().host.children_of_many(&t.db, &[ids[1], ids[1], gone]).count().await?;
    assert_eq!(twice, HashMap::from([(ids[1], 3), (gone, 0)]));
    // No parents: nothing to ask.
    let mark = t.trips.mark();
    assert!(Msg::rels().host.children_of_many(&t.db, &[]).count().await?.is_empty());
    assert_eq!(t.trips.since(mark), 0);
    Ok(())
}

/// `latest_per_parent(.., n).skip(k)`: the page `k..k + n` of each parent
/// in the order asked, in one round trip for any number of parents.
#[tokio::test]
async fn latest_per_parent_pages_with_skip() -> docrel::Result<()> {
    let t = TestDb::new("ec_latest_page").await?;
    let ids = hosts(&t.db, 5).await?;
    let mark = t.trips.mark();
    let page = Msg::rels().host.latest_per_parent(&t.db, &ids, 2).skip(1).view::<MsgN>().await?;
    assert_eq!(t.trips.since(mark), 1);
    for (h, id) in ids.iter().enumerate() {
        // The same page of the stored children, by the raw driver.
        let raw = t.db.collection::<BsonDoc>("ec_msgs");
        let mut cursor = raw.find(doc! {"host": id}).sort(doc! {"n": -1}).skip(1).limit(2).await?;
        let mut want = Vec::new();
        while cursor.advance().await? {
            want.push(cursor.deserialize_current()?.get_i32("n").unwrap_or(-1));
        }
        assert_eq!(page.of(h).map(|m| m.n).collect::<Vec<_>>(), want, "host {h}");
    }
    assert_eq!(page.of(0).len(), 0);
    assert_eq!(page.of(3).map(|m| m.n).collect::<Vec<_>>(), [7, 6]);
    // One parent's page: `skip` then `limit` on `children_of`.
    let one: Vec<MsgN> = Msg::rels().host.children_of(&t.db, &ids[3]).view::<MsgN>().skip(2).limit(3).await?;
    assert_eq!(one.iter().map(|m| m.n).collect::<Vec<_>>(), [6, 5, 4]);
    Ok(())
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "ec_categories")]
struct Category {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Embedded, Serialize, Deserialize, Debug, Clone)]
struct Shelf {
    id: ObjectId,
    row: i32,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "ec_books")]
struct Book {
    #[serde(rename = "_id")]
    id: ObjectId,
    title: String,
    #[reference(many, to = Category, max = 10)]
    categories: Vec<ObjectId>,
    /// References in `{id, row}` elements.
    #[reference(many, to = Category, max = 10)]
    shelves: Vec<Shelf>,
    #[reference(to = Category)]
    main: ObjectId,
}

#[derive(View, Deserialize, Debug)]
#[view(of = Book)]
struct Title {
    title: String,
}

/// `referrers_of_many(..).count()`: per target, how many documents refer to
/// it, through an array of ids, an array of `{id, ..}` elements or a single
/// reference; a document listing a target twice counts once.
#[tokio::test]
async fn referrer_counts_per_target_in_one_round_trip() -> docrel::Result<()> {
    let t = TestDb::new("ec_ref_counts").await?;
    let cats: Vec<Category> = (0..4).map(|i| Category { id: ObjectId::new(), name: format!("c{i}") }).collect();
    Category::repo(&t.db).insert_many(&cats).await?;
    let c = |i: usize| cats[i].id;
    let book = |title: &str, categories: Vec<ObjectId>, shelves: Vec<ObjectId>, main: ObjectId| Book {
        id: ObjectId::new(),
        title: title.into(),
        categories,
        shelves: shelves.into_iter().enumerate().map(|(row, id)| Shelf { id, row: row as i32 }).collect(),
        main,
    };
    let books = vec![
        book("a", vec![c(0), c(1), c(0)], vec![c(1)], c(0)),
        book("b", vec![c(0)], vec![c(1), c(2)], c(0)),
        book("c", vec![c(2)], vec![c(1)], c(1)),
    ];
    Book::repo(&t.db).insert_many(&books).await?;
    let ids: Vec<ObjectId> = cats.iter().map(|c| c.id).collect();
    let rels = Book::rels();

    let mark = t.trips.mark();
    let categories = rels.categories.referrers_of_many(&t.db, &ids).count().await?;
    let shelves = rels.shelves.referrers_of_many(&t.db, &ids).count().await?;
    let main = rels.main.referrers_of_many(&t.db, &ids).count().await?;
    assert_eq!(t.trips.commands_since(mark), ["aggregate ec_books"; 3]);
    for id in &ids {
        assert_eq!(categories[id], stored(&t.db, "ec_books", doc! {"categories": id}).await?);
        assert_eq!(shelves[id], stored(&t.db, "ec_books", doc! {"shelves.id": id}).await?);
        assert_eq!(main[id], stored(&t.db, "ec_books", doc! {"main": id}).await?);
    }
    assert_eq!([0, 1, 2, 3].map(|i| categories[&c(i)]), [2, 1, 1, 0]);
    assert_eq!([0, 1, 2, 3].map(|i| shelves[&c(i)]), [0, 3, 1, 0]);
    assert_eq!([0, 1, 2, 3].map(|i| main[&c(i)]), [2, 1, 0, 0]);
    // With a filter, and split into chunks: still one answer per target.
    let filtered = rels.shelves.referrers_of_many(&t.db, &ids).filter(Book::fields().title.ne("b")).chunk(2);
    let mark = t.trips.mark();
    let filtered = filtered.count().await?;
    assert_eq!(t.trips.since(mark), 2);
    assert_eq!([0, 1, 2, 3].map(|i| filtered[&c(i)]), [0, 2, 0, 0]);
    Ok(())
}

/// A page per target of a reverse load: `skip_per_target(k)` then
/// `limit_per_target(n)`, in one round trip.
#[tokio::test]
async fn referrers_page_per_target() -> docrel::Result<()> {
    let t = TestDb::new("ec_ref_page").await?;
    let cats: Vec<Category> = (0..3).map(|i| Category { id: ObjectId::new(), name: format!("c{i}") }).collect();
    Category::repo(&t.db).insert_many(&cats).await?;
    let mut books = Vec::new();
    for (i, cat) in cats.iter().enumerate() {
        for k in 0..(i * 2) {
            let title = format!("{i}-{k}");
            books.push(Book { id: ObjectId::new(), title, categories: vec![cat.id], shelves: vec![], main: cat.id });
        }
    }
    Book::repo(&t.db).insert_many(&books).await?;
    let ids: Vec<ObjectId> = cats.iter().map(|c| c.id).collect();
    let mark = t.trips.mark();
    let page = Book::rels()
        .categories
        .referrers_of_many(&t.db, &ids)
        .view::<Title>()
        .sort(Book::fields().title.asc())
        .skip_per_target(1)
        .limit_per_target(2)
        .await?;
    assert_eq!(t.trips.since(mark), 1);
    let titles = |i: usize| page.of(i).map(|b| b.title.as_str()).collect::<Vec<_>>();
    assert_eq!((titles(0), titles(1), titles(2)), (vec![], vec!["1-1"], vec!["2-1", "2-2"]));
    let stored = stored(&t.db, "ec_books", doc! {"categories": ids[2]}).await?;
    assert_eq!(stored, 4);
    Ok(())
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "ec_parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "ec_products")]
struct Product {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = Part, max = 100)]
    parts: Vec<ObjectId>,
}

/// A page per parent of a forward load (`$slice: [k, n]` of each parent's
/// references): `skip_per_parent(k)` then `limit_per_parent(n)`, one `$in`
/// for every parent.
#[tokio::test]
async fn load_pages_per_parent() -> docrel::Result<()> {
    let t = TestDb::new("ec_load_page").await?;
    let parts: Vec<Part> = (0..6).map(|i| Part { id: ObjectId::new(), name: format!("p{i}") }).collect();
    Part::repo(&t.db).insert_many(&parts).await?;
    let p = |i: usize| parts[i].id;
    let gone = ObjectId::new();
    let products = vec![
        Product { id: ObjectId::new(), parts: vec![p(0), p(1), p(2), p(3)] },
        Product { id: ObjectId::new(), parts: vec![p(4)] },
        Product { id: ObjectId::new(), parts: vec![p(5), gone, p(1), p(2)] },
    ];
    Product::repo(&t.db).insert_many(&products).await?;
    let products = Product::repo(&t.db).find(docrel::Filter::all()).await?;
    let mark = t.trips.mark();
    let page = Product::rels().parts.load::<Part>(&t.db, &products).skip_per_parent(1).limit_per_parent(2).await?;
    assert_eq!(t.trips.commands_since(mark), ["find ec_parts"]);
    let names = |i: usize| page.of(i).map(|p| p.name.as_str()).collect::<Vec<_>>();
    // A dangling id is not a document: the page is of the ones found.
    assert_eq!((names(0), names(1), names(2)), (vec!["p1", "p2"], vec![], vec!["p1", "p2"]));
    assert_eq!(page.missing(2), [gone]);
    let stored = t.db.collection::<BsonDoc>("ec_products").find_one(doc! {"_id": products[0].id}).await?;
    assert_eq!(stored.and_then(|d| d.get_array("parts").ok().map(Vec::len)), Some(4));
    Ok(())
}
