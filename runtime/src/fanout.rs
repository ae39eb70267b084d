//! Fan-out updaters: every change of a source document through docrel
//! rewrites the denormalized copies of the fields it touched, one
//! `updateMany` per target path, guarded by a per-source version so that
//! concurrent changes, applied in any order, converge on the source's final
//! value and never regress.
//!
//! Versions are docrel's bookkeeping, kept beside the data in one field so
//! the shapes of the reference texts stay as they are: a source document
//! holds `_docrel.v` (incremented by each docrel write of a copied field),
//! and a document holding copies records the version it copied in
//! `_docrel.copies.<via>` (top-level copies) or
//! `_docrel.copies.<array>.<element id>` (copies inside reference arrays).

use crate::document::RelationKind;
use crate::error::{show_id, Error, Result};
use crate::registry::schemas;
use bson::{doc, Bson, Document as BsonDoc, RawDocumentBuf};
use mongodb::Database;
use std::collections::HashMap;
use std::sync::OnceLock;

pub use crate::repair::{repair, verify, Checkpoint, Progress, Repair, RepairReport};
pub use crate::sync::{Applied, SyncWorker, SYNC_COLLECTION};

/// Where a source document keeps its version.
pub const VERSION_PATH: &str = "_docrel.v";
const COPIES_PATH: &str = "_docrel.copies";

/// One target path of a source: a collection and the place its copies sit,
/// with every copied field that travels in the same update.
#[derive(Debug, Clone)]
pub struct Target {
    /// The collection holding the copies.
    pub collection: &'static str,
    /// Where the copies sit.
    pub shape: Shape,
    /// `(copy field, source field)` pairs.
    pub fields: Vec<(&'static str, &'static str)>,
}

/// Where copies sit in a target document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Top-level fields, next to the reference `via` that holds the source id.
    Top {
        /// The stored name of the reference.
        via: &'static str,
    },
    /// Fields of the elements of a reference array whose `key` holds the source id.
    Array {
        /// The array.
        array: &'static str,
        /// The id field of each element.
        key: &'static str,
    },
}

impl Target {
    /// The path matching target documents that hold a copy of the source.
    pub fn id_path(&self) -> String {
        match self.shape {
            Shape::Top { via } => via.to_owned(),
            Shape::Array { array, key } => format!("{array}.{key}"),
        }
    }

    fn version_path(&self, id: &Bson) -> String {
        match self.shape {
            Shape::Top { via } => format!("{COPIES_PATH}.{via}"),
            Shape::Array { array, .. } => format!("{COPIES_PATH}.{array}.{}", id_key(id)),
        }
    }

    /// The source fields this target copies.
    pub fn source_fields(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.fields.iter().map(|(_, s)| *s)
    }

    /// The update that writes `values` (of the source `id`, at version `v`)
    /// into this target, only where the copy is stale: its recorded version
    /// is older, or it has none and some value differs. Idempotent.
    pub(crate) fn update(
        &self,
        id: &Bson,
        values: &BsonDoc,
        v: i64,
        by_value_only: bool,
    ) -> (BsonDoc, BsonDoc, Option<Vec<BsonDoc>>) {
        let version = self.version_path(id);
        let mut set = BsonDoc::new();
        let mut unset = BsonDoc::new();
        let mut differs = Vec::new();
        for (copy, source) in &self.fields {
            let path = match self.shape {
                Shape::Top { .. } => (*copy).to_owned(),
                Shape::Array { array, .. } => format!("{array}.$[e].{copy}"),
            };
            match lookup(values, source) {
                Some(value) => {
                    differs.push(doc! { *copy: {"$ne": value.clone()} });
                    set.insert(path, value.clone());
                }
                None => {
                    differs.push(doc! { *copy: {"$exists": true} });
                    unset.insert(path, "");
                }
            }
        }
        let stale_values = match self.shape {
            Shape::Top { .. } => doc! {"$or": differs},
            Shape::Array { array, key } => {
                doc! { array: {"$elemMatch": {key: id.clone(), "$or": differs}} }
            }
        };
        let filter = if by_value_only {
            // Repair: the source may have been written outside docrel (its
            // version unchanged), so value differences decide.
            doc! { "$and": [{ self.id_path(): id.clone() }, stale_values] }
        } else {
            doc! {
                self.id_path(): id.clone(),
                "$or": [
                    { version.clone(): {"$lt": v} },
                    { "$and": [{ version.clone(): {"$exists": false} }, stale_values] },
                ],
            }
        };
        set.insert(version, v);
        let mut update = doc! {"$set": set};
        if !unset.is_empty() {
            update.insert("$unset", unset);
        }
        let array_filters = match self.shape {
            Shape::Top { .. } => None,
            Shape::Array { key, .. } => Some(vec![doc! { format!("e.{key}"): id.clone() }]),
        };
        (filter, update, array_filters)
    }
}

