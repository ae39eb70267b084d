//! Verify and repair of bucket documents (invariant I4 of the consistency
//! contract): in every bucket the `count` equals the array's length, no
//! page holds more than its `size`, and each parent's pages run 1, 2, 3, ..
//! with no gap and no page twice (time buckets: no window twice, each
//! `start` on a window boundary).
//!
//! A scan reads the buckets parent by parent (in the order of the unique
//! `{parent, page}` index), the lengths computed by the server so the
//! elements never travel. A repair fixes what has one right answer: a
//! `count` that differs from the length is recounted by the server in one
//! pipeline update (`count = $size(array)`), atomic with concurrent
//! appends. The rest is reported, not touched, because fixing it means
//! moving elements between pages, which changes what readers of a page
//! see: a page over its size, a gap, a page stored twice (the unique index
//! of `ensure_indexes` prevents that one), a misaligned window.
//!
//! A counter bucket (`#[bucket(counter, ..)]`) stores no elements, so its
//! counts cannot be checked against anything: a scan checks that each
//! count is a whole number not below zero (and the sum, where declared, a
//! number), that each window starts on its boundary, and that no window is
//! stored twice; it reports what it finds and repair writes nothing, since
//! every fix would guess at events nobody kept.
//!
//! A scan runs on the engine of [`crate::store::scan`], resumable from a
//! checkpoint (the last parent done) and idempotent.

use crate::error::{show_id, Error, Result};
use crate::schema::document::{BucketSpec, Relation, RelationKind, Schema};
use crate::store::page::after;
use crate::store::primary;
use crate::store::scan::{count, At, Parts, Report, ScanPart};
use crate::store::session::{collect_aggregate, plain};
use futures::future::BoxFuture;
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::Database;
use std::sync::Arc;

/// One bucket array of one document type.
#[derive(Debug, Clone, Copy)]
pub struct BucketArray {
    /// The bucket document type.
    pub schema: &'static Schema,
    /// The array.
    pub rel: &'static Relation,
    /// How buckets are keyed and filled.
    pub spec: &'static BucketSpec,
}

impl BucketArray {
    /// `comments.comments`
    pub fn label(&self) -> String {
        format!("{}.{}", self.schema.collection, self.rel.field)
    }
    /// The field ordering a parent's buckets: the page, or the window start.
    fn order(&self) -> &'static str {
        if self.spec.window_ms.is_some() {
            self.spec.start
        } else {
            self.spec.page
        }
    }
}

/// Every bucket array of the program, by collection.
///
/// ```
/// # use docrel::{Document, bson::oid::ObjectId};
/// # use serde::{Deserialize, Serialize};
/// # #[derive(Document, Serialize, Deserialize)]
/// # #[document(collection = "posts")]
/// # struct Post { #[serde(rename = "_id")] id: i32 }
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "comment_pages")]
/// struct CommentPage {
///     #[serde(rename = "_id")] id: ObjectId,
///     #[parent_ref(to = Post)] post: i32,
///     page: i32,
///     count: i32,
///     #[bucket(size = 50)] comments: Vec<String>,
/// }
/// let arrays = docrel::check::bucket_arrays();
/// assert!(arrays.iter().any(|a| a.label() == "comment_pages.comments"));
/// ```
pub fn bucket_arrays() -> Vec<BucketArray> {
    arrays_in(crate::schema::graph::graph())
}

/// [`bucket_arrays`] of the graph `g` (a database's, with its stored types).
pub(crate) fn arrays_in(g: &'static crate::schema::graph::Graph) -> Vec<BucketArray> {
    let mut out = Vec::new();
    for schema in g.types() {
        for rel in schema.relations {
            if let (RelationKind::Bucket, Some(spec)) = (rel.kind, rel.bucket.as_ref()) {
                out.push(BucketArray { schema, rel, spec });
            }
        }
    }
    out
}

