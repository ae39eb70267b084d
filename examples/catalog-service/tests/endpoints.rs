//! The catalog service end to end: started on a loopback port against the
//! server of `MONGODB_URI`, each endpoint called over HTTP, the documents it
//! stored read back with the raw driver, and the round trips of the
//! relation-loading endpoints counted.

mod support;

use catalog_service::schema::Part;
use docrel::bson::{doc, oid::ObjectId, Document as BsonDoc};
use docrel::testing::TestDb;
use futures::TryStreamExt;
use hyper::{Method, StatusCode};
use serde_json::{json, Value};
use support::Service;

/// The one document of `collection` with this `_id` (hex), as stored.
async fn stored(t: &TestDb, collection: &str, id: &str) -> Option<BsonDoc> {
    let id = ObjectId::parse_str(id).expect("an id the service answered");
    t.db.collection::<BsonDoc>(collection).find_one(doc! {"_id": id}).await.expect("raw read")
}

/// Every document of `collection`, in `_id` order, as stored.
async fn stored_all(t: &TestDb, collection: &str) -> Vec<BsonDoc> {
    let cursor = t.db.collection::<BsonDoc>(collection).find(doc! {}).sort(doc! {"_id": 1}).await.expect("raw read");
    cursor.try_collect().await.expect("raw read")
}

fn oid(id: &Value) -> ObjectId {
    ObjectId::parse_str(id.as_str().expect("an id string")).expect("24 hex digits")
}

/// `POST /parts`, checked: the new part's id.
async fn new_part(s: &Service, partno: &str, name: &str, price: f64) -> String {
    let (status, body) =
        s.call(Method::POST, "/parts", Some(json!({"partno": partno, "name": name, "price": price}))).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["id"].as_str().expect("the part's id").to_owned()
}

/// `POST /products`, checked: the new product's id.
async fn new_product(s: &Service, name: &str, parts: &[&str]) -> String {
    let (status, body) = s.call(Method::POST, "/products", Some(json!({"name": name, "parts": parts}))).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["id"].as_str().expect("the product's id").to_owned()
}

