//! Copies written by the holder's side: filling the copies of documents
//! about to be written from their sources (one read per source collection
//! for the whole batch), confirming after the write that no source changed
//! in between, and what an update of a holder changes in its copies and
//! their records. The copies themselves (where they sit, their sources,
//! their refresh) are [`super::copies`]'. See the version contract in
//! [`super::fanout`].

use crate::denormalize::chain::{self, Reach};
use crate::denormalize::copies::read_sources;
use crate::denormalize::copies::VERSION_PATH;
use crate::denormalize::fanout::{apply_to, version_of, Guard};
use crate::error::{show_id, Error, Result};
use crate::schema::document::Schema;
use crate::schema::graph::{Graph, Shape, Target};
use crate::store::page::id_pages;
use crate::store::path::{id_key, lookup, overlaps};
use crate::store::session::Cx;
use mongodb::bson::{doc, Bson, Document as BsonDoc};

use std::collections::{HashMap, HashSet};

// Named here by the callers of the fill (the fan-out, the repository).
pub(crate) use crate::denormalize::copies::Sources;

/// Brings the copies held by the documents `ids` of `schema` up to date
/// with their sources (see [`crate::denormalize::copies::refresh`]), and
/// then what is derived from the copies it rewrote: a summary carrying
/// one, a copy of one (see [`crate::denormalize::chain`]).
pub(crate) async fn refresh(cx: &mut Cx<'_>, schema: &'static Schema, ids: &[Bson]) -> Result<()> {
    for target in crate::denormalize::copies::refresh(cx, schema, ids).await? {
        chain::follow(cx, target, doc! {"_id": {"$in": ids}}, Reach::All).await?;
    }
    Ok(())
}

