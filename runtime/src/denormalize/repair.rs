//! Verify and repair of denormalized copies (invariant I1): scan every
//! target of a source, report stale and dangling copies, and rewrite the
//! stale ones from their sources, batch by batch, on the scan engine
//! ([`crate::store::scan`]): with progress, resumable, idempotent.

use crate::denormalize::chain::{self, Reach};
use crate::denormalize::copies::{
    catch_up, clear_leftovers, differs, holder_projection, pulled, read_sources, refresh_many, rule, version_of,
    Refresh, Sources,
};
use crate::error::{show_id, Error, Result};
use crate::schema::document::{OnDelete, Relation, Schema};
use crate::schema::graph::{Graph, Shape, Target};
use crate::store::page::Page;
use crate::store::path::id_key;
use crate::store::scan::{count, At, Parts, Report, Scan, ScanPart};
use crate::store::session::Cx;
use futures::future::BoxFuture;
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::Database;
use std::collections::HashMap;
use std::sync::Arc;

/// A repair of the copies of a source named at run time: what the sync
/// worker and a dead letter's repair run (the public entry is
/// `docrel::check::copies`).
pub(crate) fn repair_collection<'a>(db: &'a Database, source: &str) -> Result<Scan<'a>> {
    let g = crate::schema::graph::of(db);
    let source = known_source(g, source)?;
    Ok(Scan::new(db, "repair", source, parts(g, source), true))
}

pub(crate) fn known_source(g: &'static Graph, source: &str) -> Result<&'static str> {
    let sources = g.sources();
    sources
        .iter()
        .copied()
        .find(|s| *s == source)
        .ok_or_else(|| Error::UnknownSource { collection: source.to_owned(), known: sources.join(", ") })
}

/// The parts of a scan of the copies of `source`: two per target, in the
/// order of [`Graph::targets_of`] (the holders
/// referring to a source, then those that may keep copies or records of one
/// they no longer refer to), then what is derived from those copies in
/// turn, in the order a change travels: the copies of copies (as the copies
/// of their own sources), and every subset whose summaries carry a copy of
/// the chain (a summary is checked against its children, which a repair of
/// the copies before it has made true).
pub(crate) fn parts(g: &'static Graph, source: &'static str) -> Parts {
    let mut parts: Parts = Vec::new();
    let mut subsets: Vec<&'static crate::schema::graph::SubsetTarget> = Vec::new();
    for (source, target) in g.chain_of(source) {
        for leftovers in [false, true] {
            let pull = pull_rule(g, target);
            parts.push(Arc::new(Copies { source, target, leftovers, pull }));
        }
        for subset in g.summaries_of_copies(target) {
            if !subsets.iter().any(|s| std::ptr::eq(*s, subset)) {
                subsets.push(subset);
            }
        }
    }
    parts.extend(subsets.into_iter().flat_map(crate::patterns::subset_check::parts));
    parts
}

/// The copies of `source` held in one target.
struct Copies {
    source: &'static str,
    target: &'static Target,
    /// The reference the copies come through, when its `on_delete` rule
    /// pulls it: a dangling one (its referrer written while the source was
    /// deleted) is then pulled as the delete would have.
    pull: Option<(&'static Schema, &'static Relation)>,
    /// Whether this part reads the holders no reference of the target
    /// leads from ([`Target::leftover_holders`]) rather than the others.
    leftovers: bool,
}

impl ScanPart for Copies {
    fn label(&self) -> String {
        let without = if self.leftovers { " (without a reference)" } else { "" };
        format!("{}.{}{without}", self.target.collection, self.target.id_path())
    }

    fn collections(&self) -> Vec<&'static str> {
        vec![self.source, self.target.collection]
    }

    fn total<'a>(&'a self, db: &'a Database) -> BoxFuture<'a, Result<u64>> {
        Box::pin(count(db, self.target.collection, self.holding()))
    }

    fn batch<'a>(&'a self, at: At<'a>, report: &'a mut Report) -> BoxFuture<'a, Result<Option<Bson>>> {
        Box::pin(self.one_batch(at, report))
    }
}

impl Copies {
    /// The target documents holding a copy of the source.
    fn holding(&self) -> BsonDoc {
        match self.leftovers {
            false => doc! { self.target.id_path(): {"$exists": true} },
            true => self.target.leftover_holders(),
        }
    }