/// The version a source document carries (0 when docrel never wrote it).
pub(crate) fn version_of(source: &BsonDoc) -> i64 {
    lookup(source, VERSION_PATH).and_then(|v| v.as_i64().or_else(|| v.as_i32().map(i64::from))).unwrap_or(0)
}

/// A field of a document, by dotted path.
pub(crate) fn lookup<'d>(doc: &'d BsonDoc, path: &str) -> Option<&'d Bson> {
    let mut current = doc;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        let value = current.get(part)?;
        if parts.peek().is_none() {
            return Some(value);
        }
        current = value.as_document()?;
    }
    None
}

/// A field name for an id: hex for ObjectIds, digits for numbers, and the
/// string itself when it is a safe field name (otherwise its bytes in hex).
fn id_key(id: &Bson) -> String {
    match id {
        Bson::ObjectId(o) => o.to_hex(),
        Bson::Int32(i) => i.to_string(),
        Bson::Int64(i) => i.to_string(),
        Bson::String(s) if !s.is_empty() && !s.contains(['.', '$']) => s.clone(),
        other => {
            let bytes = bson::to_vec(&doc! {"": other.clone()}).unwrap_or_default();
            format!("x{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>())
        }
    }
}

/// Every target path of `source` (a collection), from the link-time registry.
pub fn targets_of(source: &str) -> &'static [Target] {
    static ALL: OnceLock<HashMap<&'static str, Vec<Target>>> = OnceLock::new();
    let all = ALL.get_or_init(|| {
        let mut all: HashMap<&'static str, Vec<Target>> = HashMap::new();
        let mut add = |source: &'static str, collection: &'static str, shape: Shape, field, source_field| {
            let targets = all.entry(source).or_default();
            match targets.iter_mut().find(|t| t.collection == collection && t.shape == shape) {
                Some(t) => {
                    if !t.fields.contains(&(field, source_field)) {
                        t.fields.push((field, source_field));
                    }
                }
                None => targets.push(Target { collection, shape, fields: vec![(field, source_field)] }),
            }
        };
        for schema in schemas() {
            for copy in schema.copies {
                add(copy.source, schema.collection, Shape::Top { via: copy.via }, copy.field, copy.source_field);
            }
            for rel in schema.relations {
                if let RelationKind::RefMany { key: Some(key), .. } = rel.kind {
                    for copy in rel.copies {
                        add(
                            copy.source,
                            schema.collection,
                            Shape::Array { array: rel.field, key },
                            copy.field,
                            copy.source_field,
                        );
                    }
                }
            }
        }
        all
    });
    all.get(source).map(Vec::as_slice).unwrap_or(&[])
}

/// The source fields of `source` that some target copies.
pub(crate) fn copied_fields(source: &str) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = targets_of(source).iter().flat_map(Target::source_fields).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether anything is derived from documents of `source`: copies
/// elsewhere, or summaries in a parent's subset.
pub(crate) fn has_derived(source: &str) -> bool {
    !targets_of(source).is_empty() || !crate::subset::subsets_of(source).is_empty()
}

/// The fields of `source` that something is derived from; `None` when a
/// subset summarizes whole documents (every field matters). Computed once
/// per source: every write of a source type asks.
pub(crate) fn derived_fields(source: &str) -> Option<&'static [&'static str]> {
    type Known = std::sync::Mutex<HashMap<String, Option<&'static [&'static str]>>>;
    static ALL: OnceLock<Known> = OnceLock::new();
    let all = ALL.get_or_init(Default::default);
    if let Some(known) = all.lock().ok().and_then(|m| m.get(source).copied()) {
        return known;
    }
    let computed = (|| {
        let mut out = copied_fields(source);
        for subset in crate::subset::subsets_of(source) {
            out.extend(subset.fields()?);
        }
        out.sort_unstable();
        out.dedup();
        Some(&*Box::leak(out.into_boxed_slice()))
    })();
    if let Ok(mut m) = all.lock() {
        // One leaked slice per source type for the life of the program.
        m.entry(source.to_owned()).or_insert(computed);
    }
    computed
}

