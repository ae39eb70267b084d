//! Copies written by the holder's side: filling the copies of documents
//! about to be written from their sources (one read per source collection
//! for the whole batch), confirming after the write that no source changed
//! in between, and refreshing the copies of holders whose references an
//! update changed. See the version contract in [`super::fanout`].

use crate::denormalize::fanout::{apply_to, version_of, Guard, COPIES_PATH, VERSION_PATH};
use crate::error::Result;
use crate::schema::document::Schema;
use crate::schema::graph::{graph, Shape, Target};
use crate::store::path::{id_key, lookup, overlaps};
use crate::store::session::{collect, plain, Cx};
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::{ClientSession, Database};
use std::collections::{HashMap, HashSet};

/// The source documents a write read, by (source collection, id key):
/// the copied fields and the version.
#[derive(Debug, Default)]
pub(crate) struct Sources(HashMap<(&'static str, String), BsonDoc>);

impl Sources {
    fn get(&self, source: &'static str, id: &Bson) -> Option<&BsonDoc> {
        self.0.get(&(source, id_key(id)))
    }
}

pub(crate) use crate::store::primary;

/// `(source id, the document holding the copy fields)` of a holder document.
pub(crate) fn held_copies<'d>(target: &Target, d: &'d BsonDoc) -> Vec<(&'d Bson, &'d BsonDoc)> {
    match target.shape {
        Shape::Top { via } => match d.get(via) {
            Some(id) if *id != Bson::Null => vec![(id, d)],
            _ => vec![],
        },
        Shape::Array { array, key } => d
            .get_array(array)
            .into_iter()
            .flatten()
            .filter_map(Bson::as_document)
            .filter_map(|e| e.get(key).filter(|id| **id != Bson::Null).map(|id| (id, e)))
            .collect(),
    }
}

/// What to read: per source collection, the distinct ids and the fields.
fn wants(held: &[(&'static str, &Target)], docs: &[BsonDoc]) -> Vec<(&'static str, Vec<Bson>, Vec<&'static str>)> {
    let mut out: Vec<(&'static str, Vec<Bson>, Vec<&'static str>)> = Vec::new();
    let mut seen: HashSet<(&'static str, String)> = HashSet::new();
    for (source, target) in held {
        let i = match out.iter().position(|w| w.0 == *source) {
            Some(i) => i,
            None => {
                out.push((source, Vec::new(), Vec::new()));
                out.len() - 1
            }
        };
        for f in target.source_fields() {
            if !out[i].2.contains(&f) {
                out[i].2.push(f);
            }
        }
        for d in docs {
            for (id, _) in held_copies(target, d) {
                if seen.insert((source, id_key(id))) {
                    out[i].1.push(id.clone());
                }
            }
        }
    }
    out.retain(|w| !w.1.is_empty());
    out
}

/// Reads the sources: one `find` per source collection, on the primary.
async fn read(
    db: &Database,
    wants: Vec<(&'static str, Vec<Bson>, Vec<&'static str>)>,
    mut session: Option<&mut ClientSession>,
) -> Result<Sources> {
    let mut sources = Sources::default();
    for (source, ids, fields) in wants {
        let mut projection: BsonDoc = fields.iter().map(|f| ((*f).to_owned(), Bson::Int32(1))).collect();
        projection.insert(VERSION_PATH, 1);
        let coll = db.collection::<BsonDoc>(source);
        let find = coll
            .find(doc! {"_id": {"$in": ids}})
            .projection(projection)
            .batch_size(i32::MAX as u32)
            .selection_criteria(primary());
        for found in collect(find, session.as_deref_mut(), source, |raw| plain(source, raw)).await? {
            let key = id_key(found.get("_id").unwrap_or(&Bson::Null));
            sources.0.insert((source, key), found);
        }
    }
    Ok(sources)
}

/// Fills the copies of documents about to be written from their sources
/// and records the versions copied (`_docrel.copies`); one read per source
/// collection for the whole batch. A reference to a source that does not
/// exist leaves the copy as given, with no record. Pass what it returns to
/// [`confirm`] after the write.
pub(crate) async fn fill(
    db: &Database,
    schema: &'static Schema,
    docs: &mut [BsonDoc],
    session: Option<&mut ClientSession>,
) -> Result<Sources> {
    let held = graph().held_by(schema);
    let sources = read(db, wants(&held, docs), session).await?;
    for doc in docs.iter_mut() {
        let mut records = BsonDoc::new();
        for (source, target) in &held {
            let mut versions = BsonDoc::new();
            match target.shape {
                Shape::Top { via } => {
                    if let Some(src) = doc.get(via).and_then(|id| sources.get(source, id)) {
                        for (copy, field) in &target.fields {
                            set_or_remove(doc, copy, lookup(src, field));
                        }
                        versions.insert(id_key(src.get("_id").unwrap_or(&Bson::Null)), version_of(src));
                    }
                }
                Shape::Array { array, key } => {
                    let Ok(elements) = doc.get_array_mut(array) else { continue };
                    for element in elements.iter_mut().filter_map(|b| match b {
                        Bson::Document(d) => Some(d),
                        _ => None,
                    }) {
                        let Some(src) = element.get(key).and_then(|id| sources.get(source, id)) else { continue };
                        for (copy, field) in &target.fields {
                            set_or_remove(element, copy, lookup(src, field));
                        }
                        versions.insert(id_key(src.get("_id").unwrap_or(&Bson::Null)), version_of(src));
                    }
                }
            }
            if !versions.is_empty() {
                match records.get_mut(target.record_field()) {
                    Some(Bson::Document(existing)) => existing.extend(versions),
                    _ => {
                        records.insert(target.record_field(), versions);
                    }
                }
            }
        }
        if records.is_empty() {
            continue;
        }
        let bookkeeping = match doc.get_mut("_docrel") {
            Some(Bson::Document(d)) => d,
            _ => {
                doc.insert("_docrel", BsonDoc::new());
                match doc.get_mut("_docrel") {
                    Some(Bson::Document(d)) => d,
                    _ => continue,
                }
            }
        };
        bookkeeping.insert("copies", records);
    }
    Ok(sources)
}

fn set_or_remove(doc: &mut BsonDoc, field: &str, value: Option<&Bson>) {
    match value {
        Some(v) => {
            doc.insert(field, v.clone());
        }
        None => {
            doc.remove(field);
        }
    }
}

/// After the write of documents filled by [`fill`]: reads their sources
/// again and, where one changed in between (its fan-out may have run before
/// the write landed and missed it), refreshes those copies under the
/// refresh guard. One read per source collection; writes only on a race.
pub(crate) async fn confirm(
    db: &Database,
    schema: &'static Schema,
    docs: &[BsonDoc],
    filled: Sources,
    mut session: Option<&mut ClientSession>,
) -> Result<()> {
    let held = graph().held_by(schema);
    let now = read(db, wants(&held, docs), session.as_deref_mut()).await?;
    for (source, target) in &held {
        // source id -> the holders referring to it
        let mut holders: HashMap<String, (Bson, Vec<Bson>)> = HashMap::new();
        for d in docs {
            let Some(holder) = d.get("_id") else { continue };
            for (id, _) in held_copies(target, d) {
                let entry = holders.entry(id_key(id)).or_insert_with(|| (id.clone(), Vec::new()));
                if !entry.1.contains(holder) {
                    entry.1.push(holder.clone());
                }
            }
        }
        for (id, holder_ids) in holders.values() {
            let Some(current) = now.get(source, id) else { continue };
            let unchanged = filled.get(source, id).is_some_and(|before| version_of(before) == version_of(current));
            if !unchanged {
                apply_to(
                    &mut Cx::new(db, session.as_deref_mut()),
                    target,
                    id,
                    current,
                    version_of(current),
                    Guard::Refresh,
                    Some(holder_ids),
                )
                .await?;
            }
        }
    }
    Ok(())
}

/// Brings the copies held by the documents `ids` of `schema` up to date
/// with their sources, after an update that changed their references (a
/// `via` field, elements pushed into or set on an array of copies): reads
/// the holders and their sources, and rewrites only the stale copies, under
/// the refresh guard. Two reads, and one `update` command per target with
/// stale copies.
pub(crate) async fn refresh(
    db: &Database,
    schema: &'static Schema,
    ids: &[Bson],
    mut session: Option<&mut ClientSession>,
) -> Result<()> {
    let held = graph().held_by(schema);
    if held.is_empty() || ids.is_empty() {
        return Ok(());
    }
    let mut projection = doc! {"_id": 1, COPIES_PATH: 1};
    for (_, target) in &held {
        match target.shape {
            Shape::Top { via } => {
                projection.insert(via, 1);
                for (copy, _) in &target.fields {
                    projection.insert(*copy, 1);
                }
            }
            Shape::Array { array, .. } => {
                projection.insert(array, 1);
            }
        }
    }
    let coll = db.collection::<BsonDoc>(schema.collection);
    let find = coll
        .find(doc! {"_id": {"$in": ids}})
        .projection(projection)
        .batch_size(i32::MAX as u32)
        .selection_criteria(primary());
    let docs = collect(find, session.as_deref_mut(), schema.collection, |raw| plain(schema.collection, raw)).await?;
    let sources = read(db, wants(&held, &docs), session.as_deref_mut()).await?;
    for (source, target) in &held {
        let mut stale: HashMap<String, (Bson, Vec<Bson>)> = HashMap::new();
        for d in &docs {
            let Some(holder) = d.get("_id") else { continue };
            for (id, copy) in held_copies(target, d) {
                let Some(src) = sources.get(source, id) else { continue };
                let recorded = lookup(d, &target.version_path(id)).and_then(|v| v.as_i64());
                let differs = target.fields.iter().any(|(c, f)| copy.get(*c) != lookup(src, f));
                if differs || recorded.is_some_and(|r| r < version_of(src)) {
                    stale.entry(id_key(id)).or_insert_with(|| (id.clone(), Vec::new())).1.push(holder.clone());
                }
            }
        }
        // One `update` command for every stale source of this target, not
        // one write per source.
        let groups: Vec<crate::denormalize::repair::Refresh<'_>> = stale
            .into_values()
            .filter_map(|(id, holders)| {
                let source = sources.get(source, &id)?;
                Some(crate::denormalize::repair::Refresh { id, source, holders })
            })
            .collect();
        if !groups.is_empty() {
            crate::denormalize::repair::refresh_many(db, target, &groups, session.as_deref_mut()).await?;
        }
    }
    Ok(())
}

/// Whether a write of the `touched` paths of a `schema` document changes
/// the references or the copies it holds.
pub(crate) fn touched_holdings<S: AsRef<str>>(schema: &'static Schema, touched: impl IntoIterator<Item = S>) -> bool {
    let held = graph().held_by(schema);
    if held.is_empty() {
        return false;
    }
    touched.into_iter().any(|t| {
        held.iter().any(|(_, target)| {
            overlaps(target.record_field(), t.as_ref())
                || matches!(target.shape, Shape::Top { .. })
                    && target.fields.iter().any(|(copy, _)| overlaps(copy, t.as_ref()))
        })
    })
}

/// Adds to an update that pulls elements from an array of copies the
/// removal of their version records, in the same atomic write, so the
/// records do not outgrow the array. Pulls by condition (whose ids cannot
/// be known before the write) leave their records to the next repair. A
/// pull of a whole element becomes a pull by its id: its copies are
/// docrel's to keep, and may differ from the caller's.
pub(crate) fn prune_pulled(schema: &'static Schema, body: &mut BsonDoc) {
    let Some(Bson::Document(pulls)) = body.get("$pull") else { return };
    let mut unset = BsonDoc::new();
    let mut rewrites = Vec::new();
    for (_, target) in graph().held_by(schema) {
        let Shape::Array { array, key } = target.shape else { continue };
        let pulled = match pulls.get(array) {
            // `{$eq: element}`: the value-safe form of a whole element.
            Some(Bson::Document(eq)) if eq.len() == 1 && matches!(eq.get("$eq"), Some(Bson::Document(_))) => {
                eq.get("$eq")
            }
            other => other,
        };
        let ids: Vec<Bson> = match pulled {
            // A whole element: its copies may be stale, so pull by its id.
            Some(Bson::Document(element)) if !element.keys().any(|k| k.starts_with('$')) => {
                element.get(key).cloned().into_iter().collect()
            }
            Some(Bson::Document(cond)) => match cond.get(key) {
                Some(Bson::Document(op)) => match op.get("$in") {
                    Some(Bson::Array(ids)) => ids.clone(),
                    _ => Vec::new(),
                },
                Some(id) => vec![id.clone()],
                None => Vec::new(),
            },
            _ => Vec::new(),
        };
        if ids.is_empty() {
            continue;
        }
        for id in &ids {
            unset.insert(target.version_path(id), "");
        }
        rewrites.push((array, doc! { key: {"$in": ids} }));
    }
    if unset.is_empty() {
        return;
    }
    if let Some(Bson::Document(pulls)) = body.get_mut("$pull") {
        for (array, by_id) in rewrites {
            pulls.insert(array, by_id);
        }
    }
    match body.get_mut("$unset") {
        Some(Bson::Document(existing)) => existing.extend(unset),
        _ => {
            body.insert("$unset", unset);
        }
    }
}
