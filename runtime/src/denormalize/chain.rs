//! Derived of derived: a copy that is itself copied elsewhere (a copy of a
//! copy) or carried by a subset summary. Whenever docrel rewrites copies in
//! some holders (a fan-out, a refresh, a repair, the confirmation of an
//! insert), the change travels the chains the schema graph knows
//! ([`crate::schema::graph::Graph::copies_of_copies`],
//! [`crate::schema::graph::Graph::summaries_of_copies`]), level by level:
//!
//! - the holders are sources of the next level's copies: their version
//!   moved on in the same write as their copies (see `Target::update`), so
//!   the next level is a fan-out of each holder at its new version, under
//!   the fan-out guard, page by page in one `update` command per page;
//! - the holders are children of subsets whose summaries carry the copies:
//!   at the first level of a fan-out (the holders of one source) the
//!   summaries are rewritten in place, one read of the holders and one
//!   `update` command for every parent, where the subset allows it
//!   (`patterns/subset_carried.rs`); otherwise
//!   their parents are found with one `distinct` per level and subset, and
//!   rebuilt under the subset's change counter.
//!
//! A level is named by the holders it rewrote: a filter on the holders'
//! collection (the references to the changed source for a fan-out, the
//! holders' ids for a refresh).

use super::copies::{send_all, version_of, Guard, Values, VERSION_PATH};
use crate::error::{Error, Result};
pub(crate) use crate::patterns::subset_carried::Written;
use crate::schema::graph::{SubsetTarget, Target};
use crate::store::page::Page;
use crate::store::session::{in_session, Cx};
use crate::store::{primary, ID_PAGE};
use mongodb::bson::{doc, Bson, Document as BsonDoc};

/// What a walk of the chains writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    /// Copies of copies and the summaries carrying them: a write outside a
    /// transaction docrel opened.
    All,
    /// Copies of copies only: inside a transactional fan-out, whose
    /// summaries are rebuilt after the commit ([`Reach::Summaries`]).
    Copies,
    /// The summaries only, at every level: after a transactional fan-out
    /// committed its copies.
    Summaries,
    /// As [`Reach::All`], following every level whatever its statements
    /// modified: a retry of a fan-out an earlier attempt may have written
    /// (its statements then modify nothing, and the levels past them
    /// would be skipped).
    Again,
}

/// Holders of `target` whose copies were just rewritten (those `filter`
/// matches in `target.collection`): what is derived from those copies,
/// at every level, is brought up to date as `reach` says.
pub(crate) async fn follow(cx: &mut Cx<'_>, target: &'static Target, filter: BsonDoc, reach: Reach) -> Result<()> {
    walk(cx, target, filter, None, reach).await
}

/// [`follow`] from the holders of `target` that a fan-out of one source
/// wrote (`written`): their summaries are rewritten in place where the
/// subset allows it.
pub(crate) async fn follow_source(
    cx: &mut Cx<'_>,
    target: &'static Target,
    written: &Written<'_>,
    reach: Reach,
) -> Result<()> {
    walk(cx, target, doc! { target.id_path(): written.id.clone() }, Some(written), reach).await
}

/// What a fan-out of the source `id` at `version` writes into `target`:
/// its copies' values, by copy field, taken from the source's `values`.
pub(crate) fn written<'a>(target: &Target, id: &'a Bson, version: i64, values: &(impl Values + ?Sized)) -> Written<'a> {
    let values =
        target.fields.iter().filter_map(|(copy, field)| values.value(field).map(|v| ((*copy).to_owned(), v.clone())));
    Written { id, version, values: values.collect() }
}

