//! Verify and repair of the sync workers' dead letters
//! ([`super::dead_letter`]), on the scan engine ([`crate::store::scan`]):
//! a verify counts and lists them (each is a problem: what its event would
//! have rewritten may be stale); a repair re-applies each one's effect
//! from the document as it is now, the way a repair of that source and of
//! those subsets does, and removes the letter once that succeeded.
//!
//! Re-applying from the present rather than replaying the event is what
//! makes it safe at any time: copies are rewritten under the repair's
//! version guard (never older than they are) and subsets are rebuilt from
//! their children under their change counter, so a letter repaired late,
//! or twice, changes nothing that was newer.

use super::apply::holders;
use super::dead_letter::{DEAD_LETTER_COLLECTION, REPAIR_OPERATION};
use super::watched::Watched;
use crate::denormalize::copies::{apply_to, version_of, Guard};
use crate::error::{show_id, Error, Result};
use crate::store::page::Page;
use crate::store::primary;
use crate::store::scan::{count, At, Parts, Report, ScanPart};
use crate::store::session::Cx;
use futures::future::BoxFuture;
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::Database;
use std::sync::Arc;

/// The part of a scan of the dead letters of `collection` (all when `None`).
pub(crate) fn parts(g: &'static crate::schema::graph::Graph, collection: Option<&str>) -> Parts {
    let watched = Watched::of_graph(g);
    let collections = match collection {
        Some(c) => watched.find(c).into_iter().collect(),
        None => watched.all(),
    };
    vec![Arc::new(Letters { only: collection.is_some(), collections })]
}

/// The dead letters of some collections.
struct Letters {
    /// Limited to `collections` (else every letter, including those of
    /// collections nothing is derived from any more).
    only: bool,
    collections: Vec<&'static str>,
}

impl ScanPart for Letters {
    fn label(&self) -> String {
        DEAD_LETTER_COLLECTION.to_owned()
    }

    fn collections(&self) -> Vec<&'static str> {
        self.collections.clone()
    }

    fn total<'a>(&'a self, db: &'a Database) -> BoxFuture<'a, Result<u64>> {
        Box::pin(count(db, DEAD_LETTER_COLLECTION, self.filter()))
    }

    fn batch<'a>(&'a self, at: At<'a>, report: &'a mut Report) -> BoxFuture<'a, Result<Option<Bson>>> {
        Box::pin(self.one_batch(at, report))
    }
}

impl Letters {
    fn filter(&self) -> BsonDoc {
        if self.only {
            doc! {"collection": {"$in": self.collections.clone()}}
        } else {
            doc! {}
        }
    }

    async fn one_batch(&self, at: At<'_>, report: &mut Report) -> Result<Option<Bson>> {
        let filter = self.filter();
        let page = Page { filter: &filter, after: at.after, size: at.size };
        let letters = page.docs(&at.db.collection::<BsonDoc>(DEAD_LETTER_COLLECTION), doc! {}, None).await?;
        let Some(last) = letters.last().and_then(|d| d.get("_id")).cloned() else { return Ok(None) };
        for letter in &letters {
            report.scanned += 1;
            report.dead_letters += 1;
            if !at.fix {
                report.note(|| format!("{}: fix its cause, then repair re-applies it", describe(letter)));
                continue;
            }
            match reapply(at.db, letter).await {
                Ok(()) if remove(at.db, letter).await? => {
                    report.fixed += 1;
                    report.note(|| format!("{}: re-applied, and the letter removed", describe(letter)));
                }
                Ok(()) => {
                    report.unfixable += 1;
                    report.note(|| format!("{}: failed again while it was re-applied; repair again", describe(letter)));
                }
                Err(e) => {
                    report.unfixable += 1;
                    report.note(|| {
                        format!("{}; re-applying it failed: {e}. Fix that, then repair again", describe(letter))
                    });
                }
            }
        }
        Ok(Some(last))
    }
}

