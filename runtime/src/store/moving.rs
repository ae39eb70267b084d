//! Reads of a collection a move between patterns fills, before the move's
//! reads are switched: the collection then holds only what was copied or
//! mirrored so far, and the parents' array holds every element, so a read
//! runs on the parents, their elements made into the new documents on the
//! way (`$unwind`, as the copy makes them). The filter, order, skip, limit
//! and projection apply to those documents unchanged; the conditions that
//! name a parent or an element's key are also given to the parents'
//! `$match`, so a read of one parent's children reads one parent.

use super::unbuilt::Unbuilt;
use crate::error::{Error, Result};
use crate::schema::graph_moves::ReadThrough;
use crate::schema::stored::OldArray;
use crate::store::session::{collect, collect_aggregate};
use mongodb::bson::{doc, Bson, Document as BsonDoc, RawDocument, RawDocumentBuf};
use mongodb::options::FindOptions;
use mongodb::{ClientSession, Collection, Database};

/// How `collection` of `db` is read now: `None` as stored, or through the
/// old shape of the move that fills it. A program declaring the move holds
/// the database's stored schema first (it learns where the move stands);
/// any other follows the move its graph knows, at no cost.
pub(crate) async fn source(db: &Database, collection: &str) -> Result<Option<ReadThrough>> {
    Ok(match reading(db, collection).await? {
        Reading::Through(through) => Some(*through),
        Reading::Stored | Reading::Unbuilt(_) => None,
    })
}

/// How a find of a collection runs now.
enum Reading {
    /// As stored.
    Stored,
    /// Through the old shape of the move that fills it.
    Through(Box<ReadThrough>),
    /// As stored, but for its fields not built yet: sides of arrays made
    /// two-way, read from the arrays, and one-to-one documents moving back
    /// into it, read from their collection ([`super::unbuilt`]).
    Unbuilt(Vec<Unbuilt>),
}

/// How a find of `collection` of `db` runs now: [`source`], and the sides
/// not built yet, from one look at the graph.
async fn reading(db: &Database, collection: &str) -> Result<Reading> {
    // A program reading the collection its declared move fills (the
    // parents, for a move back) learns first where the move stands.
    let filled = |m: &crate::schema::moves::Move| if m.kind.is_back() { m.from_collection } else { m.to_collection };
    if crate::schema::moves::declared().any(|m| filled(m) == collection) {
        crate::schema::stored::hold(db).await?;
    }
    let graph = crate::schema::graph::of(db);
    if let Some(why) = graph.unmade_pages(collection) {
        return Err(unmade(why));
    }
    Ok(match graph.read_through(collection) {
        Some(through) => Reading::Through(Box::new(through)),
        None => {
            let mut sides: Vec<Unbuilt> = graph
                .read_from_arrays(collection)
                .into_iter()
                .map(|b| Unbuilt { side: b.clone(), one: false })
                .collect();
            sides.extend(graph.read_embedded(collection).into_iter().map(|side| Unbuilt { side, one: true }));
            if sides.is_empty() {
                Reading::Stored
            } else {
                Reading::Unbuilt(sides)
            }
        }
    })
}

/// The refusal of a read of pages a move into buckets has not made yet.
pub(crate) fn unmade(why: String) -> Error {
    Error::Invalid { what: crate::error::Misuse::Schema, message: format!("{why}; nothing was read") }
}

/// The database of `coll`.
pub(crate) fn database_of<T: Send + Sync>(coll: &Collection<T>) -> Database {
    coll.client().database(&coll.namespace().db)
}

/// Runs a find of `coll` and reads every result through `each`: the find
/// itself, or the same read through the old shape of a move.
pub(crate) async fn collect_find<U>(
    coll: &Collection<RawDocumentBuf>,
    filter: BsonDoc,
    options: FindOptions,
    session: Option<&mut ClientSession>,
    each: impl FnMut(&RawDocument) -> Result<U>,
) -> Result<Vec<U>> {
    let db = database_of(coll);
    match reading(&db, coll.name()).await? {
        Reading::Stored => collect(coll.find(filter).with_options(options), session, coll.name(), each).await,
        Reading::Unbuilt(sides) => {
            let aggregate = coll.aggregate(super::unbuilt::find(&sides, filter, &options));
            collect_aggregate(batched(aggregate, &options), session, coll.name(), each).await
        }
        Reading::Through(through) => {
            let source = db.collection::<RawDocumentBuf>(through.runs_on(&filter));
            collect_aggregate(through.on_parents(&source, filter, &options), session, coll.name(), each).await
        }
    }
}