async fn walk(
    cx: &mut Cx<'_>,
    target: &'static Target,
    filter: BsonDoc,
    source: Option<&Written<'_>>,
    reach: Reach,
) -> Result<()> {
    if !target.carries() {
        return Ok(());
    }
    let g = cx.graph;
    // A chain without a cycle is never longer than the schema has targets.
    let limit = g.sources().iter().map(|s| g.targets_of(s).len()).sum::<usize>() + 1;
    let mut levels = vec![(target, filter, 1usize)];
    while let Some((target, filter, depth)) = levels.pop() {
        if depth > limit {
            return Err(cycle(target));
        }
        if reach != Reach::Copies {
            for subset in g.summaries_of_copies(target) {
                let rewritten = match source.filter(|_| depth == 1) {
                    Some(written) => subset.rewrite_carried(cx, target, written).await?,
                    None => false,
                };
                if !rewritten {
                    rebuild_parents(cx, target, subset, &filter).await?;
                }
            }
        }
        for next in g.copies_of_copies(target) {
            for holders in relay(cx, target, next, &filter, reach).await? {
                if next.carries() {
                    levels.push((next, doc! { next.id_path(): {"$in": holders} }, depth + 1));
                }
            }
        }
    }
    Ok(())
}

fn cycle(target: &Target) -> Error {
    Error::Invalid {
        what: crate::error::Misuse::Copy,
        message: format!(
            "the copies in `{}` ({}) are copied, through other copies, back into themselves: a copy's source \
             must not be one of its own copies; change one `#[denormalize(from = ..)]` of the cycle",
            target.collection,
            target.copy_paths().join(", ")
        ),
    }
}

/// The parents of the holders `filter` matches (one `distinct`), each
/// subset rebuilt from its children.
async fn rebuild_parents(cx: &mut Cx<'_>, target: &Target, subset: &SubsetTarget, filter: &BsonDoc) -> Result<()> {
    let holders = cx.db.collection::<BsonDoc>(target.collection);
    let parents =
        in_session!(holders.distinct(subset.parent_field, filter.clone()).selection_criteria(primary()), cx.session())
            .map_err(|e| Error::driver("distinct", target.collection, e))?;
    let parents: Vec<Bson> = parents.into_iter().filter(|p| *p != Bson::Null).collect();
    subset.rebuild_many(cx, &parents).await
}

/// The holders of `target` that `filter` matches, as sources of `next`,
/// page by page: each page read with the fields `next` copies and its
/// version, and (unless `reach` is [`Reach::Summaries`]) its fan-out into
/// `next` sent as one `update` command. Returns the ids of the pages
/// whose fan-out rewrote something (every page, when nothing is written).
async fn relay(
    cx: &mut Cx<'_>,
    target: &Target,
    next: &Target,
    filter: &BsonDoc,
    reach: Reach,
) -> Result<Vec<Vec<Bson>>> {
    let holders = cx.db.collection::<BsonDoc>(target.collection);
    let mut projection: BsonDoc = next.source_fields().map(|f| (f.to_owned(), Bson::Int32(1))).collect();
    projection.insert(VERSION_PATH, 1);
    let mut out = Vec::new();
    let mut after: Option<Bson> = None;
    loop {
        let page = Page { filter, after: after.as_ref(), size: ID_PAGE };
        let docs = page.docs(&holders, projection.clone(), cx.session()).await?;
        let Some(last) = docs.last().and_then(|d| d.get("_id")).cloned() else { break };
        let ids: Vec<Bson> = docs.iter().filter_map(|d| d.get("_id").cloned()).collect();
        let rewrote = reach == Reach::Summaries
            || send_all(cx, next, statements(next, &docs)).await? > 0
            || reach == Reach::Again;
        if rewrote {
            out.push(ids);
        }
        if docs.len() < ID_PAGE {
            break;
        }
        after = Some(last);
    }
    Ok(out)
}

/// The fan-out of each source in `docs` into `next`: one statement each,
/// under the fan-out guard of its version.
fn statements(next: &Target, docs: &[BsonDoc]) -> Vec<BsonDoc> {
    docs.iter()
        .filter_map(|d| {
            let id = d.get("_id")?;
            let (filter, update, array_filters) = next.update(id, d, version_of(d), Guard::FanOut);
            let mut statement = doc! {"q": filter, "u": update, "multi": true};
            if let Some(af) = array_filters {
                statement.insert("arrayFilters", af);
            }
            Some(statement)
        })
        .collect()
}
