//! The `on_delete` rules of references, applied when a referred document is
//! deleted through docrel: plan the whole cascade first (refusing on any
//! `restrict`, before anything is written), then pull and delete. A cycle
//! in the data (documents that cascade to each other, a self-referencing
//! tree) is followed once: the documents reached on a cycle of the schema
//! are remembered, not counted in levels.

use crate::denormalize::copies::{pulled, rule};
use crate::error::{show_id, Error, Result};
use crate::schema::document::{OnDelete, Relation, RelationKind, Schema};
use crate::schema::graph::{Graph, SubsetTarget};
use crate::store::path::id_key;
use crate::store::primary;
use crate::store::session::{collect, in_session, plain, Cx};
use mongodb::bson::{doc, Bson, Document as BsonDoc, RawDocumentBuf};
use std::collections::{HashMap, HashSet};

/// How many documents of collections on a cycle of cascades (a type that
/// cascades to itself, or types that cascade to each other) one call of
/// the rules reaches at most: one delete, or one page of `delete_many`.
/// Those documents are remembered (ids per collection) so a cycle in the
/// data is followed once; past this many the delete is refused before
/// anything is written, a runaway rather than a cascade.
pub const MAX_CYCLE_DOCUMENTS: usize = 100_000;

/// How many ids one step of a cascade reads, pulls from and deletes: one
/// `find` page, one `updateMany` per pulling reference, one `deleteMany`.
/// Memory holds at most this many ids per level of the cascade.
pub const BATCH: usize = crate::store::ID_PAGE;

/// Whether deleting a document of `collection` has anything to apply.
pub(crate) fn has_rules(g: &'static Graph, collection: &str) -> bool {
    g.references_to(collection).iter().any(|(_, r)| rule(r) != OnDelete::Nothing)
}

/// Applies the rules for `ids` of `collection`, already [`check`]ed (a
/// delete of many documents checks every page before it writes any).
///
/// The rules run for the documents still gone when they start: one
/// inserted again with the same id meanwhile is another document, and the
/// documents referring to it now (a comment appended to it, a page of its
/// buckets) are its own, not the deleted one's to cascade or pull. A
/// document inserted again after this read is not told apart by the
/// rules (only a transaction around the delete closes that window), but
/// its two-way links, which the pulls may have taken with the deleted
/// one's, are written again after them ([`relink_returned`]).
pub(crate) async fn apply_checked(cx: &mut Cx<'_>, collection: &'static str, ids: &[Bson]) -> Result<()> {
    // A `restrict` was checked before the delete and writes nothing after it.
    let writes = cx
        .graph
        .references_to(collection)
        .iter()
        .any(|(_, r)| !matches!(rule(r), OnDelete::Nothing | OnDelete::Restrict));
    if ids.is_empty() || !writes {
        return Ok(());
    }
    // `ids` is one page at most, so one page of them answers.
    let filter = doc! {"_id": {"$in": ids}};
    let back = crate::store::id_page(&cx.db.collection(collection), &filter, None, cx.session()).await?;
    let back: HashSet<String> = back.unwrap_or_default().iter().map(id_key).collect();
    let gone: Vec<Bson> = ids.iter().filter(|id| !back.contains(&id_key(id))).cloned().collect();
    if gone.is_empty() {
        return Ok(());
    }
    walk(cx, collection, &gone, Mode::Apply).await?;
    relink_returned(cx, collection, &gone).await
}

