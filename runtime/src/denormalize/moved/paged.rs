//! The two reconciles of a move into buckets, per parent. The pages are a
//! function of the array while both shapes are kept (page `k` holds the
//! elements `[(k-1)·size, k·size)`), so both directions end the same way:
//! the array is what it should be, then each page is made to hold its
//! slice. A write of the pages is read back as their elements in page
//! order; a page emptied or removed in the middle closes up. Two
//! transactions making one parent's missing page meet on the page's
//! unique index: the later one is retried whole, as a conflict is.

use super::common::{distinct, read, within_bound, Reach};
use super::reconcile::moved_write;
use crate::error::{Error, Result};
use crate::schema::stored::{ActiveMove, StoredBuckets};
use crate::store::path::id_key;
use crate::store::session::Cx;
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use std::collections::HashMap;

/// Each stored parent's array (empty when it has none), by id key.
async fn arrays(cx: &mut Cx<'_>, mv: &ActiveMove, parents: &[Bson]) -> Result<HashMap<String, Vec<Bson>>> {
    let filter = doc! {"_id": {"$in": parents.to_vec()}};
    let found = read(cx, &mv.spec.from.collection, filter, Some(doc! {&mv.field: 1})).await?;
    Ok(found
        .into_iter()
        .map(|d| {
            let id = d.get("_id").map(id_key).unwrap_or_default();
            (id, d.get_array(&mv.field).cloned().unwrap_or_default())
        })
        .collect())
}

/// Each parent's pages, in page order, by the parent's id key.
async fn pages(
    cx: &mut Cx<'_>,
    mv: &ActiveMove,
    b: &StoredBuckets,
    parents: &[Bson],
) -> Result<HashMap<String, Vec<BsonDoc>>> {
    let filter = doc! {&mv.spec.parent_field: {"$in": parents.to_vec()}};
    let mut out: HashMap<String, Vec<BsonDoc>> = HashMap::new();
    for d in read(cx, &mv.spec.to.collection, filter, None).await? {
        out.entry(d.get(&mv.spec.parent_field).map(id_key).unwrap_or_default()).or_default().push(d);
    }
    for list in out.values_mut() {
        list.sort_by_key(|d| place(b, d));
    }
    Ok(out)
}

/// Where a page is in its parent's order: its window's start in
/// milliseconds (time buckets) and its number (a window's first bucket,
/// which has none, is 1).
type Place = (Option<i64>, i64);

/// The place of a stored page.
fn place(b: &StoredBuckets, page: &BsonDoc) -> Place {
    let start = b.window_ms.map(|_| page.get_datetime(&b.start).map_or(i64::MIN, |t| t.timestamp_millis()));
    let number = match page.get(&b.page) {
        None if start.is_some() => 1,
        n => number(n),
    };
    (start, number)
}

/// Where the last element of `array` is in its pages: the window start
/// (time buckets) and the page number (1 for a window's first bucket).
pub(crate) fn last_place(b: &StoredBuckets, array: &[Bson]) -> (Option<i64>, i64) {
    let size = i64::from(b.size.max(1));
    let time = |e: &Bson| e.as_document().and_then(|d| d.get_datetime(&b.by).ok()).map(|t| t.timestamp_millis());
    match (b.window_ms.filter(|w| *w > 0), array.last().and_then(time)) {
        (Some(w), Some(t)) => {
            let start = t.div_euclid(w) * w;
            let before = array.iter().filter(|e| time(e).is_some_and(|t| t.div_euclid(w) * w == start)).count();
            (Some(start), (before as i64 - 1).div_euclid(size) + 1)
        }
        _ => (None, ((array.len() as i64 - 1).max(0)).div_euclid(size) + 1),
    }
}

