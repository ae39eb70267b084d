//! The rebuild of one parent's subset from the full collection, under the
//! subset's change counter (see the concurrency notes of
//! [`crate::patterns::subset`]), and what the subset should hold.
//!
//! A child whose summary is larger than the subset's `max_bytes` is left
//! out: the subset holds the first N children whose summaries fit. Such a
//! child can only come from a write whose result was not known before it
//! was sent (an update, a copy rewritten from its source): insert, replace
//! and save refuse it before anything is written. Leaving it out keeps
//! the parent under its size bound and keeps every later rebuild of the
//! parent working; the write that made it too large says so.

use crate::error::{Error, Result};
use crate::schema::graph::SubsetTarget;
use crate::store::path::lookup;
use crate::store::primary;
use crate::store::session::{collect, in_session, plain, Cx};
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::Database;

/// How many times a rebuild retries when other changes keep coming in
/// between its read and its write.
const REBUILD_ATTEMPTS: u32 = 20;

pub(super) fn counter_value(doc: &BsonDoc, path: &str) -> i64 {
    lookup(doc, path).and_then(|v| v.as_i64().or_else(|| v.as_i32().map(i64::from))).unwrap_or(0)
}

/// What a parent's subset should hold, read from its children.
#[derive(Debug, Default)]
pub(crate) struct Expected {
    /// The summaries, in the subset's order.
    pub(crate) summaries: Vec<BsonDoc>,
    /// The children left out, ahead of the last summary kept, for a
    /// summary over `max_bytes`: their `_id` and the summary's size.
    pub(crate) left_out: Vec<(Bson, usize)>,
    /// The versions of the copies the summaries carry, when the subset
    /// rewrites them in place (see `subset_carried.rs`).
    pub(crate) stamps: Option<BsonDoc>,
}

impl Expected {
    /// The `$set` of a rebuild of the subset at `field` written at `epoch`.
    pub(crate) fn set(&self, target: &SubsetTarget, epoch: i64) -> BsonDoc {
        let mut set = doc! { target.rel.field: self.summaries.clone(), format!("{}.r", target.counter()): epoch };
        if let Some(stamps) = &self.stamps {
            set.insert(target.stamps_path(), stamps.clone());
        }
        set
    }
}

impl SubsetTarget {
    /// Rebuilds one parent's subset from the full collection: its N first
    /// (or last) children in order, replacing the array. Returns how many
    /// summaries it holds.
    pub async fn rebuild(&self, db: &Database, parent: &Bson) -> Result<usize> {
        let cx = &mut Cx::new(db, None);
        let rebuilt =
            crate::client::trace::Op::new("subset_rebuild", self.parent).run(self.rebuild_in(cx, parent)).await?;
        Ok(rebuilt.summaries.len())
    }

    /// [`Self::rebuild`] in the caller's session, when given; what it wrote
    /// (nothing, for a parent that does not exist).
    pub(crate) async fn rebuild_in(&self, cx: &mut Cx<'_>, parent: &Bson) -> Result<Expected> {
        let parents = cx.db.collection::<BsonDoc>(self.parent);
        let (counter, n_path, r_path) =
            (self.counter(), format!("{}.n", self.counter()), format!("{}.r", self.counter()));
        for attempt in 1..=REBUILD_ATTEMPTS {
            if attempt > 1 {
                crate::client::trace::retry("subset rebuild", attempt);
            }
            let bumped = in_session!(
                parents
                    .find_one_and_update(doc! {"_id": parent.clone()}, doc! {"$inc": { n_path.clone(): 1_i64 }})
                    .return_document(mongodb::options::ReturnDocument::After)
                    .projection(doc! { counter.clone(): 1 }),
                cx.session()
            )
            .map_err(|e| Error::driver("findAndModify", self.parent, e))?;
            // No parent: nothing holds the subset.
            let Some(bumped) = bumped else { return Ok(Expected::default()) };
            let epoch = counter_value(&bumped, &n_path);
            let expected = self.expected_in(cx, parent).await?;
            let written = in_session!(
                parents.update_one(
                    doc! {"_id": parent.clone(), n_path.clone(): epoch},
                    doc! {"$set": expected.set(self, epoch)}
                ),
                cx.session()
            )
            .map_err(|e| Error::driver("update", self.parent, e))?;
            if written.matched_count == 1 {
                return Ok(self.warned(parent, expected));
            }
            let now = in_session!(
                parents
                    .find_one(doc! {"_id": parent.clone()})
                    .projection(doc! { counter.clone(): 1 })
                    .selection_criteria(primary()),
                cx.session()
            )
            .map_err(|e| Error::driver("find", self.parent, e))?;
            match now {
                // A rebuild that began after this one's bump was written: it saw all this one saw.
                Some(now) if counter_value(&now, &r_path) > epoch => return Ok(self.warned(parent, expected)),
                Some(_) => continue,
                None => return Ok(Expected::default()),
            }
        }
        Err(Error::SubsetContended {
            parent: self.parent,
            id: crate::error::show_id(parent),
            field: self.rel.field,
            attempts: REBUILD_ATTEMPTS,
        })
    }

