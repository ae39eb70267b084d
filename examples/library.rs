//! The library of *The Little MongoDB Schema Design Book*, Many-To-Many:
//! books and authors reference each other (two way embedding), books hold
//! the ids of their few categories and categories hold nothing (one way
//! embedding: "drama" may have thousands of books). Integer ids, as in the text.
//!
//! ```text
//! authors:    {_id, name, books: [book ids]}
//! books:      {_id, title, categories: [category ids], authors: [author ids]}
//! categories: {_id, name}
//! ```
//!
//! Run: `MONGODB_URI=mongodb://... cargo run --example library` (database
//! `DOCREL_DB`, default `docrel_library`; dropped first, left in place).

use docrel::mongodb::Database;
use docrel::{Document, View};
use serde::{Deserialize, Serialize};

#[path = "common/mod.rs"]
pub mod common;

// ANCHOR: schema
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "authors")]
pub struct Author {
    #[serde(rename = "_id")]
    pub id: i32,
    #[document(index)]
    pub name: String,
    #[reference(many, to = Book, inverse = authors, max = 500)]
    pub books: Vec<i32>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "books")]
pub struct Book {
    #[serde(rename = "_id")]
    pub id: i32,
    #[document(index)]
    pub title: String,
    /// "N is a maximum of 3 categories for a book"; a category in use cannot be deleted.
    #[reference(many, to = Category, max = 3, on_delete = restrict)]
    pub categories: Vec<i32>,
    #[reference(many, to = Author, inverse = books, max = 20)]
    pub authors: Vec<i32>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "categories")]
pub struct Category {
    #[serde(rename = "_id")]
    pub id: i32,
    #[document(unique)]
    pub name: String,
}
// ANCHOR_END: schema

#[derive(View, Deserialize, Debug)]
#[view(of = Book)]
pub struct Title {
    pub title: String,
}

#[derive(View, Deserialize, Debug)]
#[view(of = Author)]
pub struct AuthorName {
    pub name: String,
}

#[derive(View, Deserialize, Debug)]
#[view(of = Category)]
pub struct CategoryName {
    pub name: String,
}

/// What the four queries of the text found.
#[derive(Debug, Clone, PartialEq)]
pub struct Answers {
    /// Example 1: the books of Peter Stanford.
    pub books_of_author: Vec<String>,
    /// Example 2: the authors of "A tale of two space ships".
    pub authors_of_book: Vec<String>,
    /// Example 3: the categories of "A tale of two space ships".
    pub categories_of_book: Vec<String>,
    /// Example 4: the books of "drama".
    pub books_of_category: Vec<String>,
}

fn not_found(collection: &'static str, what: &str) -> docrel::Error {
    docrel::Error::NotFound { collection, id: what.to_owned() }
}

pub async fn scenario(db: &Database, log: &common::Log) -> docrel::Result<Answers> {
    log.title("library: books and authors reference each other; books reference their categories");
    log.step("create the indexes of authors, books and categories", async {
        Author::repo(db).ensure_indexes().await?;
        Book::repo(db).ensure_indexes().await?;
        Category::repo(db).ensure_indexes().await
    })
    .await?;
    let categories = [Category { id: 1, name: "drama".into() }, Category { id: 2, name: "scifi".into() }];
    log.step("insert the categories drama and scifi", Category::repo(db).insert_many(&categories)).await?;
    let authors = [
        Author { id: 1, name: "Peter Stanford".into(), books: vec![] },
        Author { id: 2, name: "Georg Peterson".into(), books: vec![] },
    ];
    log.step("insert 2 authors, without books yet", Author::repo(db).insert_many(&authors)).await?;
    let books = [
        Book { id: 1, title: "A tale of two people".into(), categories: vec![1], authors: vec![] },
        Book { id: 2, title: "A tale of two space ships".into(), categories: vec![2], authors: vec![] },
    ];
    log.step("insert 2 books with their categories, without authors yet", Book::repo(db).insert_many(&books)).await?;
    for (book, author) in [(1, 1), (1, 2), (2, 1)] {
        let o = log
            .step(
                &format!("link book {book} and author {author} (both sides)"),
                Book::rels().authors.link(db, &book, &author),
            )
            .await?;
        log.show(format!("changed: {}, transactional: {}", o.changed, o.transactional));
    }

    // Example 1: fetch books by a specific author.
    let peter = log
        .step(
            "Example 1: find the author Peter Stanford",
            Author::repo(db).find(Author::fields().name.eq("Peter Stanford")).to_vec(),
        )
        .await?;
    if peter.is_empty() {
        return Err(not_found("authors", "{name: \"Peter Stanford\"}"));
    }
    let titles = log
        .step("           and load his books ($in on books)", Author::rels().books.load::<Title>(db, &peter))
        .await?;
    let books_of_author: Vec<String> = titles.of(0).map(|b| b.title.clone()).collect();
    log.show(format!("{books_of_author:?}"));

    // Example 2: fetch authors by a specific book.
    let ships = log
        .step(
            "Example 2: find the book A tale of two space ships",
            Book::repo(db).find(Book::fields().title.eq("A tale of two space ships")).to_vec(),
        )
        .await?;
    if ships.is_empty() {
        return Err(not_found("books", "{title: \"A tale of two space ships\"}"));
    }
    let names = log
        .step("           and load its authors ($in on authors)", Book::rels().authors.load::<AuthorName>(db, &ships))
        .await?;
    let authors_of_book: Vec<String> = names.of(0).map(|a| a.name.clone()).collect();
    log.show(format!("{authors_of_book:?}"));

    // Example 3: fetch categories for a specific book (the same book).
    let cats = log
        .step(
            "Example 3: load the categories of that book ($in on categories)",
            Book::rels().categories.load::<CategoryName>(db, &ships),
        )
        .await?;
    let categories_of_book: Vec<String> = cats.of(0).map(|c| c.name.clone()).collect();
    log.show(format!("{categories_of_book:?}"));

    // Example 4: fetch books for a specific category, through the books' multikey index.
    let drama = log
        .step("Example 4: find the category drama", Category::repo(db).find(Category::fields().name.eq("drama")).one())
        .await?
        .ok_or_else(|| not_found("categories", "{name: \"drama\"}"))?;
    let in_drama = log
        .step(
            "           and the books referring to it ({categories: id})",
            Book::rels().categories.referrers(db, &drama.id).to_vec(),
        )
        .await?;
    let books_of_category: Vec<String> = in_drama.into_iter().map(|b| b.title).collect();
    log.show(format!("{books_of_category:?}"));

    Ok(Answers { books_of_author, authors_of_book, categories_of_book, books_of_category })
}

#[tokio::main]
async fn main() {
    common::finish("library", run().await);
}

async fn run() -> docrel::Result<()> {
    let (db, log) = common::open("library").await?;
    scenario(&db, &log).await?;
    common::done(&db);
    Ok(())
}
