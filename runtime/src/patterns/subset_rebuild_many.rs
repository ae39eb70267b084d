//! The rebuild of many parents' subsets in a constant number of round
//! trips (issue 40): what a copy rewritten in the children of many parents
//! owes their subsets. Each page of parents costs five commands, however
//! many parents it holds, where [`SubsetTarget::rebuild_in`] costs three per
//! parent: the counters bumped (`updateMany`) and read (`find`), every
//! parent's first children read at once (`$documents` and a `$lookup`, as
//! `latest_per_parent` reads them), every subset written in one `update`
//! command of statements guarded by their counters, and the counters read
//! again. A parent whose guard another change beat, or whose children a
//! summary over `max_bytes` left short, is rebuilt alone, as before.
//!
//! The guard is the one of [`SubsetTarget::rebuild_in`]: a write of a
//! child bumps its parent's counter after the child is written, so a
//! counter read after the bump and before the children are read names an
//! epoch whose changes the read sees, and a statement guarded by it lands
//! only if no change came in since.

use super::subset_rebuild::counter_value;
use crate::error::{Error, Result};
use crate::schema::graph::SubsetTarget;
use crate::store::page::id_pages;
use crate::store::path::id_key;
use crate::store::session::{collect_aggregate, in_session, plain, Cx};
use crate::store::updates::send_updates;
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use std::collections::HashMap;

impl SubsetTarget {
    /// Rebuilds the subsets of `parents` (see the module's head); on a
    /// deployment without `$documents` (MongoDB before 5.1), one by one.
    pub(crate) async fn rebuild_many(&self, cx: &mut Cx<'_>, parents: &[Bson]) -> Result<()> {
        let batched = crate::client::deployment::supports(cx.db.client(), crate::client::deployment::DOCUMENTS_STAGE);
        if parents.len() < 2 || !batched {
            for parent in parents {
                self.rebuild_in(cx, parent).await?;
            }
            return Ok(());
        }
        for page in id_pages(parents) {
            for parent in self.rebuild_page(cx, page).await? {
                self.rebuild_in(cx, &parent).await?;
            }
        }
        Ok(())
    }

    /// One page of [`Self::rebuild_many`]; the parents left to rebuild alone.
    async fn rebuild_page(&self, cx: &mut Cx<'_>, page: &[Bson]) -> Result<Vec<Bson>> {
        let parents = cx.db.collection::<BsonDoc>(self.parent);
        let (n_path, r_path) = (format!("{}.n", self.counter()), format!("{}.r", self.counter()));
        let filter = doc! {"_id": {"$in": page}};
        in_session!(parents.update_many(filter.clone(), doc! {"$inc": { n_path.clone(): 1_i64 }}), cx.session())
            .map_err(|e| Error::driver("update", self.parent, e))?;
        let epochs = self.counters(cx, &filter, &n_path).await?;
        let vias = self.stamped_vias(cx.graph);
        let children = self.first_children(cx, &epochs, &vias).await?;
        let mut alone = Vec::new();
        let mut statements = Vec::new();
        for (key, (parent, epoch)) in &epochs {
            let found = children.get(key).map(Vec::as_slice).unwrap_or_default();
            let expected = self.expected_of(found, &vias);
            if expected.summaries.len() < self.max as usize && found.len() == self.max as usize {
                // Summaries left out made room for children not read.
                alone.push(parent.clone());
                continue;
            }
            let expected = self.warned(parent, expected);
            statements.push(doc! {
                "q": {"_id": parent.clone(), n_path.clone(): *epoch},
                "u": {"$set": expected.set(self, *epoch)},
            });
        }
        if !statements.is_empty() {
            send_updates(cx, self.parent, statements).await?;
        }
        // A parent whose rebuilt epoch is behind its own: another change
        // beat the guard, and no later rebuild has written yet.
        let written = self.counters(cx, &filter, &r_path).await?;
        for (key, (parent, epoch)) in epochs {
            let behind = written.get(&key).is_some_and(|(_, r)| *r < epoch);
            if behind && !alone.contains(&parent) {
                alone.push(parent);
            }
        }
        Ok(alone)
    }

    /// The counter at `path` of each parent `filter` matches, by id key.
    async fn counters(&self, cx: &mut Cx<'_>, filter: &BsonDoc, path: &str) -> Result<HashMap<String, (Bson, i64)>> {
        let parents = cx.db.collection::<BsonDoc>(self.parent);
        let find = parents.find(filter.clone()).projection(doc! { self.counter(): 1 });
        let find = find.selection_criteria(crate::store::primary());
        let found =
            crate::store::session::collect(find, cx.session(), self.parent, |raw| plain(self.parent, raw)).await?;
        Ok(found
            .iter()
            .filter_map(|d| d.get("_id").map(|id| (id_key(id), (id.clone(), counter_value(d, path)))))
            .collect())
    }

    /// The first `max` children of each parent of `epochs`, in the
    /// subset's order, in one `aggregate`.
    async fn first_children(
        &self,
        cx: &mut Cx<'_>,
        epochs: &HashMap<String, (Bson, i64)>,
        vias: &[&'static str],
    ) -> Result<HashMap<String, Vec<BsonDoc>>> {
        if epochs.is_empty() {
            return Ok(HashMap::new());
        }
        let mut pipeline = vec![doc! {"$sort": self.read_order()}, doc! {"$limit": i64::from(self.max)}];
        if let Some(projection) = self.child_projection(vias) {
            pipeline.push(doc! {"$project": projection});
        }
        let ids: Vec<BsonDoc> = epochs.values().map(|(id, _)| doc! {"_id": {"$literal": id.clone()}}).collect();
        let stages = vec![
            doc! {"$documents": ids},
            doc! {"$lookup": {
                "from": self.spec.child, "localField": "_id", "foreignField": self.parent_field,
                "pipeline": pipeline, "as": "children",
            }},
        ];
        let db = cx.db;
        let aggregate = db.aggregate(stages).selection_criteria(crate::store::primary());
        let groups =
            collect_aggregate(aggregate.with_type(), cx.session(), self.spec.child, |raw| plain(self.spec.child, raw))
                .await?;
        let mut out = HashMap::new();
        for group in groups {
            let Some(parent) = group.get("_id") else { continue };
            let children = group.get_array("children").map(|c| c.iter().filter_map(Bson::as_document).cloned());
            out.insert(id_key(parent), children.map(Iterator::collect).unwrap_or_default());
        }
        Ok(out)
    }
}