    /// One batch of holders, then one read of the sources they refer to,
    /// then (repairing) one `update` command for every stale copy.
    async fn one_batch(&self, at: At<'_>, report: &mut Report) -> Result<Option<Bson>> {
        let target = self.target;
        let filter = self.holding();
        let page = Page { filter: &filter, after: at.after, size: at.size };
        let mut projection = holder_projection([target]);
        projection.insert(target.records_path(), 1);
        let docs = page.docs(&at.db.collection::<BsonDoc>(target.collection), projection, None).await?;
        let Some(last) = docs.last().and_then(|d| d.get("_id")).cloned() else { return Ok(None) };
        let sources = read_sources(&mut Cx::new(at.db, None), &[(self.source, target)], &docs).await?;
        // A record ahead of its source refuses every guarded write of the
        // copy: the source's version moves past it first.
        let caught_up = match at.fix {
            true => catch_up(&mut Cx::new(at.db, None), self.source, self.records_ahead(&docs, &sources)).await?,
            false => HashMap::new(),
        };
        let mut to_fix: HashMap<String, Refresh<'_>> = HashMap::new();
        let mut dangling: Vec<(Bson, Bson)> = Vec::new();
        let mut leftovers = Vec::new();
        for d in &docs {
            report.scanned += 1;
            let stale = self.check(d, (&sources, &caught_up), at.fix, (&mut to_fix, &mut dangling), report);
            self.check_leftovers(d, stale, at.fix, &mut leftovers, report);
        }
        if let (Some(pull), false) = (self.pull, dangling.is_empty()) {
            report.fixed += pull_dangling(&mut Cx::new(at.db, None), target, pull, &dangling).await?;
        }
        if at.fix && !leftovers.is_empty() {
            report.fixed += clear_leftovers(&mut Cx::new(at.db, None), target, &leftovers).await?;
        }
        if at.fix && !to_fix.is_empty() {
            // Every holder of a stale source in this batch: the guarded
            // write decides which are rewritten.
            for d in &docs {
                let Some(holder) = d.get("_id") else { continue };
                for (id, _) in target.held_copies(d) {
                    if let Some(group) = to_fix.get_mut(&id_key(id)) {
                        // An array holding the same source twice is still one holder.
                        if group.holders.last() != Some(holder) {
                            group.holders.push(holder.clone());
                        }
                    }
                }
            }
            let groups: Vec<Refresh<'_>> = to_fix.into_values().collect();
            let cx = &mut Cx::new(at.db, None);
            let fixed = match refresh_many(cx, target, &groups).await {
                Ok(fixed) => fixed,
                Err(e) if refused(&e) => self.refresh_each(at.db, &groups, report).await?,
                Err(e) => return Err(e),
            };
            report.fixed += fixed;
            if fixed > 0 {
                // What is derived from the rewritten copies follows them.
                let holders: Vec<&Bson> = groups.iter().flat_map(|g| &g.holders).collect();
                chain::follow(cx, target, doc! {"_id": {"$in": holders}}, Reach::All).await?;
            }
        }
        Ok(Some(last))
    }