    /// `expected`, once a `WARN` event names the children it left out.
    pub(super) fn warned(&self, parent: &Bson, expected: Expected) -> Expected {
        for (child, bytes) in &expected.left_out {
            tracing::warn!(
                target: "docrel",
                subset = format!("{}.{}", self.parent, self.rel.field),
                parent = %crate::error::show_id(parent),
                child = %crate::error::show_id(child),
                bytes,
                "a summary over `max_bytes` is left out of its subset until it fits"
            );
        }
        expected
    }

    /// What the parent's subset should hold, read from the full collection.
    pub async fn expected(&self, db: &Database, parent: &Bson) -> Result<Vec<BsonDoc>> {
        Ok(self.expected_in(&mut Cx::new(db, None), parent).await?.summaries)
    }

    /// [`Self::expected`] read in the caller's session, when given, with the
    /// children it left out. One read, and one more each time children
    /// left out leave room for others.
    pub(crate) async fn expected_in(&self, cx: &mut Cx<'_>, parent: &Bson) -> Result<Expected> {
        let coll = cx.db.collection::<BsonDoc>(self.spec.child);
        let vias = self.stamped_vias(cx.graph);
        let projection = self.child_projection(&vias);
        let (child, max) = (self.spec.child, self.max as usize);
        let mut limit = max;
        loop {
            let mut find = coll
                .find(doc! { self.parent_field: parent.clone() })
                .selection_criteria(primary())
                .sort(self.read_order())
                .limit(limit as i64)
                .batch_size(limit as u32);
            if let Some(p) = &projection {
                find = find.projection(p.clone());
            }
            let children = collect(find, cx.session(), child, |raw| plain(child, raw)).await?;
            let out = self.expected_of(&children, &vias);
            if out.summaries.len() == max || children.len() < limit {
                return Ok(out);
            }
            // Children left out made room: read as many more.
            limit += max - out.summaries.len();
        }
    }

    /// The order children are read in: the subset's, reversed when it
    /// keeps the last ones.
    pub(super) fn read_order(&self) -> BsonDoc {
        let mut sort = self.order();
        if self.spec.keep_last {
            for (_, d) in sort.iter_mut() {
                if let Bson::Int32(v) = d {
                    *v = -*v;
                }
            }
        }
        sort
    }

    /// The fields a summary reads of a child, with `_id` (and what the
    /// stamps of `vias` need); `None`: all.
    pub(super) fn child_projection(&self, vias: &[&'static str]) -> Option<BsonDoc> {
        self.spec.fields.map(|fields| {
            let mut p: BsonDoc = fields.iter().map(|f| ((*f).to_owned(), Bson::Int32(1))).collect();
            p.insert("_id", 1);
            Self::stamp_projection(vias, &mut p);
            p
        })
    }

    /// What the subset holds of `children`, read in [`Self::read_order`]:
    /// the first `max` summaries that fit, in the subset's order, and the
    /// children left out ahead of them.
    /// With `vias`, the stamps of the children summarized.
    pub(super) fn expected_of(&self, children: &[BsonDoc], vias: &[&'static str]) -> Expected {
        let mut out = Expected::default();
        let mut kept = Vec::new();
        for c in children {
            let summary = self.summarize(c);
            match self.oversize(&summary) {
                Some(bytes) => out.left_out.push((c.get("_id").cloned().unwrap_or(Bson::Null), bytes)),
                None if out.summaries.len() < self.max as usize => {
                    out.summaries.push(summary);
                    kept.push(c);
                }
                None => {}
            }
        }
        out.stamps = self.stamps_of(vias, kept);
        if self.spec.keep_last {
            out.summaries.reverse();
        }
        out
    }

    /// The error of a write that made `child`'s summary too large to be
    /// kept in the subset of `parent`, which was rebuilt without it.
    pub(crate) fn left_out_error(&self, child: &Bson, bytes: usize, parent: &Bson) -> Error {
        let done = format!(
            "the `{}` {} was written, and the subset of {} rebuilt without it: it stays out while its summary is \
             too large",
            self.spec.child_type,
            crate::error::show_id(child),
            crate::error::show_id(parent)
        );
        self.too_large(bytes, &done)
    }
}

/// Rebuilds the subsets that new parents of `schema` (their `ids`) keep:
/// a new parent starts with empty subsets, and children written before it
/// (naming it while it did not exist) would otherwise never be summarized.
/// One `distinct` per subset and page of ids finds the parents that have
/// children; only those are rebuilt.
pub(crate) async fn rebuild_kept(
    cx: &mut Cx<'_>,
    schema: &'static crate::schema::document::Schema,
    ids: &[Bson],
) -> Result<()> {
    for subset in cx.graph.subsets_kept_by(schema) {
        let children = cx.db.collection::<BsonDoc>(subset.spec.child);
        for page in crate::store::page::id_pages(ids) {
            let with_children = in_session!(
                children
                    .distinct(subset.parent_field, doc! { subset.parent_field: {"$in": page} })
                    .selection_criteria(primary()),
                cx.session()
            )
            .map_err(|e| Error::driver("distinct", subset.spec.child, e))?;
            for parent in with_children {
                subset.rebuild_in(cx, &parent).await?;
            }
        }
    }
    Ok(())
}