/// `aggregate` with the find's batch size.
fn batched<'c>(
    aggregate: mongodb::action::Aggregate<'c, mongodb::action::ImplicitSession, BsonDoc>,
    options: &FindOptions,
) -> mongodb::action::Aggregate<'c, mongodb::action::ImplicitSession, RawDocumentBuf> {
    let aggregate = aggregate.with_type::<RawDocumentBuf>();
    match options.batch_size {
        Some(b) => aggregate.batch_size(b),
        None => aggregate,
    }
}

/// Opens a cursor of a find of `coll`, through the old shape of a move
/// when one says so.
pub(crate) async fn cursor(
    coll: &Collection<RawDocumentBuf>,
    filter: BsonDoc,
    options: FindOptions,
) -> Result<mongodb::Cursor<RawDocumentBuf>> {
    let db = database_of(coll);
    match reading(&db, coll.name()).await? {
        Reading::Stored => {
            coll.find(filter).with_options(options).await.map_err(|e| Error::driver("find", coll.name(), e))
        }
        Reading::Unbuilt(sides) => {
            let aggregate = batched(coll.aggregate(super::unbuilt::find(&sides, filter, &options)), &options);
            aggregate.await.map_err(|e| Error::driver("aggregate", coll.name(), e))
        }
        Reading::Through(through) => {
            let source = db.collection::<RawDocumentBuf>(through.runs_on(&filter));
            let aggregate = through.on_parents(&source, filter, &options);
            aggregate.await.map_err(|e| Error::driver("aggregate", coll.name(), e))
        }
    }
}

/// How many documents of `coll` match `filter`, counted through the old
/// shape of a move when one says so.
pub(crate) async fn count(
    coll: &Collection<RawDocumentBuf>,
    filter: BsonDoc,
    session: Option<&mut ClientSession>,
) -> Result<u64> {
    let db = database_of(coll);
    let read = reading(&db, coll.name()).await?;
    let (source, stages) = match read {
        Reading::Through(through) => {
            let mut stages = through.find(filter.clone(), &FindOptions::default());
            stages.push(doc! {"$count": "n"});
            (db.collection::<RawDocumentBuf>(through.runs_on(&filter)), stages)
        }
        Reading::Unbuilt(sides) if super::unbuilt::names_any(&sides, &filter) => {
            (coll.clone(), super::unbuilt::count(&sides, filter))
        }
        Reading::Stored | Reading::Unbuilt(_) => {
            let counted = crate::store::session::in_session!(coll.count_documents(filter), session);
            return counted.map_err(|e| Error::driver("count", coll.name(), e));
        }
    };
    let aggregate = source.aggregate(stages).with_type::<RawDocumentBuf>();
    let counts = collect_aggregate(aggregate, session, coll.name(), |raw| {
        Ok(raw.get("n").ok().flatten().and_then(|n| n.as_i64().or(n.as_i32().map(i64::from))).unwrap_or(0))
    })
    .await?;
    Ok(counts.first().map_or(0, |n| u64::try_from(*n).unwrap_or(0)))
}

/// The stages of an aggregate of `collection` and the collection they
/// run on: as given, or after the stages making its documents from the
/// parents of a move.
pub(crate) async fn aggregate(db: &Database, collection: &str, stages: Vec<BsonDoc>) -> Result<(String, Vec<BsonDoc>)> {
    Ok(match source(db, collection).await? {
        None => (collection.to_owned(), stages),
        Some(through) => {
            let first = stages.first().and_then(|s| s.get_document("$match").ok()).cloned().unwrap_or_default();
            (through.runs_on(&first).to_owned(), through.aggregate(stages))
        }
    })
}

/// A `$lookup` of `spec`, reading its `from` through the old shape of a
/// move when one says so.
pub(crate) async fn lookup(db: &Database, spec: BsonDoc) -> Result<BsonDoc> {
    let from = spec.get_str("from").unwrap_or_default().to_owned();
    Ok(match source(db, &from).await? {
        None => spec,
        Some(through) => through.lookup(spec),
    })
}