/// The pages an array makes, in order: slices of `size` (count buckets),
/// or each window's elements in array order, in slices of `size` (time
/// buckets, windows in time order). An element without a date at the
/// time field has no window: the reason, in words.
fn layout(b: &StoredBuckets, array: &[Bson]) -> std::result::Result<Vec<(Place, Vec<Bson>)>, String> {
    let size = b.size.max(1) as usize;
    let Some(window) = b.window_ms.filter(|w| *w > 0) else {
        return Ok(array.chunks(size).enumerate().map(|(i, c)| ((None, i as i64 + 1), c.to_vec())).collect());
    };
    let mut windows: std::collections::BTreeMap<i64, Vec<Bson>> = std::collections::BTreeMap::new();
    for e in array {
        let t = e.as_document().and_then(|d| d.get_datetime(&b.by).ok()).ok_or_else(|| {
            format!(
                "an element has no date `{}`, so it falls in no window: {}",
                b.by,
                crate::bson_compat::relaxed_extjson(e)
            )
        })?;
        windows.entry(t.timestamp_millis().div_euclid(window) * window).or_default().push(e.clone());
    }
    Ok(windows
        .into_iter()
        .flat_map(|(start, elements)| {
            let chunks: Vec<Vec<Bson>> = elements.chunks(size).map(<[Bson]>::to_vec).collect();
            chunks.into_iter().enumerate().map(move |(i, c)| ((Some(start), i as i64 + 1), c))
        })
        .collect())
}

/// A stored page number or count, whatever its numeric type.
fn number(value: Option<&Bson>) -> i64 {
    match value {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        Some(Bson::Double(n)) => *n as i64,
        _ => 0,
    }
}

/// The move's bucket fields; an error for a move of another kind.
fn buckets(mv: &ActiveMove) -> Result<&StoredBuckets> {
    mv.spec.buckets.as_ref().ok_or_else(|| moved_write(mv, "the move names no bucket fields".to_owned()))
}

/// Both shapes of `parents`, each parent once: their arrays and their
/// pages, by the parent's id key.
type Shapes = (Vec<Bson>, HashMap<String, Vec<Bson>>, HashMap<String, Vec<BsonDoc>>);

async fn both(cx: &mut Cx<'_>, mv: &ActiveMove, parents: &[Bson]) -> Result<Shapes> {
    let b = buckets(mv)?;
    let parents = distinct(parents);
    let arrays = arrays(cx, mv, &parents).await?;
    let pages = pages(cx, mv, b, &parents).await?;
    Ok((parents, arrays, pages))
}

/// Makes the pages of each of `parents` the slices of its array; a parent
/// that is gone has no pages. Within `reach`: while some process may not
/// know of the move (`announced`) no page is added.
pub(super) async fn pages_from_arrays(cx: &mut Cx<'_>, mv: &ActiveMove, parents: &[Bson], reach: Reach) -> Result<()> {
    if parents.is_empty() {
        return Ok(());
    }
    let (parents, arrays, mut pages) = both(cx, mv, parents).await?;
    let parents = &parents[..];
    let mut writes = Writes::default();
    for parent in parents {
        let key = id_key(parent);
        let have = pages.remove(&key).unwrap_or_default();
        let array = arrays.get(&key).map(Vec::as_slice).unwrap_or_default();
        writes.page(mv, parent, array, have, reach)?;
    }
    writes.send(cx, mv).await
}

/// Makes each of `parents`' arrays hold its pages' elements in page
/// order, then the pages the slices of it. An array that would pass the
/// old bound refuses the write ([`Error::EmbedFull`]), and so do pages of
/// a parent that is not stored: the old shape could not hold them.
pub(super) async fn arrays_from_pages(cx: &mut Cx<'_>, mv: &'static ActiveMove, parents: &[Bson]) -> Result<()> {
    if parents.is_empty() {
        return Ok(());
    }
    let b = buckets(mv)?;
    let (parents, arrays, mut pages) = both(cx, mv, parents).await?;
    let parents = &parents[..];
    let (mut writes, mut statements) = (Writes::default(), Vec::new());
    for parent in parents {
        let key = id_key(parent);
        let have = pages.remove(&key).unwrap_or_default();
        let Some(old) = arrays.get(&key) else {
            if let Some(page) = have.first() {
                return Err(moved_write(mv, not_stored(mv, parent, page)));
            }
            continue;
        };
        let array: Vec<Bson> = have.iter().flat_map(|p| p.get_array(&b.field).cloned().unwrap_or_default()).collect();
        within_bound(mv, parent, array.len())?;
        if &array != old {
            statements.push(doc! {"q": {"_id": parent.clone()}, "u": {"$set": {&mv.field: array.clone()}}});
        }
        writes.page(mv, parent, &array, have, Reach::Full)?;
    }
    if !statements.is_empty() {
        crate::store::updates::send_updates(cx, &mv.spec.from.collection, statements).await?;
    }
    writes.send(cx, mv).await
}

