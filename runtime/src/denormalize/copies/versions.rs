//! The versions of source documents: the first one from the clock, the
//! one a write moves on (an `$inc`, a stamp, or the replace pipeline's), how
//! a write's outcome is read back from it, and the repair of a source left
//! behind the records of its copies (see the version contract in
//! [`crate::denormalize::fanout`]).

use crate::error::{Error, Result};
use crate::schema::graph::Graph;
use crate::store::path::{id_key, lookup};
use crate::store::session::{in_session, Cx};
use crate::store::update::OnlySet;
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use std::collections::HashMap;

/// Where a source document keeps its version.
pub const VERSION_PATH: &str = "_docrel.v";

/// The first version of a source document: the clock in microseconds, so
/// that a source inserted again with the id of a deleted one starts above
/// every version the deleted one reached (one write per microsecond of its
/// life would be needed to pass it).
pub(crate) fn first_version() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX / 2))
        .unwrap_or(1)
}

/// Adds to an update of a source the move of its version by one, in the
/// same atomic write.
pub(crate) fn inc_version(body: &mut BsonDoc) {
    match body.get_mut("$inc") {
        Some(Bson::Document(inc)) => {
            inc.insert(VERSION_PATH, 1_i64);
        }
        _ => {
            body.insert("$inc", doc! { VERSION_PATH: 1_i64 });
        }
    }
}

/// The first version of a new source, in the bookkeeping of each of
/// `docs` (as inserted).
pub(crate) fn stamp_first_version(docs: &mut [BsonDoc]) {
    let v = first_version();
    for d in docs {
        set_version(d, v);
    }
}

/// Writes `v` as the version in a source document's bookkeeping.
fn set_version(d: &mut BsonDoc, v: i64) {
    match d.get_mut("_docrel") {
        Some(Bson::Document(b)) => {
            b.insert("v", v);
        }
        _ => {
            d.insert("_docrel", doc! {"v": v});
        }
    }
}

/// The version a source document carries (0 when docrel never wrote it).
pub(crate) fn version_of(source: &BsonDoc) -> i64 {
    lookup(source, VERSION_PATH).and_then(|v| v.as_i64().or_else(|| v.as_i32().map(i64::from))).unwrap_or(0)
}

/// The version a replace (or upsert) of a source writes, as an aggregation
/// expression over the stored document: `stamp` (the clock, see
/// [`first_version`]) when the document is new or never versioned; past
/// both the stored version and `stamp` when a field something is derived
/// from (`derived`, `None`: any field) differs from `body`; the stored
/// version otherwise. So the image after the write tells what it did
/// (see [`replace_outcome`]) without the image before it.
pub(crate) fn replace_version(derived: Option<&[&str]>, body: &BsonDoc, stamp: i64) -> Bson {
    let stored = format!("${VERSION_PATH}");
    let changed: Bson = match derived {
        None => true.into(),
        Some(fields) => {
            let differs: Vec<Bson> = fields
                .iter()
                .map(|f| match lookup(body, f) {
                    Some(value) => doc! {"$ne": [format!("${f}"), {"$literal": value.clone()}]},
                    None => doc! {"$ne": [{"$type": format!("${f}")}, "missing"]},
                })
                .map(Bson::Document)
                .collect();
            doc! {"$or": differs}.into()
        }
    };
    doc! {"$cond": [
        {"$eq": [{"$type": &stored}, "missing"]},
        stamp,
        {"$cond": [changed, {"$max": [{"$add": [&stored, 1_i64]}, stamp + 1]}, &stored]},
    ]}
    .into()
}

/// What a replace written with [`replace_version`] did, from the version
/// read back after it: `(created, changed)`. A version from a concurrent
/// writer's later clock can only make it say "changed" where nothing did,
/// which costs a fan-out that finds nothing stale, never a missed one.
pub(crate) fn replace_outcome(after: i64, stamp: i64) -> (bool, bool) {
    (after == stamp, after >= stamp)
}

/// The projection of a write whose derived values are [`known_values`]:
/// its version alone.
pub(crate) fn version_projection() -> BsonDoc {
    doc! { VERSION_PATH: 1 }
}

/// A version stamped by this process: the clock in microseconds (see
/// [`first_version`]), above every stamp it issued before.
pub(crate) fn next_stamp() -> i64 {
    use std::sync::atomic::{AtomicI64, Ordering};
    static LAST: AtomicI64 = AtomicI64::new(0);
    let now = first_version();
    let prev = LAST.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |last| Some(now.max(last + 1))).unwrap_or(0);
    now.max(prev + 1)
}

/// Whether the write of `set` where `filter` matches can be stamped (see
/// [`stamp`]): a source with copies elsewhere (it carries a version), a
/// filter by a plain `_id` that names no operator and no version, and a
/// `$set` that gives every derived field literally ([`known_values`]).
pub(crate) fn stampable(g: &'static Graph, source: &str, filter: &BsonDoc, set: &OnlySet<'_>) -> bool {
    let plain_id = match filter.get("_id") {
        None => false,
        Some(Bson::Document(d)) => !d.keys().any(|k| k.starts_with('$')),
        Some(_) => true,
    };
    plain_id
        && !filter.contains_key(VERSION_PATH)
        && !filter.keys().any(|k| k.starts_with('$'))
        && !g.targets_of(source).is_empty()
        && sets_derived(g, source, set)
}