impl ReadThrough {
    /// The aggregate on `parents` of a find of `filter` with `options`.
    fn on_parents<'c>(
        &self,
        parents: &'c Collection<RawDocumentBuf>,
        filter: BsonDoc,
        options: &FindOptions,
    ) -> mongodb::action::Aggregate<'c, mongodb::action::ImplicitSession, RawDocumentBuf> {
        batched(parents.aggregate(self.find(filter, options)), options)
    }

    /// The pipeline, on the parents, of a find of `filter` with `options`.
    fn find(&self, filter: BsonDoc, options: &FindOptions) -> Vec<BsonDoc> {
        let mut out = self.made(&filter);
        if !filter.is_empty() {
            out.push(doc! {"$match": filter});
        }
        if let Some(s) = &options.sort {
            out.push(doc! {"$sort": s.clone()});
        }
        if let Some(k) = options.skip.filter(|&k| k > 0) {
            out.push(doc! {"$skip": i64::try_from(k).unwrap_or(i64::MAX)});
        }
        if let Some(l) = options.limit.filter(|&l| l != 0) {
            out.push(doc! {"$limit": l.abs()});
        }
        if let Some(p) = options.projection.as_ref().filter(|p| !p.is_empty()) {
            out.push(doc! {"$project": p.clone()});
        }
        out
    }

    /// The stages making the new documents a read matching `filter` may
    /// meet, before its own.
    fn made(&self, filter: &BsonDoc) -> Vec<BsonDoc> {
        match self.old {
            OldArray::Elements | OldArray::One => {
                let mut made = vec![doc! {"$match": self.parents(filter)}];
                made.extend(self.spec.unwound(&self.field, self.old));
                made
            }
            OldArray::Ids => self.linked(filter),
        }
    }

    /// `stages` of an aggregate of the new documents, run on the parents.
    fn aggregate(&self, stages: Vec<BsonDoc>) -> Vec<BsonDoc> {
        let first = stages.first().and_then(|s| s.get_document("$match").ok()).cloned().unwrap_or_default();
        let mut out = self.made(&first);
        out.extend(stages);
        out
    }

    /// A `$lookup` from the new documents, reading the parents instead.
    fn lookup(&self, spec: BsonDoc) -> BsonDoc {
        match self.old {
            OldArray::Elements | OldArray::One => self.lookup_elements(spec),
            OldArray::Ids => self.lookup_linked(spec),
        }
    }

    /// [`ReadThrough::lookup`] of a move of elements.
    fn lookup_elements(&self, mut spec: BsonDoc) -> BsonDoc {
        let inner = match spec.remove("pipeline") {
            Some(Bson::Array(stages)) => stages,
            _ => Vec::new(),
        };
        let foreign = spec.get_str("foreignField").ok().map(str::to_owned);
        spec.insert("from", self.spec.from.collection.clone());
        let mut pipeline: Vec<Bson> = Vec::new();
        match foreign {
            // The children of the local ids: the parents of those ids.
            Some(f) if f == self.spec.parent_field => {
                spec.insert("foreignField", "_id");
            }
            // Another field of the new documents: matched once they are made.
            Some(f) => {
                spec.remove("foreignField");
                let local = spec.remove("localField").and_then(|l| l.as_str().map(str::to_owned)).unwrap_or_default();
                let mut vars = spec.get_document("let").cloned().unwrap_or_default();
                vars.insert("docrel_local", format!("${local}"));
                spec.insert("let", vars);
                let many = doc! {"$cond": [{"$isArray": "$$docrel_local"}, "$$docrel_local", ["$$docrel_local"]]};
                pipeline.extend(self.spec.unwound(&self.field, self.old).map(Bson::Document));
                pipeline.push(Bson::Document(doc! {"$match": {"$expr": {"$in": [format!("${f}"), many]}}}));
                pipeline.extend(inner);
                spec.insert("pipeline", pipeline);
                return spec;
            }
            None => {}
        }
        pipeline.extend(self.spec.unwound(&self.field, self.old).map(Bson::Document));
        pipeline.extend(inner);
        spec.insert("pipeline", pipeline);
        spec
    }

    /// The parents' `$match` of a read of the new documents matching
    /// `filter`: the parents holding an element, and, where the filter
    /// names the parent or an element's key by equality or `$in`, those
    /// (one embedded document's key is its parent's `_id`). It only
    /// narrows what the read's own `$match` would drop anyway.
    pub(super) fn parents(&self, filter: &BsonDoc) -> BsonDoc {
        let mut out = self.old.holding(&self.field);
        let mut conditions: Vec<(&String, &Bson)> = filter.iter().collect();
        if let Ok(all) = filter.get_array("$and") {
            conditions.extend(all.iter().filter_map(Bson::as_document).flat_map(|d| d.iter()));
        }
        for (name, value) in conditions {
            let Some(value) = pinned(value) else { continue };
            if *name == self.spec.parent_field || (*name == "_id" && self.old == OldArray::One) {
                out.insert("_id", value);
            } else if *name == "_id" {
                out.insert(format!("{}.{}", self.field, self.spec.key), value);
            }
        }
        out
    }
}