    /// The page's rewrite, one holder at a time, after the server refused
    /// the page's (a validator, a document grown too large): a holder it
    /// refuses is left, counted unfixable and named, and the others are
    /// rewritten.
    async fn refresh_each(&self, db: &Database, groups: &[Refresh<'_>], report: &mut Report) -> Result<u64> {
        let mut fixed = 0;
        for group in groups {
            for holder in &group.holders {
                let one = Refresh { id: group.id.clone(), source: group.source, holders: vec![holder.clone()] };
                match refresh_many(&mut Cx::new(db, None), self.target, std::slice::from_ref(&one)).await {
                    Ok(n) => fixed += n,
                    Err(e) if refused(&e) => {
                        report.unfixable += 1;
                        report.note(|| {
                            format!(
                                "{} of {}: the server refuses its copies of {} {}: {e}; fix the holder or the \
                                 collection's validator, then repair again",
                                self.label(),
                                show_id(holder),
                                self.source,
                                show_id(&group.id)
                            )
                        });
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(fixed)
    }

    /// The copies `docs` record at a version above their source's: the
    /// source's id, the source as read, and the record.
    fn records_ahead<'s>(&self, docs: &[BsonDoc], sources: &'s Sources) -> Vec<(Bson, &'s BsonDoc, i64)> {
        let held = docs.iter().flat_map(|d| self.target.held_copies(d).into_iter().map(move |(id, _)| (d, id)));
        held.filter_map(|(d, id)| {
            let source = sources.get(self.source, id)?;
            Some((id.clone(), source, self.target.record_ahead(d, id, source)?))
        })
        .collect()
    }

    /// Counts copies and records of one holder left for a reference that
    /// is gone (stale, unless `counted` already), and adds them to `found`.
    fn check_leftovers(
        &self,
        d: &BsonDoc,
        counted: bool,
        fix: bool,
        found: &mut Vec<(Bson, Vec<String>)>,
        report: &mut Report,
    ) {
        let paths = self.target.leftovers(d);
        let Some(holder) = d.get("_id").filter(|_| !paths.is_empty()) else { return };
        if !counted {
            report.stale += 1;
        }
        report.note(|| {
            format!(
                "{} of {} keeps {} from {} through a reference that refers to none of them now: {}",
                self.label(),
                show_id(holder),
                paths.join(", "),
                self.source,
                if fix { "removed" } else { "repair removes them" }
            )
        });
        found.push((holder.clone(), paths));
    }

    /// Counts the stale and dangling copies of one holder, and adds the
    /// sources of its stale ones to `to_fix` (as `caught_up` when their
    /// version was moved past a record ahead of it); whether it counted it stale.
    fn check<'s>(
        &self,
        d: &BsonDoc,
        (sources, caught_up): (&'s Sources, &'s HashMap<String, BsonDoc>),
        fix: bool,
        (to_fix, dangling): (&mut HashMap<String, Refresh<'s>>, &mut Vec<(Bson, Bson)>),
        report: &mut Report,
    ) -> bool {
        let holder = || d.get("_id").map(show_id).unwrap_or_default();
        let mut stale = None;
        for (id, copy) in self.target.held_copies(d) {
            let Some(source) = sources.get(self.source, id) else {
                report.dangling += 1;
                let pulled = self.pull.is_some();
                match (pulled, fix, d.get("_id")) {
                    (true, true, Some(h)) => dangling.push((h.clone(), id.clone())),
                    (true, _, _) => {}
                    _ => report.unfixable += 1,
                }
                let fix_it = match (pulled, fix) {
                    (true, true) => "pulled, as its `on_delete = pull` rule says",
                    (true, false) => "its `on_delete = pull` rule pulls it: repair does",
                    _ => "point it at another or remove it",
                };
                report.note(|| {
                    format!(
                        "{} of {} copies {} {}, which does not exist: {fix_it}",
                        self.label(),
                        holder(),
                        self.source,
                        show_id(id)
                    )
                });
                continue;
            };
            let ahead = self.target.record_ahead(d, id, source);
            if differs(self.target, copy, source) || ahead.is_some() {
                stale.get_or_insert((id, ahead.map(|r| self.target.describe_ahead(id, r, version_of(source)))));
                let source = caught_up.get(&id_key(id)).unwrap_or(source);
                to_fix.entry(id_key(id)).or_insert_with(|| Refresh::of(id, source));
            }
        }
        let counted = stale.is_some();
        if let Some((id, ahead)) = stale {
            report.stale += 1;
            let (ahead, fixable) = ahead.unwrap_or((String::new(), true));
            if !fixable {
                report.unfixable += 1;
            }
            report.note(|| {
                format!(
                    "{} of {} holds stale copies of {} {}{}: {}",
                    self.label(),
                    holder(),
                    self.source,
                    show_id(id),
                    ahead,
                    if !fixable {
                        "left"
                    } else if fix {
                        "rewritten"
                    } else {
                        "repair rewrites them"
                    }
                )
            });
        }
        counted
    }
}

/// Whether the server refused a write for what it would make of the
/// document: retrying cannot help (the one classifier of server errors,
/// [`Error::failure`]).
fn refused(e: &Error) -> bool {
    e.failure() == crate::error::Failure::Refused
}

/// The reference `target`'s copies come through, when its `on_delete` rule
/// pulls it.
fn pull_rule(g: &'static Graph, target: &Target) -> Option<(&'static Schema, &'static Relation)> {
    let field = match target.shape {
        Shape::Top { via } => via,
        Shape::Array { array, .. } => array,
    };
    let found = g
        .types_of(target.collection)
        .iter()
        .find_map(|s| g.relations_of(s).find(|r| r.field == field).map(|r| (*s, r)));
    found.filter(|(_, r)| rule(r) == OnDelete::Pull)
}

/// Pulls from each holder its references to sources that do not exist, as
/// their `on_delete` rule would have at the source's delete (the copies and
/// records made through them go too), then brings up to date what is
/// derived from those holders. Returns how many holders changed.
async fn pull_dangling(
    cx: &mut Cx<'_>,
    target: &'static Target,
    (schema, rel): (&'static Schema, &'static Relation),
    dangling: &[(Bson, Bson)],
) -> Result<u64> {
    let holders: Vec<&Bson> = dangling.iter().map(|(h, _)| h).collect();
    let ids: Vec<Bson> = dangling.iter().map(|(_, id)| id.clone()).collect();
    let (filter, update) = pulled(cx.graph, schema, rel, &ids);
    let filter = doc! {"$and": [{"_id": {"$in": &holders}}, filter]};
    let coll = cx.db.collection::<BsonDoc>(target.collection);
    let r = coll.update_many(filter, update).await.map_err(|e| Error::driver("update_many", target.collection, e))?;
    if r.modified_count > 0 {
        chain::follow(cx, target, doc! {"_id": {"$in": holders}}, Reach::All).await?;
    }
    Ok(r.modified_count)
}