/// The parts of a scan of one bucket array: the array itself.
pub(crate) fn parts(array: BucketArray) -> Parts {
    vec![Arc::new(array)]
}

pub(crate) fn arrays_of(g: &'static crate::schema::graph::Graph, collection: &str) -> Vec<BucketArray> {
    arrays_in(g).into_iter().filter(|a| a.schema.collection == collection).collect()
}

pub(crate) fn known(g: &'static crate::schema::graph::Graph, collection: &str) -> Result<Vec<BucketArray>> {
    let found = arrays_of(g, collection);
    if found.is_empty() {
        let mut known: Vec<&str> = arrays_in(g).iter().map(|a| a.schema.collection).collect();
        known.dedup();
        return Err(Error::Invalid {
            what: crate::error::Misuse::Collection,
            message: format!(
                "collection `{collection}` holds no `#[bucket(..)]` array; the bucket collections of this program \
                 are: [{}]. Check the name, and that the types are linked into this binary",
                known.join(", ")
            ),
        });
    }
    Ok(found)
}

/// One bucket as the scan sees it.
#[derive(Debug)]
struct Seen {
    id: Bson,
    parent: Bson,
    key: Option<Bson>,
    count: Option<i64>,
    len: i64,
    /// A counter's sum, as stored.
    sum: Option<Bson>,
}

impl Seen {
    fn read(d: &BsonDoc) -> Seen {
        Seen {
            id: d.get("_id").cloned().unwrap_or(Bson::Null),
            parent: d.get("p").cloned().unwrap_or(Bson::Null),
            key: d.get("k").cloned(),
            count: as_i64(d.get("c")),
            len: as_i64(d.get("n")).unwrap_or(0),
            sum: d.get("s").cloned(),
        }
    }
}

/// A stored count as an integer (a whole double counts).
pub(crate) fn as_i64(v: Option<&Bson>) -> Option<i64> {
    match v? {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        Bson::Double(d) if d.fract() == 0.0 => Some(*d as i64),
        _ => None,
    }
}

/// A bucket array scanned parent by parent.
impl ScanPart for BucketArray {
    fn label(&self) -> String {
        BucketArray::label(self)
    }

    fn collections(&self) -> Vec<&'static str> {
        vec![self.schema.collection]
    }

    fn total<'a>(&'a self, db: &'a Database) -> BoxFuture<'a, Result<u64>> {
        Box::pin(count(db, self.schema.collection, doc! {}))
    }

    fn batch<'a>(&'a self, at: At<'a>, report: &'a mut Report) -> BoxFuture<'a, Result<Option<Bson>>> {
        Box::pin(self.one_batch(at, report))
    }
}

impl BucketArray {
    /// One batch of parents; the last parent done, or `None` at the end.
    async fn one_batch(&self, at: At<'_>, report: &mut Report) -> Result<Option<Bson>> {
        let parent = self.spec.parent;
        let mut seen = self.buckets(at.db, after(&doc! {}, parent, at.after), Some(at.size)).await?;
        let Some(last) = seen.last().map(|s| s.parent.clone()) else { return Ok(None) };
        if seen.len() >= at.size {
            // The last parent may go on past the batch: read all of it.
            seen.retain(|s| s.parent != last);
            seen.extend(self.buckets(at.db, doc! { parent: last.clone() }, None).await?);
        }
        let mut start = 0;
        while start < seen.len() {
            let end =
                seen[start..].iter().position(|s| s.parent != seen[start].parent).map_or(seen.len(), |n| start + n);
            self.check_parent(at, &seen[start..end], report).await?;
            start = end;
        }
        Ok(Some(last))
    }