/// A single write that needs no read-back, of a write [`stampable`]: the
/// version it writes is stamped here ([`next_stamp`]) and the write
/// applies only where the stored version is below the stamp, so each
/// successful write still moves the version on and the version still tells
/// the values; both are known without reading the document back, which
/// makes the write a plain `update` (some servers answer `findAndModify` by
/// scanning the collection). Returns the filter, the update and the stamp;
/// the fan-out reads the values from `set` itself ([`fan_out_source`]) or
/// from the image [`after_image`] builds of them.
///
/// A stamped write that matches nothing (no such document, one never
/// versioned, or a version at or above the stamp: this client's clock
/// behind another writer's) is written again the usual way
/// (`findAndModify` with `$inc`), which tells those apart. Only a `$set`
/// qualifies because of that second write: after a retry whose first
/// attempt did land, it writes the same values again, at a later version.
pub(crate) fn stamp(filter: BsonDoc, set: OnlySet<'_>) -> (BsonDoc, BsonDoc, i64) {
    stamp_write(filter, set.to_doc())
}

/// Whether `set` (a `$set`) gives every field derived from `source`
/// literally: the condition of [`known_values`], without building them.
fn sets_derived(g: &'static Graph, source: &str, set: &OnlySet<'_>) -> bool {
    g.derived_fields(source).is_some_and(|derived| derived.iter().all(|f| !f.contains('.') && set.get(f).is_some()))
}

/// The source as the fan-out reads it after a stamped write: `_id`,
/// version, the derived `values`.
pub(crate) fn after_image(id: Bson, stamp: i64, values: BsonDoc) -> BsonDoc {
    let mut after = doc! {"_id": id, "_docrel": {"v": stamp}};
    after.extend(values);
    after
}

/// A stamped write of `set` to the source where `filter` matches: the
/// filter and the update with the stamp (see [`stamp`]), and the stamp.
fn stamp_write(mut filter: BsonDoc, mut set: BsonDoc) -> (BsonDoc, BsonDoc, i64) {
    let stamp = next_stamp();
    filter.insert(VERSION_PATH, doc! {"$lt": stamp});
    set.insert(VERSION_PATH, stamp);
    (filter, doc! {"$set": set}, stamp)
}

/// Versions from here up are no clock's (the clock in microseconds gets
/// there in about 146,000 years): a record this high was written outside
/// docrel, and moving a source past it would leave its version no room to
/// move on (the next `$inc` would overflow). [`move_past`] leaves it.
pub(crate) const VERSION_CEILING: i64 = i64::MAX / 2;

/// Moves the version of the source `id` (in `collection`) past `ahead`, a
/// version a holder recorded for it that is above the source's own (the
/// source was restored or rewritten outside docrel, or inserted again by a
/// process whose clock is behind): until then every guarded write of its
/// copies is refused as older. The move is a compare-and-set on the source:
/// it lands only while the source is still at `seen`, the version the
/// caller read its values at, so those values are the source's at the new
/// version. Returns that version, or `None` when the source moved
/// meanwhile (the write that moved it fans out, or the next repair moves
/// it on).
///
/// The new version is above `ahead` and at least the clock's (as a first
/// version is): a fan-out still in flight carries a version the source had
/// before, at most `seen` or, from an earlier life of the source, one the
/// clock has passed; neither can overwrite a copy recorded at the new one.
pub(crate) async fn move_past(
    cx: &mut Cx<'_>,
    collection: &str,
    id: &Bson,
    seen: i64,
    ahead: i64,
) -> Result<Option<i64>> {
    if ahead >= VERSION_CEILING {
        return Ok(None);
    }
    let at_seen = if seen == 0 { Bson::Document(doc! {"$in": [Bson::Null, 0_i64]}) } else { Bson::Int64(seen) };
    let moved = ahead.saturating_add(1).max(next_stamp());
    let coll = cx.db.collection::<BsonDoc>(collection);
    let r = in_session!(
        coll.update_one(doc! {"_id": id.clone(), VERSION_PATH: at_seen}, doc! {"$set": {VERSION_PATH: moved}}),
        cx.session()
    )
    .map_err(|e| Error::driver("update", collection, e))?;
    Ok((r.matched_count == 1).then_some(moved))
}

/// The sources whose copies a holder records at a version above theirs,
/// moved past the highest such record ([`move_past`]): by id key, each
/// source as it was read with the version it has now. Sources that moved
/// meanwhile are left out.
pub(crate) async fn catch_up(
    cx: &mut Cx<'_>,
    collection: &str,
    ahead: Vec<(Bson, &BsonDoc, i64)>,
) -> Result<HashMap<String, BsonDoc>> {
    let mut highest: HashMap<String, (Bson, &BsonDoc, i64)> = HashMap::new();
    for (id, source, record) in ahead {
        let entry = highest.entry(id_key(&id)).or_insert((id, source, record));
        entry.2 = entry.2.max(record);
    }
    let mut out = HashMap::new();
    for (key, (id, source, record)) in highest {
        if let Some(v) = move_past(cx, collection, &id, version_of(source), record).await? {
            let mut moved = source.clone();
            set_version(&mut moved, v);
            out.insert(key, moved);
        }
    }
    Ok(out)
}