/// Whether an update writing `touched` paths changes a field something is
/// derived from (a copied field, or a field of a subset's summaries).
pub(crate) fn touches_copies(source: &str, touched: impl IntoIterator<Item = impl AsRef<str>>) -> bool {
    if !has_derived(source) {
        return false;
    }
    let Some(derived) = derived_fields(source) else { return true };
    let derived = derived.iter().copied();
    let derived: Vec<&str> = derived.collect();
    touched.into_iter().any(|t| {
        let t = t.as_ref();
        derived.iter().any(|c| overlaps(c, t))
    })
}

/// The projection that reads what is derived from a source, and its
/// version; `None` reads the whole document.
pub(crate) fn source_projection(source: &str) -> Option<BsonDoc> {
    let mut p: BsonDoc = derived_fields(source)?.iter().map(|f| ((*f).to_owned(), Bson::Int32(1))).collect();
    p.insert(VERSION_PATH, 1);
    Some(p)
}

/// What a fan-out wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FanOutReport {
    /// `(target collection, copies rewritten)` per target path, in order.
    pub targets: Vec<(&'static str, u64)>,
}

/// Rewrites every copy of the source document `source_doc` (read back after
/// its write: `_id`, the copied fields and `_docrel.v`) whose fields are in
/// `touched` (all when `None`). One `updateMany` per target path.
pub(crate) async fn fan_out(
    db: &Database,
    source: &'static str,
    source_doc: &BsonDoc,
    touched: Option<&[String]>,
    mut session: Option<&mut mongodb::ClientSession>,
) -> Result<FanOutReport> {
    let id = source_doc.get("_id").cloned().unwrap_or(Bson::Null);
    let version = version_of(source_doc);
    let mut report = FanOutReport::default();
    for target in targets_of(source) {
        if let Some(touched) = touched {
            if !target.source_fields().any(|f| touches_copies_one(f, touched)) {
                continue;
            }
        }
        let n =
            apply_to(db, target, &id, source_doc, version, false, None, session.as_deref_mut()).await.map_err(|e| {
                Error::FanOut {
                    source_collection: source,
                    id: show_id(&id),
                    target: target.collection,
                    path: target.id_path(),
                    done: report.targets.iter().map(|(c, _)| *c).collect::<Vec<_>>().join(", "),
                    cause: Box::new(e),
                }
            })?;
        report.targets.push((target.collection, n));
    }
    crate::subset::after_change(db, source, source_doc, touched).await?;
    Ok(report)
}

fn touches_copies_one(field: &str, touched: &[String]) -> bool {
    touched.iter().any(|t| overlaps(field, t))
}

/// Whether `path` lies inside `parent` (`parts.name` inside `parts`), without allocating.
/// Whether writing one path changes the other: equal, or one inside the other.
pub(crate) fn overlaps(a: &str, b: &str) -> bool {
    a == b || is_within(a, b) || is_within(b, a)
}

fn is_within(path: &str, parent: &str) -> bool {
    path.len() > parent.len() && path.starts_with(parent) && path.as_bytes()[parent.len()] == b'.'
}

/// One target path's update for one source document, limited to the
/// target documents `only` when given (a repair rewrites the batch it
/// scanned, so its counts add up), inside `session`'s transaction if given.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn apply_to(
    db: &Database,
    target: &Target,
    id: &Bson,
    values: &BsonDoc,
    version: i64,
    by_value_only: bool,
    only: Option<&[Bson]>,
    session: Option<&mut mongodb::ClientSession>,
) -> Result<u64> {
    let (mut filter, update, array_filters) = target.update(id, values, version, by_value_only);
    if let Some(only) = only {
        filter = doc! {"$and": [filter, {"_id": {"$in": only}}]};
    }
    let coll = db.collection::<RawDocumentBuf>(target.collection);
    let mut action = coll.update_many(filter, update);
    if let Some(af) = array_filters {
        action = action.array_filters(af);
    }
    let r = match session {
        Some(s) => action.session(s).await,
        None => action.await,
    }
    .map_err(|e| Error::driver("update_many", target.collection, e))?;
    Ok(r.modified_count)
}