#[tokio::test]
async fn a_part_is_created_once_per_partno() {
    let t = TestDb::new("web_parts").await.expect("a test database");
    let s = Service::start(&t).await;

    let mark = t.trips.mark();
    let grommet = new_part(&s, "123-aff-456", "#4 grommet", 3.99).await;
    // The insert, and the read of products that may already hold copies of it.
    assert_eq!(t.trips.commands_since(mark), ["insert parts", "find products"]);
    let mut raw = stored(&t, "parts", &grommet).await.expect("the part is stored");
    // A source of copies carries its version in docrel's `_docrel` field.
    assert!(raw.remove("_docrel").is_some(), "{raw}");
    assert_eq!(raw, doc! {"_id": oid(&json!(grommet)), "partno": "123-aff-456", "name": "#4 grommet", "price": 3.99});

    // The unique index made at startup: 409, naming the field the client sent.
    let again = json!({"partno": "123-aff-456", "name": "another grommet", "price": 1.0});
    let (status, body) = s.call(Method::POST, "/parts", Some(again)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body, json!({"error": "partno `123-aff-456` is already taken"}));

    // Input the service refuses itself: 400 with what is wrong.
    let (status, body) = s.call(Method::POST, "/parts", Some(json!({"partno": "x", "name": "x"}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"].as_str().is_some_and(|m| m.contains("price")), "{body}");
    let (status, body) = s.call(Method::POST, "/parts", Some(json!({"partno": "x", "name": " ", "price": 1.0}))).await;
    assert_eq!((status, body), (StatusCode::BAD_REQUEST, json!({"error": "name must not be empty"})));
    assert_eq!(stored_all(&t, "parts").await.len(), 1, "nothing else was written");
    s.stop().await.expect("a clean shutdown");
}

#[tokio::test]
async fn a_product_page_loads_its_parts_with_one_query() {
    let t = TestDb::new("web_get").await.expect("a test database");
    let s = Service::start(&t).await;
    let grommet = new_part(&s, "123-aff-456", "#4 grommet", 3.99).await;
    let fan = new_part(&s, "123-aff-457", "fan blade assembly", 12.5).await;
    let mark = t.trips.mark();
    let shifter = new_product(&s, "left-handed smoke shifter", &[&grommet, &fan]).await;
    // The service's check that the parts exist; the insert with the read of
    // the names it copies and their confirmation; the product read back
    // and its parts' prices.
    assert_eq!(t.trips.since(mark), 6);

    // Stored: the parts' ids with a copy of their names, filled on insert.
    let mut raw = stored(&t, "products", &shifter).await.expect("the product is stored");
    assert!(raw.remove("_docrel").is_some(), "the copies' version records: {raw}");
    let parts = [(&grommet, "#4 grommet"), (&fan, "fan blade assembly")];
    let lines: Vec<BsonDoc> = parts.iter().map(|(id, name)| doc! {"id": oid(&json!(id)), "name": *name}).collect();
    assert_eq!(raw, doc! {"_id": oid(&json!(shifter)), "name": "left-handed smoke shifter", "parts": lines});

    // The product, then one `$in` for all its parts: 1 round trip per relation.
    let mark = t.trips.mark();
    let (status, body) = s.call(Method::GET, &format!("/products/{shifter}"), None).await;
    assert_eq!(t.trips.commands_since(mark), ["find products", "find parts"]);
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"id": shifter, "name": "left-handed smoke shifter", "parts": [
            {"id": grommet, "name": "#4 grommet", "partno": "123-aff-456", "price": 3.99},
            {"id": fan, "name": "fan blade assembly", "partno": "123-aff-457", "price": 12.5},
        ]})
    );

    let missing = ObjectId::new().to_hex();
    let (status, body) = s.call(Method::GET, &format!("/products/{missing}"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(body["error"].as_str().is_some_and(|m| m == "not found"), "{body}");
    let (status, body) = s.call(Method::GET, "/products/not-an-id", None).await;
    assert_eq!(
        (status, body),
        (StatusCode::BAD_REQUEST, json!({"error": "`not-an-id` is not a product id (24 hex digits)"}))
    );
    s.stop().await.expect("a clean shutdown");
}

#[tokio::test]
async fn renaming_a_part_rewrites_every_products_copy() {
    let t = TestDb::new("web_rename").await.expect("a test database");
    let s = Service::start(&t).await;
    let grommet = new_part(&s, "123-aff-456", "#4 grommet", 3.99).await;
    let washer = new_part(&s, "123-aff-458", "washer", 0.25).await;
    let left = new_product(&s, "left-handed smoke shifter", &[&grommet, &washer]).await;
    let right = new_product(&s, "right-handed smoke shifter", &[&grommet]).await;

    let rename = json!({"name": "#4 grommet, stainless"});
    let mark = t.trips.mark();
    let (status, body) = s.call(Method::PATCH, &format!("/parts/{grommet}"), Some(rename)).await;
    // The part and the copies in every product in one bulkWrite (MongoDB
    // 8.0+), then the part read back.
    assert_eq!(t.trips.commands_since(mark), ["bulkWrite", "find parts"]);
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, json!({"id": grommet, "partno": "123-aff-456", "name": "#4 grommet, stainless", "price": 3.99}));

    let part = stored(&t, "parts", &grommet).await.expect("the part");
    assert_eq!(part.get_str("name").ok(), Some("#4 grommet, stainless"));
    for product in [&left, &right] {
        let raw = stored(&t, "products", product).await.expect("the product");
        let first = raw.get_array("parts").expect("parts")[0].as_document().expect("an element").clone();
        assert_eq!(first, doc! {"id": oid(&json!(grommet)), "name": "#4 grommet, stainless"}, "{raw}");
    }
    let raw = stored(&t, "products", &left).await.expect("the product");
    let second = raw.get_array("parts").expect("parts")[1].as_document().expect("an element").clone();
    assert_eq!(second, doc! {"id": oid(&json!(washer)), "name": "washer"}, "the other copy is untouched");

    let missing = ObjectId::new().to_hex();
    let (status, body) = s.call(Method::PATCH, &format!("/parts/{missing}"), Some(json!({"name": "x"}))).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    s.stop().await.expect("a clean shutdown");
}

#[tokio::test]
async fn products_are_listed_a_page_at_a_time() {
    let t = TestDb::new("web_list").await.expect("a test database");
    let s = Service::start(&t).await;
    let grommet = new_part(&s, "123-aff-456", "#4 grommet", 3.99).await;
    let fan = new_part(&s, "123-aff-457", "fan blade assembly", 12.5).await;
    for n in 0..5 {
        new_product(&s, &format!("shifter mk {n}"), &[&grommet, &fan]).await;
    }
    let ids: Vec<String> =
        stored_all(&t, "products").await.iter().map(|d| d.get_object_id("_id").expect("_id").to_hex()).collect();

    let mut listed = Vec::new();
    let mut path = "/products?limit=2".to_owned();
    let mut pages = 0;
    loop {
        let mark = t.trips.mark();
        let (status, body) = s.call(Method::GET, &path, None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        // A page of products and the parts of all of them: 2, whatever the page's size.
        assert_eq!(t.trips.commands_since(mark), ["find products", "find parts"], "page {pages}");
        pages += 1;
        for item in body["items"].as_array().expect("items") {
            assert_eq!(item["parts"][1]["price"], json!(12.5), "{item}");
            listed.push(item["id"].as_str().expect("an id").to_owned());
        }
        match body["next"].as_str() {
            Some(next) => path = format!("/products?limit=2&after={next}"),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(listed, ids, "every product once, in _id order");

    let (status, body) = s.call(Method::GET, "/products?after=nope", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    s.stop().await.expect("a clean shutdown");
}

#[tokio::test]
async fn a_part_in_use_is_not_deleted() {
    let t = TestDb::new("web_delete").await.expect("a test database");
    let s = Service::start(&t).await;
    let grommet = new_part(&s, "123-aff-456", "#4 grommet", 3.99).await;
    let shifter = new_product(&s, "left-handed smoke shifter", &[&grommet]).await;

    // `on_delete = restrict`: 409, what the client can do, nothing deleted; the
    // rule's one query decided it before any write.
    let mark = t.trips.mark();
    let (status, body) = s.call(Method::DELETE, &format!("/parts/{grommet}"), None).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(body["error"].as_str().is_some_and(|m| m.contains("still referred to")), "{body}");
    assert_eq!(t.trips.commands_since(mark), ["aggregate products"]);
    assert!(stored(&t, "parts", &grommet).await.is_some(), "the part is kept");

    let mark = t.trips.mark();
    let (status, body) = s.call(Method::DELETE, &format!("/products/{shifter}"), None).await;
    assert_eq!((status, body), (StatusCode::NO_CONTENT, Value::Null));
    assert_eq!(t.trips.commands_since(mark), ["delete products"]);
    assert!(stored(&t, "products", &shifter).await.is_none());
    let mark = t.trips.mark();
    let (status, _) = s.call(Method::DELETE, &format!("/parts/{grommet}"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(t.trips.commands_since(mark), ["aggregate products", "delete parts"]);
    assert!(stored(&t, "parts", &grommet).await.is_none());

    let (status, body) = s.call(Method::DELETE, &format!("/parts/{grommet}"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, body) = s.call(Method::DELETE, &format!("/products/{shifter}"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    s.stop().await.expect("a clean shutdown");
}

#[tokio::test]
async fn a_product_past_its_bound_is_400_with_its_limit() {
    let t = TestDb::new("web_bound").await.expect("a test database");
    let s = Service::start(&t).await;
    let parts: Vec<Part> = (0..51)
        .map(|n| Part { id: ObjectId::new(), partno: format!("p-{n}"), name: format!("part {n}"), price: 1.0 })
        .collect();
    Part::repo(&t.db).insert_many(&parts).await.expect("51 parts");
    let ids: Vec<String> = parts.iter().map(|p| p.id.to_hex()).collect();

    let (status, body) = s.call(Method::POST, "/products", Some(json!({"name": "too big", "parts": ids}))).await;
    let limit = json!({"error": "a list holds at most 50 entries; nothing was written"});
    assert_eq!((status, body), (StatusCode::BAD_REQUEST, limit));
    assert!(stored_all(&t, "products").await.is_empty(), "nothing was written");

    let unknown = json!({"name": "ghost", "parts": [ObjectId::new().to_hex()]});
    let (status, body) = s.call(Method::POST, "/products", Some(unknown)).await;
    assert_eq!((status, body), (StatusCode::BAD_REQUEST, json!({"error": "a part of the product does not exist"})));
    assert!(stored_all(&t, "products").await.is_empty());
    s.stop().await.expect("a clean shutdown");
}

#[tokio::test]
async fn the_service_stops_gracefully() {
    let t = TestDb::new("web_stop").await.expect("a test database");
    let s = Service::start(&t).await;
    let addr = s.addr;
    new_part(&s, "123-aff-456", "#4 grommet", 3.99).await;
    s.stop().await.expect("serve returns Ok after the shutdown signal");
    assert!(tokio::net::TcpStream::connect(addr).await.is_err(), "the port is closed");
}
