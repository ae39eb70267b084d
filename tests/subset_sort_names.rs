//! A subset's `sort` and `key` take the child's stored names and its Rust
//! names alike (`-_id` or `-id`, `pubDate` or `published`): the parent keeps
//! its summaries in the order those names mean, read back as stored.

use docrel::bson::{doc, DateTime, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::{Document, View};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "i29diag_shelves")]
struct Shelf {
    #[serde(rename = "_id")]
    id: i32,
    /// The three highest ids, by the stored name of the id.
    #[embed(max = 3, subset_of = Book, sort = "-_id", key = _id)]
    newest: Vec<BookSummary>,
    /// The three first published, by the stored name of a renamed field,
    /// ties by the Rust name of the id (highest first).
    #[embed(max = 3, subset_of = Book, sort = "pubDate, -id", key = id)]
    first_published: Vec<BookSummary>,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "i29diag_books")]
struct Book {
    #[serde(rename = "_id")]
    id: i32,
    #[parent_ref(to = Shelf, sort = "-_id")]
    shelf: i32,
    #[serde(rename = "pubDate")]
    published: DateTime,
}

#[derive(View, Serialize, Deserialize)]
#[view(of = Book)]
struct BookSummary {
    #[serde(rename = "_id")]
    id: i32,
    #[serde(rename = "pubDate")]
    published: DateTime,
}

/// The ids of the summaries in `field` of shelf 1, as stored.
async fn stored_ids(t: &TestDb, field: &str) -> Vec<i32> {
    let shelf = t.db.collection::<BsonDoc>("i29diag_shelves").find_one(doc! {"_id": 1}).await.unwrap().unwrap();
    shelf.get_array(field).unwrap().iter().map(|s| s.as_document().unwrap().get_i32("_id").unwrap()).collect()
}

#[tokio::test]
async fn a_subset_sorted_by_stored_or_rust_names_keeps_that_order() -> docrel::Result<()> {
    let t = TestDb::new("i29diag_sort_names").await?;
    Shelf::repo(&t.db).insert(&Shelf { id: 1, newest: vec![], first_published: vec![] }).await?;
    // Days published, by id: 2 and 5 tie on day 1.
    let days = [(1, 4), (2, 1), (3, 3), (4, 2), (5, 1), (6, 5)];
    for (id, day) in [3, 6, 1, 5, 2, 4].map(|id| days[id as usize - 1]) {
        let published = DateTime::from_millis(day * 86_400_000);
        Book::repo(&t.db).insert(&Book { id, shelf: 1, published }).await?;
    }
    assert_eq!(stored_ids(&t, "newest").await, [6, 5, 4]);
    assert_eq!(stored_ids(&t, "first_published").await, [5, 2, 4]);

    // A book edited and one deleted are found by their key, either name.
    let published = DateTime::from_millis(0);
    Book::repo(&t.db).update_by_id(&3, Book::fields().published.set(published)).await?;
    Book::repo(&t.db).delete_by_id(&6).await?;
    assert_eq!(stored_ids(&t, "newest").await, [5, 4, 3]);
    assert_eq!(stored_ids(&t, "first_published").await, [3, 5, 2]);
    Ok(())
}