/// Links again, as they name their targets now, the documents of `ids`
/// stored once more after the pulls of their deleted namesakes: inserted
/// again with the same id after the read that found them gone, their
/// insert linked the other side of their two-way references, and a pull
/// of the id that ran after it took that link too. Each link is written
/// again (nothing changes where it is whole) in a transaction that first
/// checks the document still holds it, so a reassign since is kept. One
/// read, for the types whose two-way references the rules pull; nothing
/// otherwise.
async fn relink_returned(cx: &mut Cx<'_>, collection: &'static str, ids: &[Bson]) -> Result<()> {
    let g = cx.graph;
    // The two-way references of the deleted documents whose other side a rule pulled.
    let pulled: Vec<(&'static Schema, &'static Relation)> = g
        .references_to(collection)
        .iter()
        .filter(|(_, r)| r.inverse.is_some() && rule(r) == OnDelete::Pull)
        .filter_map(|(_, r)| g.inverse_of(r))
        .filter(|(_, own)| !matches!(own.kind, RelationKind::RefMany { key: Some(_), .. }))
        .collect();
    if pulled.is_empty() {
        return Ok(());
    }
    let projection: BsonDoc = pulled.iter().map(|(_, own)| (own.field.to_owned(), Bson::Int32(1))).collect();
    let coll = cx.db.collection::<RawDocumentBuf>(collection);
    let find = coll.find(doc! {"_id": {"$in": ids}}).projection(projection).selection_criteria(primary());
    let back = collect(find, cx.session(), collection, |raw| plain(collection, raw)).await?;
    for d in back {
        let Some(x) = d.get("_id") else { continue };
        for &(schema, own) in &pulled {
            let targets = match d.get(own.field) {
                Some(Bson::Array(held)) => held.clone(),
                Some(Bson::Null) | None => Vec::new(),
                Some(one) => vec![one.clone()],
            };
            for y in targets {
                match super::two_way::relink(cx, schema, own, x.clone(), y).await {
                    // Either side deleted meanwhile: nothing left to link.
                    Err(Error::NotFound { .. }) => {}
                    other => {
                        other?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// Refuses, before anything is written, when a `restrict` anywhere in the
/// cascade from `collection` finds a referrer of `ids`, or the cascade
/// reaches more than [`MAX_CYCLE_DOCUMENTS`] documents on a cycle. Reads
/// nothing when no rule below could refuse.
pub(crate) async fn check(cx: &mut Cx<'_>, collection: &'static str, ids: &[Bson]) -> Result<()> {
    if ids.is_empty() || !may_refuse(cx.graph, collection) {
        return Ok(());
    }
    walk(cx, collection, ids, Mode::Check).await
}

/// The collections whose documents a cascade from `collection` deletes.
fn cascades_from<'a>(g: &'a Graph, collection: &'a str) -> impl Iterator<Item = &'static str> + 'a {
    g.references_to(collection).iter().filter(|(_, rel)| rule(rel) == OnDelete::Cascade).map(|(s, _)| s.collection)
}

/// `collection` and every collection a cascade from it reaches.
fn closure(g: &'static Graph, collection: &'static str) -> Vec<&'static str> {
    let mut seen = vec![collection];
    let mut i = 0;
    while let Some(&c) = seen.get(i) {
        for next in cascades_from(g, c) {
            if !seen.contains(&next) {
                seen.push(next);
            }
        }
        i += 1;
    }
    seen
}

/// Whether a cascade from `collection` can come back to it: its documents
/// are remembered so a cycle in the data is followed once.
fn on_cycle(g: &'static Graph, collection: &'static str) -> bool {
    cascades_from(g, collection).any(|next| closure(g, next).contains(&collection))
}

/// Whether the rules from `collection` may refuse: a `restrict` reachable,
/// or a cycle (which may pass [`MAX_CYCLE_DOCUMENTS`]).
fn may_refuse(g: &'static Graph, collection: &'static str) -> bool {
    closure(g, collection)
        .into_iter()
        .any(|c| on_cycle(g, c) || g.references_to(c).iter().any(|(_, rel)| rule(rel) == OnDelete::Restrict))
}

/// Whether a walk checks (reads only, refusing on a `restrict`) or applies.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Check,
    Apply,
}

/// One level of the cascade: documents `ids` of `collection`, with the
/// relation referring to them that is being applied and where its paging
/// of dependants stands.
struct Frame {
    collection: &'static str,
    ids: Vec<Bson>,
    rel: usize,
    after: Option<Bson>,
    /// Whether its pulls and its cascades into leaves went as one
    /// `bulkWrite` ([`batch`]); `None` until the walk applies the frame.
    bulked: Option<bool>,
    /// The subsets whose summaries carry what the frame's pulls clear, and
    /// the parents keeping them: read before the pulls, rebuilt after.
    summaries: Vec<(&'static SubsetTarget, Vec<Bson>)>,
}

impl Frame {
    fn new(collection: &'static str, ids: Vec<Bson>) -> Frame {
        Frame { collection, ids, rel: 0, after: None, bulked: None, summaries: Vec::new() }
    }
}

/// For each pull from the references to `ids` of `collection` whose
/// referrers are summarized in a subset that holds the reference or a copy
/// made through it, that subset and the parents of the referrers (one
/// `distinct` each). Read before the pulls: after them the referrers no
/// longer name `ids`. A rename reaches such summaries through the copies'
/// chain; a pull clears those same copies, so it owes them the same.
async fn summaries_pulled(
    cx: &mut Cx<'_>,
    collection: &'static str,
    ids: &[Bson],
) -> Result<Vec<(&'static SubsetTarget, Vec<Bson>)>> {
    let mut out = Vec::new();
    for &(schema, rel) in cx.graph.references_to(collection) {
        if rule(rel) != OnDelete::Pull {
            continue;
        }
        let cleared = crate::denormalize::copies::cleared_through(cx.graph, schema, rel.field);
        for subset in cx.graph.subsets_of(schema.collection) {
            let carried = subset.fields().is_none_or(|f| f.iter().any(|f| *f == rel.field || cleared.contains_key(*f)));
            if !carried {
                continue;
            }
            let referrers = cx.db.collection::<BsonDoc>(schema.collection);
            let filter = doc! { rel.id_path(): {"$in": ids} };
            let parents = in_session!(
                referrers.distinct(subset.parent_field, filter).selection_criteria(primary()),
                cx.session()
            )
            .map_err(|e| Error::driver("distinct", schema.collection, e))?;
            out.push((subset, parents.into_iter().filter(|p| *p != Bson::Null).collect()));
        }
    }
    Ok(out)
}

/// The documents on a cycle the walk has reached, by collection and id key.
struct Visited {
    graph: &'static Graph,
    ids: HashMap<&'static str, HashSet<String>>,
    count: usize,
    limit: usize,
}

impl Visited {
    fn new(graph: &'static Graph, limit: usize) -> Self {
        Visited { graph, ids: HashMap::new(), count: 0, limit }
    }

    /// Those of `ids` not reached before (all of them off a cycle), now
    /// remembered; `None` past [`MAX_CYCLE_DOCUMENTS`].
    fn admit(&mut self, collection: &'static str, ids: Vec<Bson>) -> Option<Vec<Bson>> {
        self.admit_on(collection, on_cycle(self.graph, collection), ids)
    }

    fn admit_on(&mut self, collection: &'static str, cyclic: bool, ids: Vec<Bson>) -> Option<Vec<Bson>> {
        if !cyclic {
            return Some(ids);
        }
        let seen = self.ids.entry(collection).or_default();
        let fresh: Vec<Bson> = ids.into_iter().filter(|id| seen.insert(id_key(id))).collect();
        self.count += fresh.len();
        (self.count <= self.limit).then_some(fresh)
    }
}

/// The documents of the frames on `stack`, as `collection\0id`: each is
/// deleted by the walk (the root's were before it).
fn doomed(stack: &[Frame]) -> HashSet<String> {
    stack.iter().flat_map(|f| f.ids.iter().map(move |id| format!("{}\u{0}{}", f.collection, id_key(id)))).collect()
}

/// Runs the rules for `ids` of `root` depth first, with a stack of its own
/// rather than recursion, so a chain in the data as deep as it is long
/// (a self-referencing tree) needs no more than one frame per level.
/// Applying: one pull per pulling reference, and per cascading one, page
/// by page, the dependants' own rules and then their deletion (the
/// deepest first, so a failure leaves what refers to them). Checking: one
/// count per `restrict`, descending only where a rule may refuse.
async fn walk(cx: &mut Cx<'_>, root: &'static str, ids: &[Bson], mode: Mode) -> Result<()> {
    let mut visited = Visited::new(cx.graph, MAX_CYCLE_DOCUMENTS);
    let mut deleted = 0u64;
    let ids = visited.admit(root, ids.to_vec()).ok_or_else(|| runaway(root, ids.len(), mode, 0))?;
    let mut stack = vec![Frame::new(root, ids)];
    while let Some(top) = stack.last_mut() {
        if mode == Mode::Apply && top.bulked.is_none() {
            top.summaries = summaries_pulled(cx, top.collection, &top.ids).await?;
            top.bulked = Some(batch(cx, top.collection, &top.ids).await?);
        }
        let bulked = top.bulked == Some(true);
        let Some(&(schema, rel)) = cx.graph.references_to(top.collection).get(top.rel) else {
            let done = stack.pop().unwrap_or_else(|| unreachable!("the loop holds a frame"));
            // The frames left are deleted by this walk (the root's already
            // were): their subsets are not rebuilt.
            let doomed = doomed(&stack);
            let gone = |collection: &str, id: &Bson| doomed.contains(&format!("{collection}\u{0}{}", id_key(id)));
            for (subset, parents) in &done.summaries {
                let kept: Vec<Bson> = parents.iter().filter(|p| !gone(subset.parent, p)).cloned().collect();
                if !kept.is_empty() {
                    subset.rebuild_many(cx, &kept).await?;
                }
            }
            // The root's documents are the caller's to delete.
            if mode == Mode::Apply && !stack.is_empty() {
                deleted += crate::patterns::subset_delete::delete(cx, done.collection, &done.ids, &gone).await?;
            }
            continue;
        };
        match (mode, rule(rel)) {
            (Mode::Check, OnDelete::Restrict) => restrict(cx, top.collection, schema, rel, &top.ids).await?,
            // Sent in the frame's `bulkWrite`.
            (Mode::Apply, _) if bulked && batched(cx.graph, schema, rel) => {}
            (Mode::Apply, OnDelete::Pull) => pull(cx, schema, rel, &top.ids).await?,
            (_, OnDelete::Cascade) if mode == Mode::Apply || may_refuse(cx.graph, schema.collection) => {
                let after = top.after.take();
                if let Some(page) = dependants(cx, schema, rel, &top.ids, after).await? {
                    top.after = page.last().cloned();
                    let fresh = visited
                        .admit(schema.collection, page)
                        .ok_or_else(|| runaway(root, stack[0].ids.len(), mode, deleted))?;
                    if !fresh.is_empty() {
                        let collection = schema.collection;
                        stack.push(Frame::new(collection, fresh));
                    }
                    continue;
                }
            }
            _ => {}
        }
        if let Some(top) = stack.last_mut() {
            top.rel += 1;
        }
    }
    Ok(())
}

/// The error of a cascade past [`MAX_CYCLE_DOCUMENTS`]: when checking,
/// nothing was written; when applying (the data grew since the check),
/// what was.
fn runaway(root: &'static str, n: usize, mode: Mode, deleted: u64) -> Error {
    let written = match mode {
        Mode::Check => "nothing was deleted".to_owned(),
        Mode::Apply => format!(
            "the {n} document(s) of `{root}` and {deleted} document(s) of their cascade were deleted, and the ids \
             pulled where a rule says so; the rest of the cascade is still stored, referring to deleted documents"
        ),
    };
    Error::Invalid {
        what: crate::error::Misuse::OnDelete,
        message: format!(
            "deleting {n} document(s) of `{root}` cascades through a cycle of `on_delete = cascade` to more than \
             {MAX_CYCLE_DOCUMENTS} documents; {written}. Delete the far end of the cascade first (with `delete_many` \
             on its references), or break the cycle with `pull`"
        ),
    }
}

/// Refuses when a document of `schema` refers to one of `ids` through `rel`.
async fn restrict(
    cx: &mut Cx<'_>,
    collection: &'static str,
    schema: &'static Schema,
    rel: &'static Relation,
    ids: &[Bson],
) -> Result<()> {
    let referrers = cx.db.collection::<RawDocumentBuf>(schema.collection);
    let filter = doc! { rel.id_path(): {"$in": ids} };
    // It decides a write: on the primary, whatever the client's preference.
    let count = in_session!(referrers.count_documents(filter).selection_criteria(primary()), cx.session())
        .map_err(|e| Error::driver("count", schema.collection, e))?;
    if count == 0 {
        return Ok(());
    }
    Err(Error::StillReferenced {
        collection,
        id: ids.iter().map(show_id).collect::<Vec<_>>().join(", "),
        referrer: schema.collection,
        field: rel.field,
        count,
    })
}

/// The next page of at most [`BATCH`] ids of `schema` documents whose
/// reference `rel` holds one of `ids`, after the id `after` in `_id` order.
async fn dependants(
    cx: &mut Cx<'_>,
    schema: &'static crate::schema::document::Schema,
    rel: &'static Relation,
    ids: &[Bson],
    after: Option<Bson>,
) -> Result<Option<Vec<Bson>>> {
    let filter = doc! { rel.id_path(): {"$in": ids} };
    crate::store::id_page(&cx.db.collection(schema.collection), &filter, after, cx.session()).await
}

/// Removes `ids` from the reference `rel` of every `schema` document,
/// with the copies and version records that came through them.
async fn pull(cx: &mut Cx<'_>, schema: &'static Schema, rel: &'static Relation, ids: &[Bson]) -> Result<()> {
    let collection = schema.collection;
    let coll = cx.db.collection::<BsonDoc>(collection);
    let (filter, update) = pulled(cx.graph, schema, rel, ids);
    in_session!(coll.update_many(filter, update), cx.session())
        .map_err(|e| Error::driver("update_many", collection, e))?;
    Ok(())
}

/// Whether deleting documents of `collection` asks nothing more of
/// docrel: no rule to apply to what refers to them (a `restrict` was
/// checked before the delete) and no subset summarizing them. A cascade
/// into such a collection is one `deleteMany` of the referrers.
fn leaf(g: &'static Graph, collection: &'static str) -> bool {
    g.references_to(collection).iter().all(|(_, r)| matches!(rule(r), OnDelete::Nothing | OnDelete::Restrict))
        && g.subsets_of(collection).is_empty()
}

/// Whether the rule of `rel` (a reference of `schema`) travels in its
/// frame's `bulkWrite`: a pull, or a cascade into a leaf.
fn batched(g: &'static Graph, schema: &'static Schema, rel: &'static Relation) -> bool {
    match rule(rel) {
        OnDelete::Pull => true,
        OnDelete::Cascade => leaf(g, schema.collection),
        _ => false,
    }
}

/// On MongoDB 8.0+, sends every pull from the references to `ids` of
/// `collection` and every cascade into a leaf as one ordered `bulkWrite`:
/// one round trip for rules reaching any number of collections, where the
/// other way sends an `updateMany` per pull and a read and a delete per
/// cascade. Whether it was sent (`false`: nothing to batch, or no
/// `bulkWrite` before 8.0, and the walk applies each rule itself). Every
/// statement is idempotent; a refused one is the error of its collection,
/// with what came before it written.
async fn batch(cx: &mut Cx<'_>, collection: &'static str, ids: &[Bson]) -> Result<bool> {
    if !crate::store::bulk::available(cx.db.client()) {
        return Ok(false);
    }
    let mut sent: Vec<&'static str> = Vec::new();
    let mut models = Vec::new();
    for &(schema, rel) in cx.graph.references_to(collection) {
        if !batched(cx.graph, schema, rel) {
            continue;
        }
        let model = match rule(rel) {
            OnDelete::Pull => {
                let (filter, update) = pulled(cx.graph, schema, rel, ids);
                crate::store::bulk::update_many(cx, schema.collection, filter, update, None)
            }
            _ => crate::store::bulk::delete_many(cx, schema.collection, doc! { rel.id_path(): {"$in": ids} }),
        };
        sent.push(schema.collection);
        models.push(model);
    }
    if models.is_empty() {
        return Ok(false);
    }
    if let Err(e) = crate::store::bulk::send_summary(cx, models).await {
        // A refused statement names its collection; a batch cut or lost
        // names every collection it reached, any of which may be unwritten.
        let at = match crate::store::bulk::first_refused(&e).and_then(|i| sent.get(i)) {
            Some(one) => (*one).to_owned(),
            None => sent.join(", "),
        };
        return Err(Error::driver("bulkWrite", at, e));
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::Visited;
    use mongodb::bson::Bson;

    #[test]
    fn a_cycle_is_followed_once_and_a_runaway_refused() {
        let mut visited = Visited::new(crate::schema::graph::graph(), 3);
        let ids = |v: &[i32]| v.iter().map(|i| Bson::Int32(*i)).collect::<Vec<_>>();
        assert_eq!(visited.admit_on("nodes", true, ids(&[1, 2])), Some(ids(&[1, 2])));
        assert_eq!(visited.admit_on("nodes", true, ids(&[2, 1, 3])), Some(ids(&[3])), "1 and 2 were reached");
        assert_eq!(visited.admit_on("other", true, ids(&[1])), None, "a fourth document passes the limit");
        assert_eq!(visited.admit_on("plain", false, ids(&[1, 1])), Some(ids(&[1, 1])), "off a cycle: not remembered");
    }
}