    /// The buckets matching `filter` in the order of the unique
    /// `{parent, page}` index, `limit` of them; their lengths computed by
    /// the server, so the elements never travel.
    async fn buckets(&self, db: &Database, filter: BsonDoc, limit: Option<usize>) -> Result<Vec<Seen>> {
        let spec = self.spec;
        let collection = self.schema.collection;
        let mut pipeline = vec![doc! {"$match": filter}, doc! {"$sort": { spec.parent: 1, self.order(): 1, "_id": 1 }}];
        if let Some(limit) = limit {
            pipeline.push(doc! {"$limit": limit as i64});
        }
        let field = format!("${}", self.rel.field);
        // A time bucket is keyed by its window and spill number (none in a
        // window's first bucket: 1).
        let key: Bson = match spec.window_ms {
            Some(_) if spec.counter => vec![Bson::String(format!("${}", spec.start)), Bson::Int32(1)].into(),
            Some(_) => {
                vec![Bson::String(format!("${}", spec.start)), doc! {"$ifNull": [format!("${}", spec.page), 1]}.into()]
                    .into()
            }
            None => format!("${}", spec.page).into(),
        };
        let mut project = doc! {
            "_id": 1,
            "p": format!("${}", spec.parent),
            "k": key,
            "c": format!("${}", spec.count),
            "n": {"$cond": [{"$isArray": &field}, {"$size": &field}, 0]},
        };
        if let Some(sum) = spec.sum {
            project.insert("s", format!("${sum}"));
        }
        pipeline.push(doc! {"$project": project});
        let coll = db.collection::<BsonDoc>(collection);
        let aggregate = coll.aggregate(pipeline).selection_criteria(primary()).with_type();
        collect_aggregate(aggregate, None, collection, |raw| Ok(Seen::read(&plain(collection, raw)?))).await
    }

    /// Checks (and, repairing, recounts) the buckets of one parent.
    async fn check_parent(&self, at: At<'_>, buckets: &[Seen], report: &mut Report) -> Result<()> {
        report.parents += 1;
        let parent = buckets.first().map(|b| show_id(&b.parent)).unwrap_or_default();
        for b in buckets {
            report.scanned += 1;
            if self.spec.counter {
                self.check_counter(b, &parent, report);
                continue;
            }
            self.check_count(at, b, &parent, report).await?;
            self.check_size(b, &parent, report);
        }
        let keys: Vec<&Bson> = buckets.iter().filter_map(|b| b.key.as_ref()).collect();
        self.check_duplicates(&keys, &parent, report);
        match self.spec.window_ms {
            None => self.check_pages(&keys, &parent, report),
            Some(window) => self.check_windows(&keys, window, &parent, report),
        }
        Ok(())
    }

    /// A `count` that is not the array's length: recounted when repairing.
    async fn check_count(&self, at: At<'_>, b: &Seen, parent: &str, report: &mut Report) -> Result<()> {
        if b.count == Some(b.len) {
            return Ok(());
        }
        report.miscounted += 1;
        report.note(|| {
            format!(
                "{}: bucket {} of parent {parent} has `{}` {} but holds {}: {}",
                self.label(),
                show_id(&b.id),
                self.spec.count,
                b.count.map_or_else(|| "missing".to_owned(), |c| c.to_string()),
                b.len,
                if at.fix { "recounted" } else { "repair recounts it" }
            )
        });
        if at.fix {
            report.fixed += self.recount(at.db, b).await?;
        }
        Ok(())
    }