/// A condition that pins a field to values (`x`, `{$eq: x}`, `{$in: [..]}`),
/// as a condition on another field; `None` for any other.
pub(super) fn pinned(value: &Bson) -> Option<Bson> {
    match value {
        Bson::Document(d) if d.len() == 1 => match d.iter().next() {
            Some((op, x)) if op == "$eq" && !matches!(x, Bson::Document(_) | Bson::Array(_)) => Some(x.clone()),
            Some((op, Bson::Array(xs))) if op == "$in" => Some(Bson::Document(doc! {"$in": xs.clone()})),
            _ => None,
        },
        Bson::Document(_) | Bson::Array(_) | Bson::RegularExpression(_) => None,
        x => Some(x.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::moves::MoveKind;
    use crate::schema::stored::moves::{MoveEnd, StoredMove};

    fn through() -> ReadThrough {
        let end = |c: &str, t: &str| MoveEnd { collection: c.into(), rust_type: t.into(), rust_field: None };
        let spec = StoredMove {
            id: "m".into(),
            kind: MoveKind::EmbedToCollection,
            from: end("posts", "Post"),
            to: end("comments", "Comment"),
            parent_field: "post".into(),
            key: "_id".into(),
            buckets: None,
        };
        ReadThrough { spec, field: "comments".into(), old: OldArray::Elements }
    }

    #[test]
    fn a_parent_or_a_key_named_by_equality_or_in_narrows_the_parents() {
        let t = through();
        let exists = doc! {"$exists": true};
        assert_eq!(t.parents(&doc! {"post": 7}), doc! {"comments.0": exists.clone(), "_id": 7});
        assert_eq!(
            t.parents(&doc! {"$and": [{"post": {"$in": [1, 2]}}, {"text": "x"}]}),
            doc! {"comments.0": exists.clone(), "_id": {"$in": [1, 2]}}
        );
        assert_eq!(t.parents(&doc! {"_id": {"$eq": 3}}), doc! {"comments.0": exists.clone(), "comments._id": 3});
        // A range, a regex or an operator document is left to the read's own match.
        assert_eq!(t.parents(&doc! {"post": {"$gt": 1}, "_id": {"$eq": {"a": 1}}}), doc! {"comments.0": exists});
    }

    #[test]
    fn a_lookup_by_the_parent_reference_reads_the_parents_by_id() {
        let spec = doc! {"from": "comments", "localField": "_id", "foreignField": "post", "pipeline": [{"$limit": 2}], "as": "c"};
        let out = through().lookup(spec);
        assert_eq!(out.get_str("from").unwrap(), "posts");
        assert_eq!(out.get_str("foreignField").unwrap(), "_id");
        let stages = out.get_array("pipeline").unwrap();
        assert_eq!(stages.len(), 4, "unwound, then the lookup's own stages: {stages:?}");
        assert_eq!(stages[3], Bson::Document(doc! {"$limit": 2}));
    }

    #[test]
    fn a_lookup_by_another_field_matches_it_once_the_documents_are_made() {
        let spec = doc! {"from": "comments", "localField": "ids", "foreignField": "_id", "as": "c"};
        let out = through().lookup(spec);
        assert!(out.get("localField").is_none() && out.get("foreignField").is_none());
        assert_eq!(out.get_document("let").unwrap(), &doc! {"docrel_local": "$ids"});
        assert_eq!(out.get_array("pipeline").unwrap().len(), 4);
    }
}
