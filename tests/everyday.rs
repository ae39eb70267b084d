//! The everyday API (issue 30): errors that convert with `?` and match
//! without the driver's internals.

use docrel::bson::{doc, oid::ObjectId, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::{Document, Error};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "ev_accounts")]
struct Account {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[document(unique)]
    email: String,
}

/// `?` on the driver's and bson's errors inside a function returning
/// `docrel::Result`.
async fn raw_count_of(db: &docrel::mongodb::Database, hex: &str) -> docrel::Result<u64> {
    let id = ObjectId::parse_str(hex)?;
    let n = db.collection::<BsonDoc>("ev_accounts").count_documents(doc! {"_id": id}).await?;
    Ok(n)
}

#[tokio::test]
async fn driver_and_bson_errors_convert_with_the_question_mark() -> docrel::Result<()> {
    let t = TestDb::new("ev_convert").await?;
    assert_eq!(raw_count_of(&t.db, &ObjectId::new().to_hex()).await?, 0);
    let err = raw_count_of(&t.db, "not an id").await.unwrap_err();
    assert!(matches!(err, Error::Bson { .. }), "{err:?}");
    let err: Error = t.db.run_command(doc! {"noSuchCommand": 1}).await.unwrap_err().into();
    assert!(matches!(err, Error::Driver { .. }), "{err:?}");
    assert!(err.to_string().starts_with("a driver call failed: "), "{err}");
    Ok(())
}

