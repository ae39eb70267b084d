//! One number per threshold: the derive writes each array's effective
//! rule-3 threshold (its `warn_above`, or the default) into the schema,
//! its defaults are the runtime's, and the doctor judges the data by the
//! number in the schema, so `warn_above` holds for the compiler's advice
//! and for the doctor alike.

use docrel::admin::doctor::{run, Options, Severity, EMBED_WARN_ABOVE, REFERENCE_WARN_ABOVE, TWO_WAY_WARN_FROM};
use docrel::bson::{doc, oid::ObjectId, Bson, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "shelves")]
struct Shelf {
    #[serde(rename = "_id")]
    id: ObjectId,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "journals")]
struct Journal {
    #[serde(rename = "_id")]
    id: ObjectId,
    /// The user's line: 50 (the bound above it is acknowledged).
    #[embed(max = 100, warn_above = 50, allow_large)]
    notes: Vec<String>,
    /// The default line.
    #[embed(max = 100)]
    drafts: Vec<String>,
    /// The user's line for references: 20.
    #[reference(many, to = Shelf, max = 100, warn_above = 20, allow_large)]
    shelves: Vec<ObjectId>,
    /// The default line for references.
    #[reference(many, to = Shelf, max = 100)]
    archive: Vec<ObjectId>,
}

/// A two-way N:M whose sides sit on either side of the balance threshold.
#[derive(Document, Serialize, Deserialize)]
#[document(collection = "authors")]
struct Author {
    #[serde(rename = "_id")]
    id: i32,
    #[reference(many, to = Book, inverse = authors, max = 1000, allow_two_way)]
    books: Vec<i32>,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "books")]
struct Book {
    #[serde(rename = "_id")]
    id: i32,
    #[reference(many, to = Author, inverse = books, max = 999)]
    authors: Vec<i32>,
}

fn threshold(schema: &docrel::schema::Schema, field: &str) -> Option<u32> {
    schema.relation(field).expect("a relation").warn_above
}

#[test]
fn the_schema_carries_each_arrays_threshold_and_the_defaults_are_the_runtimes() {
    let journal = Journal::schema();
    assert_eq!(threshold(journal, "notes"), Some(50));
    assert_eq!(threshold(journal, "drafts"), Some(EMBED_WARN_ABOVE), "the derive's default is the runtime's");
    assert_eq!(threshold(journal, "shelves"), Some(20));
    assert_eq!(threshold(journal, "archive"), Some(REFERENCE_WARN_ABOVE), "the derive's default is the runtime's");
    // The derive's balance advice starts at the runtime's number: a side of
    // up to 1,000 ids is advised against, one of up to 999 is not.
    assert_eq!(TWO_WAY_WARN_FROM, 1000);
    let balance = |s: &docrel::schema::Schema| s.advice.iter().any(|a| a.rule == "docrel_relationship_balance");
    assert!(balance(Author::schema()), "max = TWO_WAY_WARN_FROM: advised (and acknowledged)");
    assert!(!balance(Book::schema()), "max = TWO_WAY_WARN_FROM - 1: not advised");
    let _ = (Journal::fields(), Shelf::fields(), Author::fields(), Book::fields());
}

fn strings(n: usize) -> Vec<Bson> {
    (0..n).map(|i| Bson::String(format!("line {i}"))).collect()
}

#[tokio::test]
async fn the_doctor_judges_each_array_by_its_own_warn_above() {
    let t = TestDb::new("doctor_thresholds").await.expect("server");
    let shelves: Vec<ObjectId> = (0..30).map(|_| ObjectId::new()).collect();
    let docs: Vec<BsonDoc> = shelves.iter().map(|id| doc! {"_id": id}).collect();
    t.db.collection::<BsonDoc>("shelves").insert_many(docs).await.expect("raw insert");
    // 60 notes and 60 drafts, 30 shelves in each reference array: past the
    // user's 50 and 20, under the defaults' 200 and 5000.
    let journal = doc! {
        "_id": ObjectId::new(), "notes": strings(60), "drafts": strings(60),
        "shelves": shelves.clone(), "archive": shelves,
    };
    t.db.collection::<BsonDoc>("journals").insert_one(journal).await.expect("raw insert");

    let report = run(&t.db, &Options::default()).await.expect("the doctor runs");
    let rule_3: Vec<(&str, &str)> =
        report.findings.iter().filter(|f| f.rule == "rule 3").map(|f| (f.field.as_str(), f.figure.as_str())).collect();
    assert_eq!(rule_3.len(), 2, "notes and shelves, at the user's numbers: {rule_3:#?}");
    let (_, notes) = rule_3.iter().find(|(f, _)| *f == "journals.notes").expect("notes past 50");
    assert!(notes.starts_with("max 60 elements"), "{notes}");
    assert!(notes.contains("a couple of hundred at most (50), acknowledged with `allow_large`;"), "{notes}");
    let (_, shelves) = rule_3.iter().find(|(f, _)| *f == "journals.shelves").expect("shelves past 20");
    assert!(shelves.contains("a few thousand at most (20), acknowledged"), "{shelves}");
    assert!(report.findings.iter().filter(|f| f.rule == "rule 3").all(|f| f.severity == Severity::Warning));

    let measured = |field: &str| report.arrays.iter().find(|a| a.field == field).expect("measured").threshold;
    assert_eq!(measured("notes"), Some(50));
    assert_eq!(measured("drafts"), Some(u64::from(EMBED_WARN_ABOVE)));
    assert_eq!(measured("archive"), Some(u64::from(REFERENCE_WARN_ABOVE)));
    let text = report.to_text();
    assert!(text.contains("bound   100  rule 3    50"), "{text}");
}