/// The upsert of a page not stored yet: by its place, the first bucket
/// of a window without a number (as an append makes it).
fn made(mv: &ActiveMove, b: &StoredBuckets, parent: &Bson, at: Place, count: i32, slice: Vec<Bson>) -> BsonDoc {
    let page = i32::try_from(at.1).unwrap_or(i32::MAX);
    let (mut q, mut u) = (doc! {&mv.spec.parent_field: parent.clone()}, doc! {&mv.spec.parent_field: parent.clone()});
    if let Some(start) = at.0 {
        let start = mongodb::bson::DateTime::from_millis(start);
        q.insert(&b.start, start);
        u.insert(&b.start, start);
        if page == 1 {
            q.insert(&b.page, doc! {"$exists": false});
        }
    }
    if at.0.is_none() || page > 1 {
        q.insert(&b.page, page);
        u.insert(&b.page, page);
    }
    u.insert(&b.count, count);
    u.insert(&b.field, slice);
    doc! {"q": q, "u": u, "upsert": true}
}

fn not_stored(mv: &ActiveMove, parent: &Bson, page: &BsonDoc) -> String {
    format!(
        "`{}` {} is not stored, so the other shape cannot hold the `{}` page {} written for it (deleted meanwhile?)",
        mv.spec.from.collection,
        crate::bson_compat::relaxed_extjson(parent),
        mv.spec.to.collection,
        page.get("_id").map(crate::bson_compat::relaxed_extjson).unwrap_or_default()
    )
}

/// The writes making pages hold their slices, for one statement of each
/// kind whatever the number of parents.
#[derive(Default)]
struct Writes {
    gone: Vec<Bson>,
    statements: Vec<BsonDoc>,
}

impl Writes {
    /// What makes `have`, the pages of `parent`, the pages of `array`.
    fn page(&mut self, mv: &ActiveMove, parent: &Bson, array: &[Bson], have: Vec<BsonDoc>, reach: Reach) -> Result<()> {
        let b = buckets(mv)?;
        let mut have: HashMap<Place, BsonDoc> = have.into_iter().map(|p| (place(b, &p), p)).collect();
        for (at, slice) in layout(b, array).map_err(|why| moved_write(mv, why))? {
            let count = i32::try_from(slice.len()).unwrap_or(i32::MAX);
            match have.remove(&at) {
                Some(p)
                    if number(p.get(&b.count)) == i64::from(count)
                        && p.get_array(&b.field).is_ok_and(|a| *a == slice) => {}
                Some(p) => self.statements.push(doc! {
                    "q": {"_id": p.get("_id").cloned().unwrap_or(Bson::Null)},
                    "u": {"$set": {&b.count: count, &b.field: slice}},
                }),
                None if reach == Reach::Full => self.statements.push(made(mv, b, parent, at, count, slice)),
                None => {}
            }
        }
        self.gone.extend(have.into_values().filter_map(|p| p.get("_id").cloned()));
        Ok(())
    }

    /// Deletes the pages past the end first: a page's place is unique
    /// per parent, and the upserts may reuse one.
    async fn send(self, cx: &mut Cx<'_>, mv: &ActiveMove) -> Result<()> {
        let to = &mv.spec.to.collection;
        if !self.gone.is_empty() {
            let coll = cx.db.collection::<BsonDoc>(to);
            crate::store::session::in_session!(coll.delete_many(doc! {"_id": {"$in": self.gone}}), cx.session())
                .map_err(|e| Error::driver("delete", to.clone(), e))?;
        }
        if !self.statements.is_empty() {
            match crate::store::updates::send_updates(cx, to, self.statements).await {
                // A page another transaction made since this one read the
                // parent's pages: the whole write runs again and sees it.
                Err(e) if e.is_duplicate_key() => {
                    return Err(Error::TransactionContended {
                        operation: "making a move's pages",
                        namespace: to.clone(),
                    })
                }
                other => other?,
            };
        }
        Ok(())
    }
}
