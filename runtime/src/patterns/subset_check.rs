//! Verify and repair of subsets (invariant I3 of the consistency
//! contract): each parent's array holds exactly the top N of its children.
//! A scan (on the engine of [`crate::store::scan`]) reads the parents in
//! batches of `_id` order and, for each, the top N of its children (one
//! read per parent); a repair rebuilds the arrays that differ, under the
//! subset's change counter, so a rebuild racing a child's write is redone
//! by that write and a batch done twice rebuilds nothing wrong.

use crate::error::{show_id, Result};
use crate::schema::graph::SubsetTarget;
use crate::store::page::Page;
use crate::store::scan::{count, At, Parts, Report, ScanPart};
use futures::future::BoxFuture;
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::Database;
use std::sync::Arc;

/// The parts of a scan of one subset: its parents.
pub(crate) fn parts(target: &'static SubsetTarget) -> Parts {
    vec![Arc::new(Parents(target))]
}

/// The parents of one subset.
struct Parents(&'static SubsetTarget);

impl ScanPart for Parents {
    fn label(&self) -> String {
        format!("{}.{}", self.0.parent, self.0.rel.field)
    }

    fn collections(&self) -> Vec<&'static str> {
        vec![self.0.parent, self.0.spec.child]
    }

    fn total<'a>(&'a self, db: &'a Database) -> BoxFuture<'a, Result<u64>> {
        Box::pin(count(db, self.0.parent, doc! {}))
    }

    fn batch<'a>(&'a self, at: At<'a>, report: &'a mut Report) -> BoxFuture<'a, Result<Option<Bson>>> {
        Box::pin(self.one_batch(at, report))
    }
}

impl Parents {
    /// One batch of parents: each one's stored array against the top N of
    /// its children, rebuilt when they differ.
    async fn one_batch(&self, at: At<'_>, report: &mut Report) -> Result<Option<Bson>> {
        let target = self.0;
        let field = target.rel.field;
        let page = Page { filter: &doc! {}, after: at.after, size: at.size };
        let parents = page.docs(&at.db.collection::<BsonDoc>(target.parent), doc! {"_id": 1, field: 1}, None).await?;
        let Some(last) = parents.last().and_then(|d| d.get("_id")).cloned() else { return Ok(None) };
        for parent in &parents {
            report.scanned += 1;
            let Some(id) = parent.get("_id") else { continue };
            let stored: Vec<BsonDoc> = parent
                .get_array(field)
                .map(|a| a.iter().filter_map(Bson::as_document).cloned().collect())
                .unwrap_or_default();
            let expected = target.expected(at.db, id).await?;
            if stored == expected {
                continue;
            }
            report.stale += 1;
            report.note(|| {
                format!(
                    "subset {}.{field} of {}: holds {} summaries where its children give {}{}",
                    target.parent,
                    show_id(id),
                    stored.len(),
                    expected.len(),
                    if stored.len() == expected.len() { " different ones" } else { "" }
                )
            });
            if at.fix {
                target.rebuild(at.db, id).await?;
                report.fixed += 1;
            }
        }
        Ok(Some(last))
    }
}