/// A taken unique key is matchable with `is_duplicate_key`, and its message
/// names the index and the key instead of dumping the driver's WriteError.
#[tokio::test]
async fn a_taken_unique_key_is_a_duplicate_key_error() -> docrel::Result<()> {
    let t = TestDb::new("ev_dup").await?;
    let repo = Account::repo(&t.db);
    repo.ensure_indexes().await?;
    repo.insert(&Account { id: ObjectId::new(), email: "ann@example.com".into() }).await?;
    let taken = Account { id: ObjectId::new(), email: "ann@example.com".into() };
    match repo.insert(&taken).await {
        Err(e) if e.is_duplicate_key() => {
            let text = e.to_string();
            assert!(text.contains("index `email_1`") && text.contains("ann@example.com"), "{text}");
            assert!(!text.contains("WriteError"), "{text}");
        }
        other => panic!("expected a duplicate key: {other:?}"),
    }
    // The same through insert_many (a transaction) and save.
    let err = repo.insert_many(&[taken.clone(), taken.clone()]).await.unwrap_err();
    assert!(err.is_duplicate_key(), "{err:?}");
    assert!(!Error::NotFound { collection: "x", id: "1".into() }.is_duplicate_key());
    Ok(())
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[document(collection = "ev_suppliers")]
struct Supplier {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[document(collection = "ev_parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    qty: i32,
    tags: Vec<String>,
    #[parent_ref(to = Supplier, sort = "-qty")]
    supplier: ObjectId,
    backup: Option<ObjectId>,
}

/// Three parts of one supplier, stored; returns the supplier and the parts.
async fn three_parts(db: &docrel::mongodb::Database) -> docrel::Result<(Supplier, Vec<Part>)> {
    let acme = Supplier { id: ObjectId::new(), name: "acme".into() };
    Supplier::repo(db).insert(&acme).await?;
    let part = |name: &str, qty: i32, tags: &[&str]| Part {
        id: ObjectId::new(),
        name: name.into(),
        qty,
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        supplier: acme.id,
        backup: None,
    };
    let mut parts = vec![part("bolt", 5, &["steel"]), part("nut", 7, &["steel", "small"]), part("washer", 9, &[])];
    parts[2].backup = Some(acme.id);
    Part::repo(db).insert_many(&parts).await?;
    Ok((acme, parts))
}

/// The names of the parts a filter finds, in name order.
async fn names(db: &docrel::mongodb::Database, filter: docrel::Filter) -> docrel::Result<Vec<String>> {
    let found = Part::repo(db).find(filter).sort(Part::fields().name.asc()).await?;
    Ok(found.into_iter().map(|p| p.name).collect())
}

/// Comparisons take values, like `gte(10)` and the driver's `doc!`:
/// `qty.eq(5)`, `name.eq("bolt")`, `ne(7)`; `is_in` and `contains` too.
#[tokio::test]
async fn comparisons_take_values() -> docrel::Result<()> {
    let t = TestDb::new("ev_values").await?;
    let (acme, parts) = three_parts(&t.db).await?;
    let f = Part::fields();
    assert_eq!(names(&t.db, f.qty.eq(5)).await?, ["bolt"]);
    assert_eq!(names(&t.db, f.name.eq("bolt")).await?, ["bolt"]);
    assert_eq!(names(&t.db, f.name.eq(parts[1].name.clone())).await?, ["nut"]);
    assert_eq!(names(&t.db, f.qty.ne(7)).await?, ["bolt", "washer"]);
    assert_eq!(names(&t.db, f.id.eq(parts[2].id)).await?, ["washer"]);
    assert_eq!(names(&t.db, f.tags.contains("small")).await?, ["nut"]);
    assert_eq!(names(&t.db, f.backup.eq(Some(acme.id))).await?, ["washer"]);
    // `is_in` is checked against the field: elements of an array, the
    // value inside an option, the field's own type otherwise.
    assert_eq!(names(&t.db, f.qty.is_in(&[5, 9])).await?, ["bolt", "washer"]);
    assert_eq!(names(&t.db, f.name.not_in(&["bolt", "nut"])).await?, ["washer"]);
    assert_eq!(names(&t.db, f.tags.is_in(&["small"])).await?, ["nut"]);
    assert_eq!(names(&t.db, f.backup.is_in(&[acme.id])).await?, ["washer"]);
    // What the raw driver finds with the same conditions written by hand.
    let raw = t.db.collection::<BsonDoc>("ev_parts");
    assert_eq!(raw.count_documents(doc! {"qty": {"$eq": 5}, "name": {"$eq": "bolt"}}).await?, 1);
    assert_eq!(raw.count_documents(doc! {"backup": {"$in": [acme.id]}}).await?, 1);
    Ok(())
}

/// Counts, limits, skips and pages are `u64` everywhere; one above
/// `i64::MAX` is an error naming the call, not a wrap or a panic.
#[tokio::test]
async fn counts_and_limits_are_u64_and_checked() -> docrel::Result<()> {
    let t = TestDb::new("ev_counts").await?;
    let (acme, _) = three_parts(&t.db).await?;
    let (n, f): (u64, _) = (2, Part::fields());
    let found =
        Part::repo(&t.db).find(docrel::Filter::all()).sort(f.qty.asc()).skip(n - 1).limit(n).batch_size(n).await?;
    assert_eq!(found.iter().map(|p| p.qty).collect::<Vec<_>>(), [7, 9]);
    let latest = Part::rels().supplier.latest_per_parent(&t.db, &[acme.id], n).await?;
    assert_eq!(latest.of(0).map(|p| p.qty).collect::<Vec<_>>(), [9, 7]);

    let too_many = i64::MAX as u64 + 1;
    let invalid = |r: docrel::Result<Vec<Part>>| match r {
        Err(Error::Invalid { what: docrel::Misuse::Count, message }) => message,
        other => panic!("expected Invalid(Count): {other:?}"),
    };
    let msg = invalid(Part::repo(&t.db).find(docrel::Filter::all()).limit(too_many).await);
    assert!(msg.contains("limit") && msg.contains(&too_many.to_string()), "{msg}");
    let msg = invalid(Part::repo(&t.db).find(docrel::Filter::all()).skip(u64::MAX).await);
    assert!(msg.contains("skip"), "{msg}");
    let latest = Part::rels().supplier.latest_per_parent(&t.db, &[acme.id], too_many).await;
    assert!(matches!(latest, Err(Error::Invalid { what: docrel::Misuse::Count, .. })), "{latest:?}");
    let children = Part::rels().supplier.children_of(&t.db, &acme.id).limit(too_many).await;
    assert!(matches!(children, Err(Error::Invalid { what: docrel::Misuse::Count, .. })), "{children:?}");
    Ok(())
}

/// Code generic over any document: `T::repo(db)` for `T: docrel::Document`.
async fn count_all<T: Document>(db: &docrel::mongodb::Database) -> docrel::Result<u64> {
    T::repo(db).count(docrel::Filter::all()).await
}

#[tokio::test]
async fn generic_code_reaches_any_repository() -> docrel::Result<()> {
    let t = TestDb::new("ev_generic").await?;
    three_parts(&t.db).await?;
    assert_eq!((count_all::<Part>(&t.db).await?, count_all::<Supplier>(&t.db).await?), (3, 1));
    // The inherent calls and the trait's items keep working side by side.
    assert_eq!((Part::COLLECTION, Part::repo(&t.db).count(Part::fields().qty.gt(5)).await?), ("ev_parts", 2));
    let raw = t.db.collection::<BsonDoc>("ev_parts").count_documents(doc! {}).await?;
    assert_eq!(raw, 3);
    Ok(())
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[document(collection = "ev_makers")]
struct Maker {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    #[serde(default)]
    city: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[document(collection = "ev_gadgets")]
struct Gadget {
    #[serde(rename = "_id")]
    id: ObjectId,
    label: String,
    #[reference(to = Maker)]
    maker: ObjectId,
    #[serde(default)]
    #[denormalize(from = Maker::name, via = maker)]
    maker_name: String,
}

/// The stored document `id` of `collection`, as the raw driver reads it.
async fn stored(db: &docrel::mongodb::Database, collection: &str, id: ObjectId) -> docrel::Result<BsonDoc> {
    let found = db.collection::<BsonDoc>(collection).find_one(doc! {"_id": id}).await?;
    Ok(found.unwrap_or_else(|| panic!("{collection} {id} is stored")))
}

/// The version a stored source carries.
fn version(d: &BsonDoc) -> i64 {
    d.get_document("_docrel").and_then(|b| b.get_i64("v")).unwrap_or(0)
}

/// An upsert that inserts a source: `set_on_insert` applies, the version
/// comes from the clock, and a holder written while the source did not
/// exist gets its copy, as after an insert.
#[tokio::test]
async fn upsert_inserting_a_source_fills_the_holders_that_refer_to_it() -> docrel::Result<()> {
    let t = TestDb::new("ev_upsert_new").await?;
    let acme = ObjectId::new();
    let early = Gadget { id: ObjectId::new(), label: "early".into(), maker: acme, maker_name: String::new() };
    Gadget::repo(&t.db).insert(&early).await?;
    assert_eq!(stored(&t.db, "ev_gadgets", early.id).await?.get_str("maker_name").ok(), Some(""));

    let f = Maker::fields();
    let mark = t.trips.mark();
    let outcome = Maker::repo(&t.db)
        .upsert(f.id.eq(acme), f.name.set("acme".into()).and(f.city.set_on_insert("Boston".into())))
        .await?;
    let trips = t.trips.commands_since(mark);
    assert_eq!((outcome.matched, outcome.upserted_id), (0, Some(acme)), "{outcome:?}");
    let maker = stored(&t.db, "ev_makers", acme).await?;
    assert_eq!((maker.get_str("name").unwrap(), maker.get_str("city").unwrap()), ("acme", "Boston"));
    assert!(version(&maker) > 1_600_000_000_000_000, "a first version from the clock: {maker}");
    let gadget = stored(&t.db, "ev_gadgets", early.id).await?;
    assert_eq!(gadget.get_str("maker_name").unwrap(), "acme", "{gadget}");
    let record = gadget.get_document("_docrel").unwrap().get_document("copies").unwrap().get_document("maker").unwrap();
    assert_eq!(record.get_i64(acme.to_hex()).unwrap(), version(&maker), "{gadget}");
    assert_eq!(trips.len(), 5, "the update, the insert, the holders found, their copy, records ahead of it: {trips:?}");
    Ok(())
}

/// An upsert that finds its document is an update like any other: the
/// change fans out to the copies, the version moves on, `set_on_insert`
/// does nothing.
#[tokio::test]
async fn upsert_matching_a_source_fans_out_like_an_update() -> docrel::Result<()> {
    let t = TestDb::new("ev_upsert_old").await?;
    let acme = Maker { id: ObjectId::new(), name: "acme".into(), city: "Boston".into() };
    Maker::repo(&t.db).insert(&acme).await?;
    let widget = Gadget { id: ObjectId::new(), label: "widget".into(), maker: acme.id, maker_name: String::new() };
    Gadget::repo(&t.db).insert(&widget).await?;
    let before = version(&stored(&t.db, "ev_makers", acme.id).await?);

    let f = Maker::fields();
    let update = f.name.set("Acme Corp".into()).and(f.city.set_on_insert("Nowhere".into()));
    let outcome = Maker::repo(&t.db).upsert(f.name.eq("acme"), update).await?;
    assert_eq!((outcome.matched, outcome.modified, outcome.upserted_id), (1, 1, None));
    let maker = stored(&t.db, "ev_makers", acme.id).await?;
    assert_eq!((maker.get_str("name").unwrap(), maker.get_str("city").unwrap()), ("Acme Corp", "Boston"));
    assert!(version(&maker) > before, "the version moved on: {maker}");
    assert_eq!(stored(&t.db, "ev_gadgets", widget.id).await?.get_str("maker_name").unwrap(), "Acme Corp");
    assert_eq!(Maker::repo(&t.db).count(docrel::Filter::all()).await?, 1);
    Ok(())
}

/// An upsert that inserts a holder fills the copies it holds from their
/// sources, and refuses a bounded push it cannot guard.
#[tokio::test]
async fn upsert_inserting_a_holder_fills_its_copies() -> docrel::Result<()> {
    let t = TestDb::new("ev_upsert_holder").await?;
    let acme = Maker { id: ObjectId::new(), name: "acme".into(), city: String::new() };
    Maker::repo(&t.db).insert(&acme).await?;
    let (g, id) = (Gadget::fields(), ObjectId::new());
    let outcome =
        Gadget::repo(&t.db).upsert(g.id.eq(id), g.maker.set(acme.id).and(g.label.set_on_insert("new".into()))).await?;
    assert_eq!(outcome.upserted_id, Some(id));
    let gadget = stored(&t.db, "ev_gadgets", id).await?;
    assert_eq!((gadget.get_str("label").unwrap(), gadget.get_str("maker_name").unwrap()), ("new", "acme"), "{gadget}");
    // Read through docrel, the same document.
    let read = Gadget::repo(&t.db).require(&id).await?;
    assert_eq!(read, Gadget { id, label: "new".into(), maker: acme.id, maker_name: "acme".into() });
    Ok(())
}

/// `insert(..).returning()` gives the document as stored, copies filled,
/// in the round trips of a plain insert.
#[tokio::test]
async fn insert_returning_gives_the_stored_document_with_its_copies() -> docrel::Result<()> {
    let t = TestDb::new("ev_returning").await?;
    let acme = Maker { id: ObjectId::new(), name: "acme".into(), city: String::new() };
    Maker::repo(&t.db).insert(&acme).await?;
    let gadget =
        |label: &str| Gadget { id: ObjectId::new(), label: label.into(), maker: acme.id, maker_name: "?".into() };
    let (plain, returned) = (gadget("plain"), gadget("returned"));

    let mark = t.trips.mark();
    Gadget::repo(&t.db).insert(&plain).await?;
    let plain_trips = t.trips.since(mark);
    let mark = t.trips.mark();
    let back = Gadget::repo(&t.db).insert(&returned).returning().await?;
    assert_eq!(t.trips.since(mark), plain_trips, "no extra round trip");
    assert_eq!(back, Gadget { maker_name: "acme".into(), ..returned.clone() });
    let raw = stored(&t.db, "ev_gadgets", returned.id).await?;
    assert_eq!(raw.get_str("maker_name").unwrap(), "acme");
    // A source comes back as stored too (its version is bookkeeping, not a field).
    let beta = Maker { id: ObjectId::new(), name: "beta".into(), city: "Oslo".into() };
    assert_eq!(Maker::repo(&t.db).insert(&beta).returning().await?, beta);
    Ok(())
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[document(collection = "ev_shelves")]
struct Shelf {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    #[embed(max = 2)]
    items: Vec<String>,
}

/// A type that owes nothing on insert upserts in one round trip; a bounded
/// push into a full matching document is `EmbedFull`, never a second
/// document.
#[tokio::test]
async fn upsert_of_a_plain_type_is_one_round_trip_and_bounds_hold() -> docrel::Result<()> {
    let t = TestDb::new("ev_upsert_plain").await?;
    let f = Shelf::fields();
    let mark = t.trips.mark();
    let made = Shelf::repo(&t.db).upsert(f.name.eq("top"), f.items.set_on_insert(vec!["a".into()])).await?;
    assert_eq!(t.trips.commands_since(mark), ["update ev_shelves"]);
    let id = made.upserted_id.expect("inserted with a generated id");
    assert_eq!(stored(&t.db, "ev_shelves", id).await?, doc! {"_id": id, "name": "top", "items": ["a"]});

    let push = || f.items.push(["b".to_owned()]);
    assert_eq!(Shelf::repo(&t.db).upsert(f.name.eq("top"), push()).await?.matched, 1);
    let err = Shelf::repo(&t.db).upsert(f.name.eq("top"), push()).await.unwrap_err();
    assert!(matches!(err, Error::EmbedFull { max: 2, len: 3, .. }), "{err:?}");
    let raw = t.db.collection::<BsonDoc>("ev_shelves");
    assert_eq!(raw.count_documents(doc! {}).await?, 1, "no second document");
    assert_eq!(stored(&t.db, "ev_shelves", id).await?.get_array("items").unwrap().len(), 2);
    // A new shelf with a push: inserted with the pushed element.
    let other = Shelf::repo(&t.db).upsert(f.name.eq("low"), push()).await?;
    let low = stored(&t.db, "ev_shelves", other.upserted_id.expect("inserted")).await?;
    assert_eq!(low.get_array("items").unwrap(), &vec![docrel::bson::Bson::from("b")]);
    Ok(())
}
