//! The copies a holder document keeps, in one place: where they sit in the
//! holder (the holder projection and [`Target::held_copies`]), reading their sources
//! ([`read_sources`]), and rewriting stale ones from them under the refresh
//! guard ([`refresh_many`] for holders already read, [`refresh`] for holders
//! named by id). The fill on insert, the repair and the updates that change
//! references all go through here. See the version contract in
//! [`crate::denormalize::fanout`].

use super::leftovers::clear;
use super::records::{Guard, COPIES_PATH};
use super::versions::{catch_up, version_of, VERSION_PATH};
use crate::error::{Error, Result};
use crate::schema::document::Schema;
use crate::schema::graph::{Shape, Target};
use crate::store::page::id_pages;
use crate::store::path::{id_key, lookup};
use crate::store::primary;
use crate::store::session::{collect, in_session, plain, Cx};
use crate::store::updates::send_updates;
use mongodb::bson::{doc, Bson, Document as BsonDoc};

use std::collections::{HashMap, HashSet};

/// The fields of a holder that [`Target::held_copies`] reads for `targets`: the
/// references and the copies, and `_id`.
pub(crate) fn holder_projection<'t>(targets: impl IntoIterator<Item = &'t Target>) -> BsonDoc {
    let mut projection = doc! {"_id": 1};
    for target in targets {
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
    projection
}

/// Whether a copy holds other values than its source.
pub(crate) fn differs(target: &Target, copy: &BsonDoc, source: &BsonDoc) -> bool {
    target.fields.iter().any(|(field, source_field)| copy.get(*field) != lookup(source, source_field))
}

/// The source documents a write or a repair read, by (source collection,
/// id key): the copied fields and the version.
#[derive(Debug, Default, Clone)]
pub(crate) struct Sources(HashMap<(&'static str, String), BsonDoc>);

impl Sources {
    pub(crate) fn get(&self, source: &'static str, id: &Bson) -> Option<&BsonDoc> {
        self.0.get(&(source, id_key(id)))
    }
}

/// What to read: per source collection, the distinct ids and the fields.
type Wants = Vec<(&'static str, Vec<Bson>, Vec<&'static str>)>;

fn wants(held: &[(&'static str, &Target)], docs: &[BsonDoc]) -> Wants {
    let mut out: Wants = Vec::new();
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
            for (id, _) in target.held_copies(d) {
                if seen.insert((source, id_key(id))) {
                    out[i].1.push(id.clone());
                }
            }
        }
    }
    out.retain(|w| !w.1.is_empty());
    out
}

/// Reads the sources of the copies `docs` hold for `held`: one `find` per
/// source collection and page of ids (a set of ids, so a batch of holders
/// of many sources stays linear), on the primary.
pub(crate) async fn read_sources(
    cx: &mut Cx<'_>,
    held: &[(&'static str, &Target)],
    docs: &[BsonDoc],
) -> Result<Sources> {
    let mut sources = Sources::default();
    for (source, ids, fields) in wants(held, docs) {
        let mut projection: BsonDoc = fields.iter().map(|f| ((*f).to_owned(), Bson::Int32(1))).collect();
        projection.insert(VERSION_PATH, 1);
        let coll = cx.db.collection::<BsonDoc>(source);
        for page in id_pages(&ids) {
            let find = coll
                .find(doc! {"_id": {"$in": page}})
                .projection(projection.clone())
                .batch_size(i32::MAX as u32)
                .selection_criteria(primary());
            for found in collect(find, cx.session(), source, |raw| plain(source, raw)).await? {
                let key = id_key(found.get("_id").unwrap_or(&Bson::Null));
                sources.0.insert((source, key), found);
            }
        }
    }
    Ok(sources)
}

/// Brings the copies held by the documents `ids` of `schema` up to date
/// with their sources, after an update that changed their references (a
/// `via` field, elements pushed into or set on an array of copies): reads
/// the holders and their sources, and rewrites only the stale copies (other
/// values, or an older version recorded), under the refresh guard; copies
/// and records of a reference the write cleared are removed. Two reads, and
/// one `update` command per target with stale copies (one more with
/// leftovers). Returns the targets where it rewrote copies.
pub(crate) async fn refresh(cx: &mut Cx<'_>, schema: &'static Schema, ids: &[Bson]) -> Result<Vec<&'static Target>> {
    let held = cx.graph.held_by(schema);
    let mut rewritten = Vec::new();
    if held.is_empty() || ids.is_empty() {
        return Ok(rewritten);
    }
    let mut projection = holder_projection(held.iter().map(|(_, target)| *target));
    projection.insert(COPIES_PATH, 1);
    let coll = cx.db.collection::<BsonDoc>(schema.collection);
    let find = coll
        .find(doc! {"_id": {"$in": ids}})
        .projection(projection)
        .batch_size(i32::MAX as u32)
        .selection_criteria(primary());
    let docs = collect(find, cx.session(), schema.collection, |raw| plain(schema.collection, raw)).await?;
    let sources = read_sources(cx, &held, &docs).await?;
    for (source, target) in &held {
        // A reference the write cleared (an unlink) takes its copies.
        let leftovers: Vec<(Bson, Vec<String>)> =
            docs.iter().filter_map(|d| Some((d.get("_id")?.clone(), target.leftovers(d)))).collect();
        let cleared = clear(cx, target, &leftovers).await?;
        // A record ahead of its source refuses every guarded write of the
        // copy: the source's version moves past it first, as a repair's does.
        let caught_up = past_records(cx, source, target, &docs, &sources).await?;
        let mut stale: HashMap<String, Refresh<'_>> = HashMap::new();
        for d in &docs {
            let Some(holder) = d.get("_id") else { continue };
            for (id, copy) in target.held_copies(d) {
                let Some(src) = sources.get(source, id) else { continue };
                let src = caught_up.get(&id_key(id)).unwrap_or(src);
                let recorded = lookup(d, &target.version_path(id)).and_then(|v| v.as_i64());
                if differs(target, copy, src) || recorded.is_some_and(|r| r < version_of(src)) {
                    let group = stale.entry(id_key(id)).or_insert_with(|| Refresh::of(id, src));
                    group.holders.push(holder.clone());
                }
            }
        }
        // One `update` command for every stale source of this target, not
        // one write per source.
        let groups: Vec<Refresh<'_>> = stale.into_values().collect();
        let refreshed = if groups.is_empty() { 0 } else { refresh_many(cx, target, &groups).await? };
        if cleared + refreshed > 0 {
            rewritten.push(*target);
        }
    }
    Ok(rewritten)
}

/// The sources whose copies `docs` record at a version above theirs, moved
/// past those records ([`catch_up`]), by id key. A source that moved
/// meanwhile could not be moved: that is an error saying which copies stay
/// stale, since the write that moved it carries a version below the
/// records as well.
async fn past_records(
    cx: &mut Cx<'_>,
    source: &'static str,
    target: &Target,
    docs: &[BsonDoc],
    sources: &Sources,
) -> Result<HashMap<String, BsonDoc>> {
    let ahead: Vec<(Bson, &BsonDoc, i64)> = docs
        .iter()
        .flat_map(|d| target.held_copies(d).into_iter().map(move |(id, _)| (d, id)))
        .filter_map(|(d, id)| {
            let src = sources.get(source, id)?;
            Some((id.clone(), src, target.record_ahead(d, id, src)?))
        })
        .collect();
    if ahead.is_empty() {
        return Ok(HashMap::new());
    }
    let wanted: Vec<(Bson, i64)> = ahead.iter().map(|(id, _, record)| (id.clone(), *record)).collect();
    let caught_up = catch_up(cx, source, ahead).await?;
    match wanted.into_iter().find(|(id, _)| !caught_up.contains_key(&id_key(id))) {
        None => Ok(caught_up),
        Some((id, record)) => Err(not_past(source, target, &id, record)),
    }
}

/// After a fan-out of the new source `id` (at `version`) to `target`: the
/// holders that record it at a higher version (from its earlier life, by a
/// clock ahead of this one's) refused it. The source's version moves past
/// the highest such record and the copies are written at the new version,
/// from the source read again. One read when no record is ahead. Returns
/// the copies written.
pub(crate) async fn past_records_ahead(
    cx: &mut Cx<'_>,
    source: &'static str,
    target: &Target,
    id: &Bson,
    version: i64,
) -> Result<u64> {
    let path = target.version_path(id);
    let holders = cx.db.collection::<BsonDoc>(target.collection);
    let highest = in_session!(
        holders
            .find_one(doc! { target.id_path(): id.clone(), path.clone(): {"$gt": version} })
            .sort(doc! { path.clone(): -1 })
            .projection(doc! { path: 1 })
            .selection_criteria(primary()),
        cx.session()
    )
    .map_err(|e| Error::driver("find", target.collection, e))?;
    let Some(record) = highest.and_then(|h| target.recorded(&h, id)) else { return Ok(0) };
    let sources = cx.db.collection::<BsonDoc>(source);
    let read = sources.find_one(doc! {"_id": id.clone()}).selection_criteria(primary());
    let now = in_session!(read, cx.session()).map_err(|e| Error::driver("find", source, e))?;
    // Deleted since: nothing to copy.
    let Some(now) = now else { return Ok(0) };
    let moved = catch_up(cx, source, vec![(id.clone(), &now, record)]).await?;
    let Some(now) = moved.get(&id_key(id)) else { return Err(not_past(source, target, id, record)) };
    super::records::apply_to(cx, target, id, now, version_of(now), Guard::FanOut, None).await
}

/// The error of copies of the source `id` left behind `record`: what stays
/// stale and how to fix it.
fn not_past(source: &'static str, target: &Target, id: &Bson, record: i64) -> Error {
    Error::Invalid {
        what: crate::error::Misuse::Copy,
        message: format!(
            "copies of {source} {} in `{}` (through `{}`) record version {record}, ahead of the source's (it was \
             restored or rewritten outside docrel, or inserted again by a clock behind), and the source changed \
             while docrel moved its version past them: those copies are stale; run `docrel::check::copies::<T>().repair(&db)` \
             for `{source}`",
            crate::error::show_id(id),
            target.collection,
            target.id_path()
        ),
    }
}

/// One source document whose copies in `holders` are to be rewritten.
pub(crate) struct Refresh<'s> {
    pub(crate) id: Bson,
    pub(crate) source: &'s BsonDoc,
    pub(crate) holders: Vec<Bson>,
}

impl<'s> Refresh<'s> {
    /// The source `id`, read as `source`, with no holder yet.
    pub(crate) fn of(id: &Bson, source: &'s BsonDoc) -> Self {
        Refresh { id: id.clone(), source, holders: Vec::new() }
    }
}

/// Statements of one `update` command at most: far under the server's
/// 100,000 writes and 16 MiB per command, whatever the copies hold.
const STATEMENTS: usize = 10_000;
const COMMAND_BYTES: usize = 8 * 1024 * 1024;

/// Rewrites the copies of each group's source in its holders, under the
/// refresh guard of [`Target::update`] (per source, so concurrent fan-outs
/// and refreshes still never make a copy older). All groups go in one
/// `update` command of many statements (more only past [`STATEMENTS`] or
/// [`COMMAND_BYTES`]), not one round trip per source or holder. Returns
/// the copies modified.
pub(crate) async fn refresh_many(cx: &mut Cx<'_>, target: &Target, groups: &[Refresh<'_>]) -> Result<u64> {
    let statements: Vec<BsonDoc> =
        groups.iter().filter(|g| !g.holders.is_empty()).flat_map(|g| statements_of(target, g)).collect();
    let modified = send_all(cx, target, statements).await?;
    crate::client::trace::fanned_out(target.collection, || &target.paths().id, modified);
    Ok(modified)
}

/// Sends update `statements` on `target`'s collection in as few `update`
/// commands as [`STATEMENTS`] and [`COMMAND_BYTES`] allow (none when there
/// is no statement). Returns the documents modified.
pub(crate) async fn send_all(cx: &mut Cx<'_>, target: &Target, all: Vec<BsonDoc>) -> Result<u64> {
    let mut modified = 0u64;
    let mut statements: Vec<BsonDoc> = Vec::new();
    let mut bytes = 0usize;
    for statement in all {
        let size = crate::bson_compat::to_vec(&statement).map(|v| v.len()).unwrap_or(0);
        if !statements.is_empty() && (statements.len() == STATEMENTS || bytes + size > COMMAND_BYTES) {
            modified += send_updates(cx, target.collection, std::mem::take(&mut statements)).await?;
            bytes = 0;
        }
        bytes += size;
        statements.push(statement);
    }
    if !statements.is_empty() {
        modified += send_updates(cx, target.collection, statements).await?;
    }
    Ok(modified)
}

/// The statements rewriting one group's copies.
///
/// One statement per alternative of the guard, each a plain conjunction
/// led by `_id`: it bounds the statement to the group's holders, and a
/// server that plans a write by its leading field and scans the collection
/// for a top-level `$or` (the embedded one does) looks the holders up by id
/// instead. The alternatives write the same values and version, so a holder
/// the first one rewrote no longer matches the others: the union is the
/// guard's own update.
fn statements_of(target: &Target, group: &Refresh<'_>) -> Vec<BsonDoc> {
    let (filter, update, array_filters) =
        target.update(&group.id, group.source, version_of(group.source), Guard::Refresh);
    alternatives(filter)
        .into_iter()
        .map(|alternative| {
            let mut q = doc! {"_id": {"$in": group.holders.clone()}};
            if alternative.contains_key("_id") {
                q.insert("$and", vec![alternative]);
            } else {
                q.extend(alternative);
            }
            let mut statement = doc! {"q": q, "u": update.clone(), "multi": true};
            if let Some(af) = &array_filters {
                statement.insert("arrayFilters", af.clone());
            }
            statement
        })
        .collect()
}

/// A filter as alternatives whose union it matches, none with a top-level
/// `$or` or `$and` (those inside a field's condition, such as
/// `$elemMatch`, stay). A filter it cannot split so (a field named twice
/// once the parts are merged, another top-level operator) is its only
/// alternative.
fn alternatives(filter: BsonDoc) -> Vec<BsonDoc> {
    split(&filter).unwrap_or_else(|| vec![filter])
}

/// Bounds the alternatives of one filter: past it, one statement with
/// the `$or` costs less than the many without.
const ALTERNATIVES: usize = 16;

fn split(filter: &BsonDoc) -> Option<Vec<BsonDoc>> {
    let mut out = vec![BsonDoc::new()];
    for (key, value) in filter {
        let parts: Vec<Vec<BsonDoc>> = match (key.as_str(), value) {
            ("$or", Bson::Array(items)) => {
                let any: Vec<BsonDoc> =
                    items.iter().map(|i| i.as_document().and_then(split)).collect::<Option<Vec<_>>>()?.concat();
                vec![any]
            }
            ("$and", Bson::Array(items)) => {
                items.iter().map(|i| i.as_document().and_then(split)).collect::<Option<Vec<_>>>()?
            }
            (k, _) if k.starts_with('$') => return None,
            (k, v) => vec![vec![doc! { k: v.clone() }]],
        };
        for part in parts {
            let mut next = Vec::with_capacity(out.len() * part.len());
            for base in &out {
                for p in &part {
                    if p.keys().any(|k| base.contains_key(k)) {
                        return None;
                    }
                    let mut merged = base.clone();
                    merged.extend(p.clone());
                    next.push(merged);
                }
            }
            if next.len() > ALTERNATIVES {
                return None;
            }
            out = next;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::alternatives;
    use mongodb::bson::doc;

    #[test]
    fn a_guard_splits_into_conjunctions_led_by_their_fields() {
        let guard = doc! {
            "supplier": 7,
            "$or": [
                {"v": {"$lt": 3}},
                {"$and": [{"v": {"$exists": false}}, {"$or": [{"x": {"$ne": 1}}, {"y": {"$ne": 2}}]}]},
            ],
        };
        assert_eq!(
            alternatives(guard),
            [
                doc! {"supplier": 7, "v": {"$lt": 3}},
                doc! {"supplier": 7, "v": {"$exists": false}, "x": {"$ne": 1}},
                doc! {"supplier": 7, "v": {"$exists": false}, "y": {"$ne": 2}},
            ]
        );
        // `$elemMatch` keeps its own `$or`; a field named twice is not split.
        let inner = doc! {"a": {"$elemMatch": {"$or": [{"k": 1}, {"k": 2}]}}};
        assert_eq!(alternatives(inner.clone()), [inner]);
        let twice = doc! {"v": 1, "$or": [{"v": 2}, {"w": 3}]};
        assert_eq!(alternatives(twice.clone()), [twice]);
    }
}
