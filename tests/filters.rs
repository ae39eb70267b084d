//! Typed filters and updates against the real server: every one is run,
//! and what it matched or wrote is read back with the raw driver.

use docrel::bson::{doc, Bson, DateTime, Document as BsonDoc, Timestamp};
use docrel::testing::TestDb;
use docrel::{Document, Error, Filter, Update};
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Line {
    sku: String,
    qty: i32,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Address {
    city: String,
    zip: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[document(collection = "items")]
struct Item {
    #[serde(rename = "_id")]
    id: i32,
    name: String,
    qty: i32,
    /// Any value a caller hands over (a map from a JSON body, say).
    label: Bson,
    /// Values of any type.
    notes: Vec<Bson>,
    tags: Vec<String>,
    scores: Vec<i32>,
    #[embed]
    address: Address,
    #[embed(max = 3)]
    lines: Vec<Line>,
    seen: Option<DateTime>,
    stamp: Option<Timestamp>,
}

fn line(sku: &str, qty: i32) -> Line {
    Line { sku: sku.into(), qty }
}

/// Four small items; each test gets its own database.
fn items() -> Vec<Item> {
    let item = |id: i32, name: &str, qty: i32, tags: &[&str], scores: &[i32], city: &str, lines: Vec<Line>| Item {
        id,
        name: name.into(),
        qty,
        label: Bson::String(format!("l{id}")),
        notes: vec![Bson::from("a"), Bson::from(id)],
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        scores: scores.to_vec(),
        address: Address { city: city.into(), zip: format!("0{id}") },
        lines,
        seen: None,
        stamp: None,
    };
    vec![
        item(1, "a.b bolt", 5, &["red", "big"], &[80, 90], "Boston", vec![line("x", 1), line("y", 5)]),
        item(2, "axb nut", 0, &["red"], &[10], "Austin", vec![line("x", 9)]),
        item(3, "Washer", 12, &[], &[], "Boston", vec![]),
        item(4, "gear", 7, &["big", "blue", "red"], &[84, 70, 100], "Denver", vec![line("y", 2), line("z", 3)]),
    ]
}

async fn seeded(label: &str) -> docrel::Result<TestDb> {
    let t = TestDb::new(label).await?;
    Item::repo(&t.db).insert_many(&items()).await?;
    Ok(t)
}

/// The ids a filter matches, read with the raw driver.
async fn ids(t: &TestDb, filter: Filter) -> docrel::Result<Vec<i32>> {
    let filter = filter.into_document()?;
    let docs: Vec<BsonDoc> =
        t.db.collection::<BsonDoc>("items")
            .find(filter)
            .sort(doc! {"_id": 1})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
    Ok(docs.iter().map(|d| d.get_i32("_id").expect("an int id")).collect())
}

async fn raw(t: &TestDb, id: i32) -> BsonDoc {
    t.db.collection::<BsonDoc>("items").find_one(doc! {"_id": id}).await.expect("raw read").expect("stored")
}

fn ints(doc: &BsonDoc, key: &str) -> Vec<i32> {
    doc.get_array(key).expect("an array").iter().map(|b| b.as_i32().expect("an int")).collect()
}

fn strings(doc: &BsonDoc, key: &str) -> Vec<String> {
    doc.get_array(key).expect("an array").iter().map(|b| b.as_str().expect("a string").to_owned()).collect()
}

#[tokio::test]
async fn a_document_value_is_a_value_never_an_operator() -> docrel::Result<()> {
    let t = seeded("values").await?;
    let f = Item::fields();
    let injected = Bson::Document(doc! {"$ne": ""});
    // `{label: {"$ne": ""}}` matches all four; as a value it matches none.
    assert_eq!(ids(&t, Filter::new(doc! {"label": {"$ne": ""}})).await?, [1, 2, 3, 4]);
    assert_eq!(f.label.eq(injected.clone()).into_document()?, doc! {"label": {"$eq": {"$ne": ""}}});
    assert_eq!(ids(&t, f.label.eq(injected.clone())).await?, Vec::<i32>::new());
    assert_eq!(Item::repo(&t.db).count(f.label.eq(injected.clone())).await?, 0);
    assert_eq!(ids(&t, f.label.is_in(std::slice::from_ref(&injected))).await?, Vec::<i32>::new());
    assert_eq!(ids(&t, f.label.not_in(std::slice::from_ref(&injected))).await?, [1, 2, 3, 4]);
    // A map from user input, as serde hands it over.
    let map: BTreeMap<String, String> = [("$gt".to_owned(), String::new())].into();
    assert_eq!(
        ids(&t, f.label.eq(Bson::Document(docrel::bson_compat::to_document(&map).unwrap()))).await?,
        Vec::<i32>::new()
    );
    // A map that encodes as a regular expression is a value too, also in
    // `$in` (where the server would take it as a pattern).
    let regex: BTreeMap<&str, BsonDoc> = [("$regularExpression", doc! {"pattern": ".*", "options": ""})].into();
    let regex = docrel::bson_compat::to_bson(&regex).unwrap();
    assert!(matches!(regex, Bson::RegularExpression(_)));
    assert_eq!(ids(&t, f.label.eq(regex.clone())).await?, Vec::<i32>::new());
    assert_eq!(ids(&t, f.label.is_in(&[regex.clone(), Bson::from("l2")])).await?, [2]);
    assert_eq!(ids(&t, f.label.not_in(&[regex.clone(), injected.clone(), Bson::from("l2")])).await?, [1, 3, 4]);
    assert_eq!(ids(&t, f.notes.contains_all(&[Bson::from("a"), injected.clone()])).await?, Vec::<i32>::new());
    assert_eq!(ids(&t, f.notes.contains_all(&[Bson::from("a"), Bson::from(3)])).await?, [3]);
    // An element of an array field: `contains` matches arrays holding it.
    assert_eq!(ids(&t, f.tags.contains("blue")).await?, [4]);
    assert_eq!(ids(&t, f.tags.eq(vec!["red".to_owned()])).await?, [2]);
    // A pull of a document value pulls only elements equal to it: none here
    // (`{$pull: {notes: {$ne: ""}}}` would empty the array).
    assert_eq!(ids(&t, f.notes.contains(injected.clone())).await?, Vec::<i32>::new());
    assert_eq!(Item::repo(&t.db).update_by_id(&1, f.notes.pull(&injected)).await?.modified, 0);
    assert_eq!(raw(&t, 1).await.get_array("notes").unwrap(), &vec![Bson::from("a"), Bson::from(1)]);
    Ok(())
}

#[tokio::test]
async fn or_and_nor_not_combine_as_the_server_reads_them() -> docrel::Result<()> {
    let t = seeded("logic").await?;
    let f = Item::fields();
    assert_eq!(ids(&t, f.qty.lt(1).or(f.qty.gt(10))).await?, [2, 3]);
    assert_eq!(ids(&t, f.qty.lt(1).or(f.qty.gt(10)).or(f.name.eq("gear"))).await?, [2, 3, 4]);
    // Two conditions on one field merge into one condition.
    let between = f.qty.gte(5).and(f.qty.lt(12));
    assert_eq!(between.clone().into_document()?, doc! {"qty": {"$gte": 5, "$lt": 12}});
    assert_eq!(ids(&t, between).await?, [1, 4]);
    assert_eq!(ids(&t, f.qty.ne(5).and(f.qty.ne(7))).await?, [2, 3]);
    assert_eq!(ids(&t, Filter::any_of([f.qty.eq(0), f.qty.eq(7)])).await?, [2, 4]);
    assert_eq!(ids(&t, Filter::all_of([f.tags.contains("red"), f.qty.gt(3)])).await?, [1, 4]);
    assert_eq!(ids(&t, Filter::none_of([f.qty.eq(0), f.qty.eq(7)])).await?, [1, 3]);
    assert_eq!(ids(&t, !f.qty.gt(5)).await?, [1, 2]);
    assert_eq!(ids(&t, !(f.qty.gt(5).and(f.address.at::<String>("city").eq("Boston")))).await?, [1, 2, 4]);
    assert_eq!(ids(&t, !!f.qty.gt(5)).await?, [3, 4]);
    // A negation matches documents without the field, as `$not` does.
    assert_eq!(ids(&t, !f.address.at::<String>("country").eq("US")).await?, [1, 2, 3, 4]);
    assert_eq!(ids(&t, Filter::none()).await?, Vec::<i32>::new());
    assert_eq!(ids(&t, Filter::any_of([])).await?, Vec::<i32>::new());
    assert_eq!(ids(&t, !Filter::none()).await?, [1, 2, 3, 4]);
    Ok(())
}

#[tokio::test]
async fn lists_patterns_and_nested_paths() -> docrel::Result<()> {
    let t = seeded("lists").await?;
    let f = Item::fields();
    assert_eq!(ids(&t, f.qty.is_in(&[0, 7, 99])).await?, [2, 4]);
    assert_eq!(ids(&t, f.qty.not_in(&[0, 7])).await?, [1, 3]);
    assert_eq!(ids(&t, f.tags.not_in(&["red"])).await?, [3]);
    assert_eq!(ids(&t, f.name.regex("^w", "i")).await?, [3]);
    assert_eq!(ids(&t, f.name.regex("^w", "")).await?, Vec::<i32>::new());
    assert!(matches!(f.name.regex("w", "g").into_document(), Err(Error::Invalid { .. })));
    // The prefix is text: `.` matches a dot, not any character.
    assert_eq!(ids(&t, f.name.starts_with("a.")).await?, [1]);
    assert_eq!(ids(&t, f.name.starts_with("a.b b")).await?, [1]);
    assert_eq!(ids(&t, f.name.starts_with("a.b (")).await?, Vec::<i32>::new());
    assert_eq!(ids(&t, f.name.regex("^a.", "")).await?, [1, 2]);
    assert_eq!(ids(&t, f.tags.starts_with("bl")).await?, [4]);
    // Nested paths through typed handles.
    let city = f.address.at::<String>("city");
    assert_eq!(city.path(), "address.city");
    assert_eq!(ids(&t, city.eq("Boston")).await?, [1, 3]);
    assert_eq!(ids(&t, f.address.at::<String>("zip").gt("02".to_owned())).await?, [3, 4]);
    // On an array of structs, a nested path matches when any element does.
    assert_eq!(ids(&t, f.lines.at::<i32>("qty").gte(5)).await?, [1, 2]);
    let docs = Item::repo(&t.db).find(city.eq("Boston").and(f.qty.gt(6))).to_vec().await?;
    assert_eq!(docs, vec![items()[2].clone()]);
    Ok(())
}

#[tokio::test]
async fn array_sizes_all_and_elem_match() -> docrel::Result<()> {
    let t = seeded("arrays").await?;
    let f = Item::fields();
    assert_eq!(ids(&t, f.tags.size(0)).await?, [3]);
    assert_eq!(ids(&t, f.lines.size(2)).await?, [1, 4]);
    assert_eq!(ids(&t, f.tags.contains_all(&["red".into(), "big".into()])).await?, [1, 4]);
    assert_eq!(ids(&t, f.tags.contains_all(&[])).await?, Vec::<i32>::new());
    // One score in [82, 88): only item 4 (84); item 1 has one above 82 and one
    // below 88, but not one element doing both.
    assert_eq!(ids(&t, f.scores.elem_match(|s| s.gte(82).and(s.lt(88)))).await?, [4]);
    assert_eq!(ids(&t, Filter::new(doc! {"scores": {"$gte": 82, "$lt": 88}})).await?, [1, 4]);
    assert_eq!(ids(&t, f.scores.elem_match(|s| !s.gte(50))).await?, [2]);
    // One line with sku "x" and qty over 3: only item 2; item 1 has an "x"
    // and a line over 3, in two elements.
    let x_over_3 = f.lines.elem_match(|l| l.at::<String>("sku").eq("x").and(l.at::<i32>("qty").gt(3)));
    assert_eq!(x_over_3.into_document()?, doc! {"lines": {"$elemMatch": {"sku": {"$eq": "x"}, "qty": {"$gt": 3}}}});
    let x_over_3 = f.lines.elem_match(|l| l.at::<String>("sku").eq("x").and(l.at::<i32>("qty").gt(3)));
    assert_eq!(ids(&t, x_over_3).await?, [2]);
    let dotted = f.lines.at::<String>("sku").eq("x").and(f.lines.at::<i32>("qty").gt(3));
    assert_eq!(ids(&t, dotted).await?, [1, 2]);
    assert_eq!(ids(&t, f.lines.elem_match(|l| !l.at::<String>("sku").is_in(&["x", "y"]))).await?, [4]);
    // Alternatives on a scalar element cannot be said in `$elemMatch`.
    let mark = t.trips.mark();
    let either = f.scores.elem_match(|s| s.eq(10).or(s.eq(70)));
    assert!(matches!(Item::repo(&t.db).count(either).await, Err(Error::Invalid { .. })));
    assert_eq!(t.trips.since(mark), 0);
    Ok(())
}

#[tokio::test]
async fn pull_pull_all_and_pull_where_remove_exactly_what_they_name() -> docrel::Result<()> {
    let t = seeded("pulls").await?;
    let repo = Item::repo(&t.db);
    let f = Item::fields();
    repo.update_by_id(&4, f.tags.pull(&"blue".into())).await?;
    assert_eq!(strings(&raw(&t, 4).await, "tags"), ["big", "red"]);
    repo.update_by_id(&4, f.tags.pull_all(&["big".into(), "red".into(), "none".into()])).await?;
    assert_eq!(strings(&raw(&t, 4).await, "tags"), Vec::<String>::new());
    repo.update_by_id(&4, f.scores.pull_where(|s| s.gte(84).and(s.lt(100)))).await?;
    assert_eq!(ints(&raw(&t, 4).await, "scores"), [70, 100]);
    // A struct element is pulled when equal in every field...
    repo.update_by_id(&1, f.lines.pull(&line("y", 4))).await?;
    assert_eq!(raw(&t, 1).await.get_array("lines").unwrap().len(), 2);
    repo.update_by_id(&1, f.lines.pull(&line("y", 5))).await?;
    assert_eq!(raw(&t, 1).await.get_array("lines").unwrap(), &vec![Bson::Document(doc! {"sku": "x", "qty": 1})]);
    // ...or when it meets a condition on its fields.
    repo.update_many(Filter::all(), f.lines.pull_where(|l| l.at::<i32>("qty").gt(2))).await?;
    assert_eq!(raw(&t, 2).await.get_array("lines").unwrap(), &Vec::<Bson>::new());
    assert_eq!(raw(&t, 4).await.get_array("lines").unwrap(), &vec![Bson::Document(doc! {"sku": "y", "qty": 2})]);
    assert_eq!(raw(&t, 1).await.get_array("lines").unwrap().len(), 1);
    Ok(())
}

#[tokio::test]
async fn min_max_current_date_and_set_on_insert() -> docrel::Result<()> {
    let t = seeded("minmax").await?;
    let repo = Item::repo(&t.db);
    let f = Item::fields();
    repo.update_many(Filter::all(), f.qty.set_min(6)).await?;
    let qtys = |docs: Vec<BsonDoc>| docs.iter().map(|d| d.get_i32("qty").unwrap()).collect::<Vec<_>>();
    let all = || async { t.db.collection::<BsonDoc>("items").find(doc! {}).sort(doc! {"_id": 1}).await.unwrap() };
    assert_eq!(qtys(all().await.try_collect().await.unwrap()), [5, 0, 6, 6]);
    repo.update_many(Filter::all(), f.qty.set_max(3)).await?;
    assert_eq!(qtys(all().await.try_collect().await.unwrap()), [5, 3, 6, 6]);

    let before = DateTime::now();
    repo.update_by_id(&2, f.seen.current_date().and(f.stamp.current_date())).await?;
    let stored = raw(&t, 2).await;
    let seen = stored.get_datetime("seen").expect("a date");
    assert!(seen.timestamp_millis() >= before.timestamp_millis() - 5_000, "{seen} vs {before}");
    assert!(stored.get_timestamp("stamp").expect("a timestamp").time > 0);
    assert!(repo.get(&2).await?.and_then(|i| i.stamp).is_some());

    // Through docrel (no upsert) `$setOnInsert` leaves a stored document alone...
    let u = f.name.set_on_insert("fresh".into()).and(f.qty.inc(1));
    repo.update_by_id(&3, u.clone()).await?;
    let stored = raw(&t, 3).await;
    assert_eq!((stored.get_str("name").unwrap(), stored.get_i32("qty").unwrap()), ("Washer", 7));
    // ...and writes when an upsert inserts.
    let items = t.db.collection::<BsonDoc>("items");
    items.update_one(doc! {"_id": 9}, u.to_document()?).upsert(true).await.unwrap();
    let inserted = raw(&t, 9).await;
    assert_eq!((inserted.get_str("name").unwrap(), inserted.get_i32("qty").unwrap(), inserted.len()), ("fresh", 1, 3));
    Ok(())
}

#[tokio::test]
async fn a_bounded_array_never_passes_its_bound_through_set_or_raw_updates() -> docrel::Result<()> {
    let t = seeded("bounds").await?;
    let repo = Item::repo(&t.db);
    let f = Item::fields();
    assert_eq!(f.lines.max(), Some(3));
    let four = vec![line("a", 1), line("b", 1), line("c", 1), line("d", 1)];
    let mark = t.trips.mark();
    let err = repo.update_by_id(&1, f.lines.set(four.clone())).await.unwrap_err();
    assert!(matches!(err, Error::EmbedFull { field: "lines", max: 3, len: 4, .. }), "{err}");
    let err = repo.update_many(Filter::all(), f.lines.set_on_insert(four.clone())).await.unwrap_err();
    assert!(matches!(err, Error::EmbedFull { len: 4, .. }), "{err}");
    // An index at the bound or past it would pad the array.
    let err = repo.update_by_id(&1, f.lines.at::<Line>("3").set(line("d", 1))).await.unwrap_err();
    assert!(matches!(err, Error::EmbedFull { len: 4, .. }), "{err}");
    let err = repo.update_by_id(&1, Update::raw(doc! {"$set": {"lines": [{}, {}, {}, {}]}})).await.unwrap_err();
    assert!(matches!(err, Error::EmbedFull { len: 4, .. }), "{err}");
    assert_eq!(t.trips.since(mark), 0, "refused before any round trip");
    assert_eq!(raw(&t, 1).await.get_array("lines").unwrap().len(), 2);

    // Up to the bound is fine, by handle and by index.
    repo.update_by_id(&1, f.lines.set(four[..3].to_vec())).await?;
    repo.update_by_id(&1, f.lines.at::<i32>("2.qty").set(9)).await?;
    assert_eq!(raw(&t, 1).await.get_array("lines").unwrap().len(), 3);
    // A raw push on the full array is guarded like a typed one; so is add_to_set.
    let err = repo.update_by_id(&1, Update::raw(doc! {"$push": {"lines": {"sku": "e", "qty": 1}}})).await.unwrap_err();
    assert!(matches!(err, Error::EmbedFull { max: 3, len: 4, .. }), "{err}");
    let err = repo.update_by_id(&1, f.lines.add_to_set([line("e", 1)])).await.unwrap_err();
    assert!(matches!(err, Error::EmbedFull { max: 3, len: 4, .. }), "{err}");
    assert_eq!(raw(&t, 1).await.get_array("lines").unwrap().len(), 3);
    // A push that slices to the bound keeps it, so it is let through.
    let capped = doc! {"$push": {"lines": {"$each": [{"sku": "e", "qty": 1}], "$slice": -3}}};
    repo.update_by_id(&1, Update::raw(capped)).await?;
    let lines = raw(&t, 1).await.get_array("lines").unwrap().clone();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[2], Bson::Document(doc! {"sku": "e", "qty": 1}));
    Ok(())
}

#[test]
fn every_update_names_the_paths_it_touches() {
    let f = Item::fields();
    let u = f
        .qty
        .set_min(1)
        .and(f.name.set_on_insert("n".into()))
        .and(f.seen.current_date())
        .and(f.scores.pull_where(|s| s.lt(1)))
        .and(f.tags.pull_all(&[]))
        .and(f.lines.add_to_set([]))
        .and(f.address.at::<String>("city").set("X".into()))
        .and(f.label.unset());
    assert_eq!(
        u.touched().collect::<Vec<_>>(),
        ["qty", "name", "seen", "scores", "tags", "lines", "address.city", "label"]
    );
    let twice = f.qty.set_min(1).and(f.qty.set_min(2));
    assert!(matches!(twice.to_document(), Err(Error::Invalid { .. })));
}