/// A letter in words: which worker gave up which event, and why.
fn describe(letter: &BsonDoc) -> String {
    format!(
        "sync worker `{}` could not apply the {} of {} {} ({} attempts): {}",
        letter.get_str("worker").unwrap_or("?"),
        letter.get_str("operation").unwrap_or("change"),
        letter.get_str("collection").unwrap_or("?"),
        letter.get("document").map(show_id).unwrap_or_default(),
        letter.get_i32("attempts").unwrap_or(0),
        letter.get_str("reason").unwrap_or("no reason recorded"),
    )
}

/// Removes a letter, unless its worker recorded another failure of the
/// same document since it was read (that one is still to repair).
async fn remove(db: &Database, letter: &BsonDoc) -> Result<bool> {
    let (Some(id), Some(at)) = (letter.get("_id"), letter.get("at")) else { return Ok(false) };
    let r = db
        .collection::<BsonDoc>(DEAD_LETTER_COLLECTION)
        .delete_one(doc! {"_id": id.clone(), "at": at.clone()})
        .await
        .map_err(|e| Error::driver("delete", DEAD_LETTER_COLLECTION, e))?;
    Ok(r.deleted_count == 1)
}

/// Re-applies what the letter's event would have: the copies of the
/// document as it is now, under the repair's guard, and the subsets of its
/// parents (now, and those the event named) rebuilt. A collection nothing
/// is derived from any more needs nothing.
async fn reapply(db: &Database, letter: &BsonDoc) -> Result<()> {
    let watched = Watched::of_graph(crate::schema::graph::of(db));
    let Some(collection) = letter.get_str("collection").ok().and_then(|c| watched.find(c)) else { return Ok(()) };
    let id = letter.get("document").cloned().unwrap_or(Bson::Null);
    let now = db
        .collection::<BsonDoc>(collection)
        .find_one(doc! {"_id": id.clone()})
        .selection_criteria(primary())
        .await
        .map_err(|e| Error::driver("find", collection, e))?;
    let cx = &mut Cx::new(db, None);
    if let Some(source) = &now {
        for target in watched.graph.targets_of(collection) {
            apply_to(cx, target, &id, source, version_of(source), Guard::Refresh, None).await?;
            // Every level past it too: the letter may stand for a copy of
            // a copy the worker could not write.
            let holders = doc! { target.id_path(): id.clone() };
            crate::denormalize::chain::follow(cx, target, holders, crate::denormalize::chain::Reach::Again).await?;
        }
    }
    let repair = letter.get_str("operation").ok() == Some(REPAIR_OPERATION) && id == Bson::Null;
    if repair && !watched.graph.targets_of(collection).is_empty() {
        // A repair after lost history that failed: the copies of the whole collection.
        let report = crate::denormalize::repair::repair_collection(db, collection)?.run().await?;
        if report.unfixable > 0 {
            return Err(Error::Invalid {
                what: crate::error::Misuse::Copy,
                message: format!("the repair of the copies of `{collection}` left some: {:?}", report.problems),
            });
        }
    }
    for target in watched.graph.subsets_of(collection) {
        let mut parents: Vec<Bson> = named_parents(letter, target.parent, target.rel.field);
        if let Some(p) = now.as_ref().and_then(|d| d.get(target.parent_field)).filter(|p| **p != Bson::Null) {
            if !parents.contains(p) {
                parents.push(p.clone());
            }
        }
        if parents.is_empty() {
            // A child deleted with no image of it: the subsets still holding its summary.
            parents = holders(db, target, &id).await?;
        }
        for parent in &parents {
            let rebuilt = target.rebuild_in(cx, parent).await?;
            // Still too large: the letter stays, saying so.
            if let Some((child, bytes)) = rebuilt.left_out.iter().find(|(child, _)| *child == id) {
                return Err(target.left_out_error(child, *bytes, parent));
            }
        }
    }
    Ok(())
}

/// The parents the letter names for the subset `parent.field`.
fn named_parents(letter: &BsonDoc, parent: &str, field: &str) -> Vec<Bson> {
    let named = letter.get_array("parents").map(|a| a.iter().filter_map(Bson::as_document)).into_iter().flatten();
    named
        .filter(|p| p.get_str("collection").ok() == Some(parent) && p.get_str("field").ok() == Some(field))
        .filter_map(|p| p.get("id").cloned())
        .collect()
}
