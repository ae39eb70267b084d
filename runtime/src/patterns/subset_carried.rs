//! A copy rewritten in children whose summaries carry it (issue 40): a
//! user renamed whose comments sit in many recipes' newest-N lists. The
//! summaries are rewritten where they are, with the values the fan-out
//! wrote: one read of the children of the source (their ids and parents),
//! then one `update` command of one statement per parent (a pipeline that
//! rewrites the summaries naming those children), where a rebuild of each
//! parent's subset would cost five commands a page of parents.
//!
//! # The guard
//!
//! Two fan-outs of one source can land out of order (the summaries of the
//! older one after those of the newer). Each parent therefore keeps, per
//! source, the newest version its summaries were written at
//! (`_docrel.subsets.<array>.s.<via>.<source id>`): a statement of version
//! `v` writes only where that stamp is at most `v`, and moves it to `v`.
//! The statement also bumps the subset's change counter, in every parent
//! of the source's children (whether its summaries name them or not), so a
//! rebuild that read those children before the fan-out rewrote them is
//! refused and runs again; every rebuild writes the stamps of the versions
//! its children record. A child written with an older copy after this read
//! (an insert racing the rename) is confirmed by its own write, which
//! rebuilds its parent's subset ([`crate::denormalize::fill`]).
//!
//! The children are read after their copies were rewritten, not before as
//! a hand-written rename may read them: read before, a comment inserted in
//! between with the old name would keep it in its recipe's summary.
//!
//! Only what can be rewritten so is: summaries identified by the child's
//! `_id` with the copies among their fields, no byte bound (a longer value
//! could pass it), no order on a copied field (it would change), copies at
//! the top of the child, outside a transaction the caller opened (whose
//! snapshot would not see writes of others). Anything else is rebuilt.

use crate::error::Result;
use crate::schema::graph::{Graph, Shape, SubsetTarget, Target};
use crate::store::path::{id_key, lookup, overlaps};
use crate::store::session::{collect, plain, Cx};
use crate::store::updates::send_updates;
use mongodb::bson::{doc, Bson, Document as BsonDoc};

/// What a fan-out wrote into the holders of one source: its id, its
/// version, and the copies' values by copy field.
pub(crate) struct Written<'a> {
    /// The source's id.
    pub(crate) id: &'a Bson,
    /// The version the copies were written at.
    pub(crate) version: i64,
    /// The copies' values, by copy field.
    pub(crate) values: BsonDoc,
}

/// Parents per `update` command, and the children's ids they may name.
const PARENTS_PER_COMMAND: usize = 1000;
const IDS_PER_COMMAND: usize = 20_000;

impl SubsetTarget {
    /// The reference and the copy fields of `target` this subset's
    /// summaries carry, when they can be rewritten in place (see the
    /// module's head); `None` when the subset must be rebuilt instead.
    pub(crate) fn carried_in_place(&self, target: &Target) -> Option<(&'static str, Vec<&'static str>)> {
        let Shape::Top { via } = target.shape else { return None };
        let fields = self.spec.fields?;
        if self.identity() != Some("_id") || self.spec.max_bytes.is_some() {
            return None;
        }
        let carried: Vec<&'static str> =
            target.fields.iter().map(|(copy, _)| *copy).filter(|c| fields.contains(c)).collect();
        let nested = carried.iter().any(|c| c.contains('.'));
        let ordered_by = self.spec.sort.iter().any(|(f, _)| carried.iter().any(|c| overlaps(f, c)));
        (!carried.is_empty() && !nested && !ordered_by).then_some((via, carried))
    }