    /// A counter's count is a whole number not below zero, its sum a
    /// number: reported, never rewritten (there is nothing to recount).
    fn check_counter(&self, b: &Seen, parent: &str, report: &mut Report) {
        let sum_ok = matches!(&b.sum, None | Some(Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_)));
        if b.count.is_some_and(|c| c >= 0) && sum_ok {
            return;
        }
        report.miscounted += 1;
        report.unfixable += 1;
        let sum = self.spec.sum.unwrap_or_default();
        report.note(|| {
            format!(
                "{}: window {} of parent {parent} has `{}` {}{}: the events are not stored, so nothing can recount \
                 it; correct it by hand",
                self.label(),
                show_id(&b.id),
                self.spec.count,
                b.count.map_or_else(|| "missing or not a whole number".to_owned(), |c| c.to_string()),
                if sum_ok { String::new() } else { format!(" and `{sum}` not a number") }
            )
        });
    }

    fn check_size(&self, b: &Seen, parent: &str, report: &mut Report) {
        let Some(size) = self.spec.bound() else { return };
        if b.len > i64::from(size) {
            report.over_size += 1;
            report.unfixable += 1;
            report.note(|| {
                format!(
                    "{}: bucket {} of parent {parent} holds {} elements, over its size {size}: move the extra ones to \
                     a new page by hand",
                    self.label(),
                    show_id(&b.id),
                    b.len
                )
            });
        }
    }

    fn check_duplicates(&self, keys: &[&Bson], parent: &str, report: &mut Report) {
        let mut distinct: Vec<(&Bson, u64)> = Vec::new();
        for k in keys {
            match distinct.iter_mut().find(|(d, _)| d == k) {
                Some((_, n)) => *n += 1,
                None => distinct.push((k, 1)),
            }
        }
        for (k, n) in distinct.into_iter().filter(|(_, n)| *n > 1) {
            report.duplicates += n - 1;
            report.unfixable += n - 1;
            report.note(|| {
                format!(
                    "{}: parent {parent} has `{}` {} stored {n} times: merge the buckets by hand, then run \
                     `ensure_indexes` (its unique index prevents this)",
                    self.label(),
                    self.order(),
                    show_id(k)
                )
            });
        }
    }

    /// Pages run 1, 2, 3, .. with no gap.
    fn check_pages(&self, keys: &[&Bson], parent: &str, report: &mut Report) {
        let mut pages: Vec<i64> = keys.iter().filter_map(|k| as_i64(Some(k))).collect();
        pages.sort_unstable();
        pages.dedup();
        let mut expected = 1;
        for page in pages {
            if page > expected {
                let missing = (page - expected) as u64;
                report.gaps += missing;
                report.unfixable += missing;
                report.note(|| {
                    format!(
                        "{}: parent {parent} has no page {}{}: readers of that page number find nothing; renumber \
                         the pages by hand",
                        self.label(),
                        expected,
                        if missing > 1 { format!("..{}", page - 1) } else { String::new() }
                    )
                });
            }
            if page >= expected {
                expected = page + 1;
            }
        }
    }

    /// Every window starts on a boundary.
    fn check_windows(&self, keys: &[&Bson], window: i64, parent: &str, report: &mut Report) {
        for k in keys {
            let Some(Bson::DateTime(start)) = k.as_array().and_then(|k| k.first()) else { continue };
            if start.timestamp_millis().rem_euclid(window) != 0 {
                report.misaligned += 1;
                report.unfixable += 1;
                report.note(|| {
                    format!(
                        "{}: parent {parent} has a bucket starting at {start}, not on a {window} ms boundary: \
                         appends never reach it; move its elements by hand",
                        self.label()
                    )
                });
            }
        }
    }

    /// Sets the bucket's count to its array's length, on the server. The
    /// filter carries the parent and page (or start) besides the `_id`: a
    /// bucket collection's shard key is drawn from them, so the write
    /// reaches one shard.
    async fn recount(&self, db: &Database, b: &Seen) -> Result<u64> {
        let collection = self.schema.collection;
        let field = format!("${}", self.rel.field);
        let mut filter = doc! {"_id": b.id.clone(), self.spec.parent: b.parent.clone()};
        if let Some(key) = &b.key {
            filter.insert(self.order(), key.clone());
        }
        let update = vec![doc! {"$set": {
            self.spec.count: {"$cond": [{"$isArray": &field}, {"$size": &field}, 0]},
        }}];
        let r = db
            .collection::<BsonDoc>(collection)
            .update_one(filter, update)
            .await
            .map_err(|e| Error::driver("update", collection, e))?;
        Ok(r.modified_count)
    }
}