/// Fills the copies of documents about to be written from their sources
/// and records the versions copied (`_docrel.copies`); one read per source
/// collection for the whole batch. A reference to a source that does not
/// exist leaves the copy as given, with no record: `verify` reports it
/// dangling (a test, or a program, may write a holder before its source).
/// Pass what it returns to [`confirm`] after the write.
pub(crate) async fn fill(cx: &mut Cx<'_>, schema: &'static Schema, docs: &mut [BsonDoc]) -> Result<Sources> {
    let held = cx.graph.held_by(schema);
    let sources = read_sources(cx, &held, docs).await?;
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

/// Refuses an update that points a reference through which copies come
/// (`$set` of a top-level `via`) at a source that does not exist, before
/// anything is written: the refresh after the write would find nothing to
/// copy, and the holder would keep the old source's copies as the new
/// one's. One read per such reference set; none for any other update.
pub(crate) async fn sources_exist(cx: &mut Cx<'_>, schema: &'static Schema, body: &BsonDoc) -> Result<()> {
    let Some(Bson::Document(set)) = body.get("$set") else { return Ok(()) };
    for (source, target) in cx.graph.held_by(schema) {
        let Shape::Top { via } = target.shape else { continue };
        let Some(id) = set.get(via).filter(|id| **id != Bson::Null) else { continue };
        let sources = cx.db.collection::<BsonDoc>(source);
        let found = crate::store::session::in_session!(
            sources
                .find_one(doc! {"_id": id.clone()})
                .projection(doc! {"_id": 1})
                .selection_criteria(crate::store::primary()),
            cx.session()
        )
        .map_err(|e| Error::driver("find", source, e))?;
        if found.is_none() {
            let copies: Vec<String> = target.fields.iter().map(|(copy, _)| format!("`{copy}`")).collect();
            return Err(Error::Invalid {
                what: crate::error::Misuse::Copy,
                message: format!(
                    "`{}.{via}` of the updated documents names {} in `{source}`, which does not exist: its copies \
                     ({}) would have nothing to be copied from, so nothing was written. Write the referred document \
                     first, or leave the reference out (an `Option` set to `None`)",
                    schema.collection,
                    show_id(id),
                    copies.join(", ")
                ),
            });
        }
    }
    Ok(())
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
/// refresh guard. One read per source collection (and page of ids);
/// writes only on a race. Returns whether it rewrote a copy: then the
/// documents as written are no longer the stored ones.
pub(crate) async fn confirm(
    cx: &mut Cx<'_>,
    schema: &'static Schema,
    docs: &[BsonDoc],
    filled: Sources,
) -> Result<bool> {
    let held = cx.graph.held_by(schema);
    let mut rewrote = false;
    let now = read_sources(cx, &held, docs).await?;
    for (source, target) in &held {
        // Nothing rewritten may still mean a summary to fix: a fan-out of
        // the new version reached these holders first, and rewrote their
        // summaries before this write pushed its own.
        let summarized = cx.graph.summaries_of_copies(target).next().is_some();
        // source id -> the holders referring to it; a holder listed once
        // per source (a set, so a batch of holders of one source stays linear)
        let mut holders: HashMap<String, (Bson, Vec<Bson>)> = HashMap::new();
        let mut listed: HashSet<(String, String)> = HashSet::new();
        for d in docs {
            let Some(holder) = d.get("_id") else { continue };
            for (id, _) in target.held_copies(d) {
                let entry = holders.entry(id_key(id)).or_insert_with(|| (id.clone(), Vec::new()));
                if listed.insert((id_key(id), id_key(holder))) {
                    entry.1.push(holder.clone());
                }
            }
        }
        for (id, holder_ids) in holders.values() {
            let Some(current) = now.get(source, id) else { continue };
            let unchanged = filled.get(source, id).is_some_and(|before| version_of(before) == version_of(current));
            if unchanged {
                continue;
            }
            let version = version_of(current);
            for page in id_pages(holder_ids) {
                let n = apply_to(
                    &mut Cx::new(cx.db, cx.session()),
                    target,
                    id,
                    current,
                    version,
                    Guard::Refresh,
                    Some(page),
                )
                .await?;
                if n > 0 || summarized {
                    rewrote |= n > 0;
                    Box::pin(chain::follow(cx, target, doc! {"_id": {"$in": page}}, Reach::All)).await?;
                }
            }
        }
    }
    Ok(rewrote)
}

/// In an insert's own transaction on MongoDB 8.0+: its documents and
/// their subset pushes in one `bulkWrite`
/// ([`crate::patterns::subset::insert_and_push`]), the pushes guarded by
/// [`push_guards`]. Returns whether they confirmed the copies the fill
/// wrote, so that [`confirm`] need not run after the commit.
pub(crate) async fn insert_and_push(
    cx: &mut Cx<'_>,
    schema: &'static Schema,
    docs: &[BsonDoc],
    filled: Option<&Sources>,
) -> Result<bool> {
    let guards = push_guards(cx.graph, schema, docs, filled);
    let none = Default::default();
    let all = crate::patterns::subset::insert_and_push(cx, schema.collection, docs, guards.as_ref().unwrap_or(&none));
    Ok(all.await? && guards.is_some())
}

/// Guards that let the subset pushes of an insert confirm its copies in
/// place of [`confirm`], when every copy the documents hold sits beside the
/// reference to a parent whose subset the insert pushes into (a log
/// message's copy of its host's address, the host keeping the newest
/// messages) and the insert runs in a transaction of its own. Each push is
/// guarded by the version of the parent the fill read: a push that matched
/// wrote that parent, unchanged since the fill, inside the transaction; a
/// change of it committed after the transaction's snapshot makes the
/// transaction's write conflict (and retry), and one that comes later
/// waits for the commit, so its fan-out finds the documents. The guards by
/// parent collection and id; `None` when a copy has no such push, or its
/// source was not found (then [`confirm`] runs after the commit).
fn push_guards(
    g: &'static Graph,
    schema: &'static Schema,
    docs: &[BsonDoc],
    filled: Option<&Sources>,
) -> Option<crate::patterns::subset::Guards> {
    let filled = filled?;
    let subsets = g.subsets_of(schema.collection);
    let mut guards = crate::patterns::subset::Guards::new();
    for (source, target) in g.held_by(schema) {
        let Shape::Top { via } = target.shape else { return None };
        if !subsets.iter().any(|s| s.parent == source && s.parent_field == via) {
            return None;
        }
        for d in docs {
            for (id, _) in target.held_copies(d) {
                let version = match version_of(filled.get(source, id)?) {
                    // Never versioned: no version field (or a zero one).
                    0 => doc! {"$in": [Bson::Null, 0_i64]}.into(),
                    v => Bson::Int64(v),
                };
                guards.insert((source, id_key(id)), doc! { VERSION_PATH: version });
            }
        }
    }
    Some(guards)
}

/// Whether a write of the `touched` paths of a `schema` document changes
/// the references or the copies it holds.
pub(crate) fn touched_holdings<S: AsRef<str>>(
    g: &'static Graph,
    schema: &'static Schema,
    touched: impl IntoIterator<Item = S>,
) -> bool {
    let held = g.held_by(schema);
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

/// The condition of a pull of `element` that ignores its copies: each
/// other field equal (`$eq`, so a value that looks like an operator is
/// compared, not run).
fn but_copies(element: &BsonDoc, target: &Target) -> BsonDoc {
    element
        .iter()
        .filter(|(k, _)| !target.fields.iter().any(|(copy, _)| copy == k))
        .map(|(k, v)| (k.clone(), Bson::Document(doc! {"$eq": v.clone()})))
        .collect()
}

/// The ids of the elements a `$pull` of `pulled` removes from an array of
/// copies keyed by `key`, and whether the pull is to be rewritten by id: a
/// whole element (its copies may be stale, so it is pulled by its id), or
/// a condition on the key alone (`{key: {$eq: x}}`, `{key: {$in: [..]}}`),
/// kept as written. Any other condition names no id before the write.
fn pulled_ids(element: &BsonDoc, key: &str) -> (Vec<Bson>, bool) {
    let condition = |op: &BsonDoc| match (op.len(), op.get("$eq"), op.get("$in")) {
        (1, Some(id), _) => vec![id.clone()],
        (1, _, Some(Bson::Array(ids))) => ids.clone(),
        _ => Vec::new(),
    };
    match element.get(key) {
        Some(Bson::Document(op)) if op.keys().any(|k| k.starts_with('$')) => {
            let alone = element.len() == 1;
            (if alone { condition(op) } else { Vec::new() }, false)
        }
        Some(id) if !element.keys().any(|k| k.starts_with('$')) => (vec![id.clone()], true),
        _ => (Vec::new(), false),
    }
}

/// Adds to an update that pulls elements from an array of copies the
/// removal of their version records, in the same atomic write, so the
/// records do not outgrow the array. Pulls by condition (whose ids cannot
/// be known before the write) leave their records to the next repair. A
/// pull of a whole element becomes a pull of the elements equal to it in
/// every field but its copies: those are docrel's to keep, and may differ
/// from the caller's. Not a pull by the element's reference alone, which
/// would take every element naming the same document (all of one author's
/// comments, both lines of one part). A record is shared by the elements
/// naming one document, so it goes only where the reference is the
/// element's identity (`{id, ..}` elements of a reference array).
pub(crate) fn prune_pulled(g: &'static Graph, schema: &'static Schema, body: &mut BsonDoc) {
    let Some(Bson::Document(pulls)) = body.get("$pull") else { return };
    let mut unset = BsonDoc::new();
    let mut rewrites = Vec::new();
    for (_, target) in g.held_by(schema) {
        let Shape::Array { array, key } = target.shape else { continue };
        let pulled = match pulls.get(array) {
            // `{$eq: element}`: the value-safe form of a whole element.
            Some(Bson::Document(eq)) if eq.len() == 1 && matches!(eq.get("$eq"), Some(Bson::Document(_))) => {
                eq.get("$eq")
            }
            other => other,
        };
        let (ids, rewrite) = match pulled.and_then(Bson::as_document) {
            Some(element) => pulled_ids(element, key),
            None => (Vec::new(), false),
        };
        if ids.is_empty() {
            continue;
        }
        let identity = schema.relations.iter().any(|r| r.field == array && r.is_reference());
        if identity {
            for id in &ids {
                unset.insert(target.version_path(id), "");
            }
        }
        if rewrite {
            if let Some(element) = pulled.and_then(Bson::as_document) {
                rewrites.push((array, but_copies(element, target)));
            }
        }
    }
    if let Some(Bson::Document(pulls)) = body.get_mut("$pull") {
        for (array, condition) in rewrites {
            pulls.insert(array, condition);
        }
    }
    if unset.is_empty() {
        return;
    }
    match body.get_mut("$unset") {
        Some(Bson::Document(existing)) => existing.extend(unset),
        _ => {
            body.insert("$unset", unset);
        }
    }
}