    /// The references whose copies this subset's summaries carry in place:
    /// every rebuild stamps their versions.
    pub(crate) fn stamped_vias(&self, g: &Graph) -> Vec<&'static str> {
        let mut out = Vec::new();
        for schema in g.types_of(self.spec.child) {
            for (_, target) in g.held_by(schema) {
                if !g.summaries_of_copies(target).any(|s| s.is_kept_in(self.parent, self.rel)) {
                    continue;
                }
                if let Some((via, _)) = self.carried_in_place(target) {
                    if !out.contains(&via) {
                        out.push(via);
                    }
                }
            }
        }
        out
    }

    /// Where a parent keeps the versions its summaries were written at.
    pub(crate) fn stamps_path(&self) -> String {
        format!("{}.s", self.counter())
    }

    /// The stamps of `children` (as read, with their references `vias`
    /// and the records of those copies): per reference and source, the
    /// highest version a child records. `None` without `vias`.
    pub(crate) fn stamps_of<'c>(
        &self,
        vias: &[&'static str],
        children: impl IntoIterator<Item = &'c BsonDoc>,
    ) -> Option<BsonDoc> {
        if vias.is_empty() {
            return None;
        }
        let mut stamps: BsonDoc = vias.iter().map(|via| ((*via).to_owned(), Bson::Document(BsonDoc::new()))).collect();
        for child in children {
            for via in vias {
                let Some(source) = child.get(*via).filter(|s| **s != Bson::Null) else { continue };
                let key = id_key(source);
                let record = format!("_docrel.copies.{via}.{key}");
                let Some(v) = lookup(child, &record).and_then(|v| v.as_i64().or_else(|| v.as_i32().map(i64::from)))
                else {
                    continue;
                };
                if let Ok(of_via) = stamps.get_document_mut(*via) {
                    let kept = of_via.get_i64(&key).unwrap_or(i64::MIN);
                    of_via.insert(key, v.max(kept));
                }
            }
        }
        Some(stamps)
    }

    /// The fields a rebuild reads of a child for the stamps: each
    /// reference of `vias` and the records of its copies.
    pub(crate) fn stamp_projection(vias: &[&'static str], projection: &mut BsonDoc) {
        for via in vias {
            projection.insert(*via, 1);
            projection.insert(format!("_docrel.copies.{via}"), 1);
        }
    }

    /// Rewrites in place the copies of `target` that this subset's
    /// summaries carry, to what the fan-out `written` wrote into the
    /// children of its source (see the module's head). `false`, with
    /// nothing written, when this subset must be rebuilt instead.
    pub(crate) async fn rewrite_carried(
        &self,
        cx: &mut Cx<'_>,
        target: &Target,
        written: &Written<'_>,
    ) -> Result<bool> {
        let Some((via, carried)) = self.carried_in_place(target) else { return Ok(false) };
        let mut values = BsonDoc::new();
        for copy in carried {
            // A copy the fan-out removed: the rebuild reads what is left.
            let Some(value) = written.values.get(copy) else { return Ok(false) };
            values.insert(copy, value.clone());
        }
        if let Some(s) = cx.session() {
            if crate::store::transaction::in_transaction(s).await {
                return Ok(false);
            }
        }
        let coll = cx.db.collection::<BsonDoc>(self.spec.child);
        let find = coll
            .find(doc! {via: written.id.clone(), self.parent_field: {"$ne": null}})
            .projection(doc! {"_id": 1, self.parent_field: 1})
            .selection_criteria(crate::store::primary());
        let children = collect(find, cx.session(), self.spec.child, |raw| plain(self.spec.child, raw)).await?;
        let mut parents: Vec<(Bson, Vec<Bson>)> = Vec::new();
        let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for child in &children {
            let (Some(id), Some(parent)) = (child.get("_id"), child.get(self.parent_field)) else { continue };
            let i = *at.entry(id_key(parent)).or_insert_with(|| {
                parents.push((parent.clone(), Vec::new()));
                parents.len() - 1
            });
            parents[i].1.push(id.clone());
        }
        let mut statements = Vec::new();
        let mut ids = 0;
        for (parent, children) in &parents {
            if statements.len() == PARENTS_PER_COMMAND || ids + children.len() > IDS_PER_COMMAND {
                send_updates(cx, self.parent, std::mem::take(&mut statements)).await?;
                ids = 0;
            }
            ids += children.len();
            statements.push(self.carried_statement((via, written), parent, children, &values));
        }
        if !statements.is_empty() {
            send_updates(cx, self.parent, statements).await?;
        }
        Ok(true)
    }

    /// The statement of [`Self::rewrite_carried`] for one parent: its
    /// summaries of `children` take `values`, where its stamp of the
    /// source is at most the fan-out's version; the stamp moves to it and
    /// the change counter on.
    fn carried_statement(
        &self,
        (via, written): (&str, &Written<'_>),
        parent: &Bson,
        children: &[Bson],
        values: &BsonDoc,
    ) -> BsonDoc {
        let stamp = format!("{}.{via}.{}", self.stamps_path(), id_key(written.id));
        let (array, counter) = (self.rel.field, self.counter());
        let named = doc! {"$in": ["$$s._id", {"$literal": children}]};
        let rewritten = doc! {"$map": {"input": format!("${array}"), "as": "s", "in": {
            "$cond": [named, {"$mergeObjects": ["$$s", {"$literal": values}]}, "$$s"],
        }}};
        let update = vec![doc! {"$set": {
            array: {"$cond": [{"$isArray": format!("${array}")}, rewritten, format!("${array}")]},
            stamp.clone(): {"$max": [format!("${stamp}"), written.version]},
            format!("{counter}.n"): {"$add": [{"$ifNull": [format!("${counter}.n"), 0_i64]}, 1_i64]},
        }}];
        let newer = doc! {"$or": [{stamp.clone(): {"$lte": written.version}}, {stamp: {"$exists": false}}]};
        doc! {"q": {"_id": parent.clone(), "$and": [newer]}, "u": update, "multi": false}
    }
}