/// Fills the copies of documents about to be inserted from their sources:
/// one read per source collection for the whole batch. A reference to a
/// source that does not exist leaves the copy as given.
pub(crate) async fn fill(db: &Database, schema: &crate::document::Schema, docs: &mut [BsonDoc]) -> Result<()> {
    // source collection -> (distinct ids, fields to read)
    let mut needs: Vec<(&'static str, Vec<Bson>, Vec<&'static str>)> = Vec::new();
    let mut need = |source: &'static str, id: &Bson, field: &'static str| {
        let entry = match needs.iter_mut().position(|n| n.0 == source) {
            Some(i) => &mut needs[i],
            None => {
                needs.push((source, Vec::new(), Vec::new()));
                needs.last_mut().expect("just pushed")
            }
        };
        if !entry.1.contains(id) {
            entry.1.push(id.clone());
        }
        if !entry.2.contains(&field) {
            entry.2.push(field);
        }
    };
    for doc in docs.iter() {
        for copy in schema.copies {
            if let Some(id) = doc.get(copy.via).filter(|b| **b != Bson::Null) {
                need(copy.source, id, copy.source_field);
            }
        }
        for rel in schema.relations.iter().filter(|r| !r.copies.is_empty()) {
            let RelationKind::RefMany { key: Some(key), .. } = rel.kind else { continue };
            for element in doc.get_array(rel.field).into_iter().flatten().filter_map(Bson::as_document) {
                if let Some(id) = element.get(key) {
                    for copy in rel.copies {
                        need(copy.source, id, copy.source_field);
                    }
                }
            }
        }
    }
    let mut sources: HashMap<(&'static str, String), BsonDoc> = HashMap::new();
    for (source, ids, fields) in needs {
        let mut projection: BsonDoc = fields.iter().map(|f| ((*f).to_owned(), Bson::Int32(1))).collect();
        projection.insert(VERSION_PATH, 1);
        let coll = db.collection::<BsonDoc>(source);
        let mut cursor = coll
            .find(doc! {"_id": {"$in": ids}})
            .projection(projection)
            .batch_size(i32::MAX as u32)
            .await
            .map_err(|e| Error::driver("find", source, e))?;
        while cursor.advance().await.map_err(|e| Error::driver("find", source, e))? {
            let found: BsonDoc = cursor.deserialize_current().map_err(|e| Error::driver("find", source, e))?;
            let key = id_key(found.get("_id").unwrap_or(&Bson::Null));
            sources.insert((source, key), found);
        }
    }
    for doc in docs.iter_mut() {
        let mut versions = BsonDoc::new();
        for copy in schema.copies {
            let Some(id) = doc.get(copy.via).cloned() else { continue };
            let Some(src) = sources.get(&(copy.source, id_key(&id))) else { continue };
            if let Some(value) = lookup(src, copy.source_field) {
                doc.insert(copy.field, value.clone());
            }
            versions.insert(copy.via, version_of(src));
        }
        for rel in schema.relations.iter().filter(|r| !r.copies.is_empty()) {
            let RelationKind::RefMany { key: Some(key), .. } = rel.kind else { continue };
            let Ok(array) = doc.get_array_mut(rel.field) else { continue };
            let mut array_versions = BsonDoc::new();
            for element in array.iter_mut().filter_map(|b| match b {
                Bson::Document(d) => Some(d),
                _ => None,
            }) {
                let Some(id) = element.get(key).cloned() else { continue };
                for copy in rel.copies {
                    let Some(src) = sources.get(&(copy.source, id_key(&id))) else { continue };
                    if let Some(value) = lookup(src, copy.source_field) {
                        element.insert(copy.field, value.clone());
                    }
                    array_versions.insert(id_key(&id), version_of(src));
                }
            }
            if !array_versions.is_empty() {
                versions.insert(rel.field, array_versions);
            }
        }
        if !versions.is_empty() {
            doc.insert("_docrel", doc! {"copies": versions});
        }
    }
    Ok(())
}

/// Whether documents of this schema hold copies to fill on insert.
pub(crate) fn holds_copies(schema: &crate::document::Schema) -> bool {
    !schema.copies.is_empty() || schema.relations.iter().any(|r| !r.copies.is_empty())
}
