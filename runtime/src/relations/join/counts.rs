//! Counts per id through a reference field (Mongoose's virtual `count`):
//! how many children each parent has, how many documents refer to each
//! target, in one aggregate per chunk of ids whose reply is one small
//! document per id that has any; the counted documents never travel.

use super::related::Related;
use crate::error::Result;
use crate::id::DocId;
use crate::schema::document::{Relation, RelationKind};
use crate::store::options::ONE_BATCH;
use crate::store::page::pages;
use crate::store::query::Filter;
use crate::store::session::collect_aggregate;
use mongodb::bson::{doc, Bson, Document as BsonDoc, RawBsonRef, RawDocumentBuf};
use std::collections::HashMap;

/// What a count groups by: the field's value itself (a parent reference),
/// or each distinct id among the ones asked that the field holds (a
/// reference that may be an array, so a document listing a target twice
/// counts once).
pub(crate) enum Held {
    Value,
    Ids,
}

impl<I: DocId> Related<'_, I> {
    /// For each id asked, how many documents of `collection` match the
    /// filter and refer to it through the relation's field: every id asked
    /// is a key (0 when none refers to it). The order, limit and skip set
    /// on the read do not apply. One `aggregate` per `chunk` of distinct ids;
    /// none when no id is asked.
    pub(crate) async fn count(mut self, collection: &'static str, held: Held, chunk: usize) -> Result<HashMap<I, u64>> {
        let mut counts: HashMap<I, u64> = HashMap::with_capacity(self.ids.len());
        let mut distinct = Vec::new();
        for id in &self.ids {
            if counts.insert(id.clone(), 0).is_none() {
                distinct.push(id.to_bson());
            }
        }
        for page in pages(&distinct, chunk.max(1)) {
            let stages = stages(self.rel, &held, self.read.within(Filter::new(match_ids(self.rel, page))), page)?;
            let (on, stages) = crate::store::moving::aggregate(self.db, collection, stages).await?;
            let coll = self.db.collection::<RawDocumentBuf>(&on);
            let aggregate = coll.aggregate(stages).batch_size(ONE_BATCH).with_type::<RawDocumentBuf>();
            collect_aggregate(aggregate, self.session.as_deref_mut(), collection, |raw| {
                let id = raw.get("_id").ok().flatten().and_then(I::from_raw);
                if let (Some(id), Some(n)) = (id, raw.get("n").ok().flatten().and_then(as_count)) {
                    if let Some(slot) = counts.get_mut(&id) {
                        *slot += n;
                    }
                }
                Ok(())
            })
            .await?;
        }
        Ok(counts)
    }
}

/// The documents whose field holds one of `ids` (through the field's index).
fn match_ids(rel: &Relation, ids: &[Bson]) -> BsonDoc {
    doc! { rel.id_path(): {"$in": ids} }
}

/// The stages of a count: `$match` (the ids and the caller's filter), then
/// `$group` by the held id with `$sum: 1`.
fn stages(rel: &Relation, held: &Held, filter: Filter, ids: &[Bson]) -> Result<Vec<BsonDoc>> {
    let mut stages = vec![doc! {"$match": filter.into_document()?}];
    let by = match held {
        Held::Value => Bson::String(format!("${}", rel.field)),
        Held::Ids => {
            // The ids the field holds, as an array whatever its shape; the
            // elements' key through `$map` (a path through an array inside
            // an expression is not resolved by every server), then only the
            // ones asked, each once. `$literal`: an id such as "$x" is a value.
            let field = format!("${}", rel.field);
            let held = match rel.kind {
                RelationKind::RefMany { key: Some(key), .. } => {
                    Bson::Document(doc! {"$map": {"input": &field, "as": "e", "in": format!("$$e.{key}")}})
                }
                RelationKind::RefMany { key: None, .. } => Bson::String(field),
                _ => Bson::Array(vec![Bson::String(field)]),
            };
            stages.push(doc! {"$project": {"_id": 0, "t": {"$setIntersection": [held, {"$literal": ids}]}}});
            stages.push(doc! {"$unwind": "$t"});
            Bson::String("$t".into())
        }
    };
    stages.push(doc! {"$group": {"_id": by, "n": {"$sum": 1}}});
    Ok(stages)
}

/// A `$sum` as a count (an int32, or an int64 past its range).
fn as_count(raw: RawBsonRef<'_>) -> Option<u64> {
    match raw {
        RawBsonRef::Int32(n) => u64::try_from(n).ok(),
        RawBsonRef::Int64(n) => u64::try_from(n).ok(),
        RawBsonRef::Double(n) if n >= 0.0 => Some(n as u64),
        _ => None,
    }
}
