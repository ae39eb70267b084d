//! What an N:M array changing direction would carry, counted on the live
//! data for `docrel schema diff`: for an array made two-way, the links the
//! change builds into the other side and the documents that would pass its
//! bound; for one made one-way, the ids the retired side holds and their
//! bytes. One aggregate each, on the primary (the move plan's `first`).

use crate::admin::moves::first;
use crate::error::{Error, Result};
use crate::schema::stored::{InverseChange, StoredKind, StoredType};
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::Database;

/// A count, whatever numeric type the server answered with.
fn number(row: &BsonDoc, key: &str) -> u64 {
    crate::admin::doctor::as_u64(row.get(key)).unwrap_or(0)
}

/// The bound `program` declares on the other side of `c`.
fn other_bound(program: &[StoredType], c: &InverseChange) -> Option<u32> {
    let t = program.iter().find(|t| t.collection == c.target)?;
    match t.relations.iter().find(|r| r.field == c.inverse)?.kind {
        StoredKind::RefMany { max, .. } => max,
        _ => None,
    }
}

/// The build of `c`'s other side, in words: how many documents hold how
/// many links, into how many documents, and how many would pass the other
/// side's bound (their build would be refused).
pub(super) async fn built(db: &Database, program: &[StoredType], c: &InverseChange) -> Result<String> {
    let array = format!("${}", c.field);
    let max = other_bound(program, c);
    let over =
        max.map_or(Bson::Int32(0), |m| Bson::Document(doc! {"$sum": {"$cond": [{"$gt": ["$n", i64::from(m)]}, 1, 0]}}));
    let pipeline = vec![
        doc! {"$match": {format!("{}.0", c.field): {"$exists": true}}},
        doc! {"$project": {"_id": 1, &c.field: 1}},
        doc! {"$unwind": &array},
        doc! {"$group": {"_id": &array, "n": {"$sum": 1}}},
        doc! {"$group": {
            "_id": Bson::Null,
            "targets": {"$sum": 1},
            "links": {"$sum": "$n"},
            "most": {"$max": "$n"},
            "over": over,
        }},
    ];
    let row = first(db, &c.collection, pipeline).await?.unwrap_or_default();
    let holders = db
        .collection::<BsonDoc>(&c.collection)
        .count_documents(doc! {format!("{}.0", c.field): {"$exists": true}})
        .await
        .map_err(|e| Error::driver("count", c.collection.clone(), e))?;
    let mut out = format!(
        "`{}.{}`: {holders} document(s) hold {} link(s) into {} `{}` document(s), at most {} into one",
        c.target,
        c.inverse,
        number(&row, "links"),
        number(&row, "targets"),
        c.target,
        number(&row, "most")
    );
    if let Some(m) = max {
        let over = number(&row, "over");
        out.push_str(&format!(
            "; {over} would pass its bound of {m}{}",
            if over > 0 { " (their links cannot be written: lower them first, or raise the bound)" } else { "" }
        ));
    }
    Ok(out)
}

/// The side `c` retires, in words: the documents holding it, its ids and
/// their bytes (removed with `--drop-old`).
pub(super) async fn retired(db: &Database, c: &InverseChange) -> Result<String> {
    let side = format!("${}", c.inverse);
    let pipeline = vec![
        doc! {"$match": {format!("{}.0", c.inverse): {"$exists": true}}},
        doc! {"$group": {
            "_id": Bson::Null,
            "documents": {"$sum": 1},
            "ids": {"$sum": {"$size": &side}},
            "bytes": {"$sum": {"$bsonSize": {"a": &side}}},
        }},
    ];
    let row = first(db, &c.target, pipeline).await?.unwrap_or_default();
    Ok(format!(
        "`{}.{}`: {} document(s) hold {} id(s), {} byte(s), removed by `docrel schema retire --drop-old`",
        c.target,
        c.inverse,
        number(&row, "documents"),
        number(&row, "ids"),
        number(&row, "bytes")
    ))
}
