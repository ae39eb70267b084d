//! Copies and version records a holder keeps of a source it no longer
//! refers to: the copies through a single reference that was cleared (an
//! `on_delete = pull`, an `unlink`), and the records of elements no longer
//! in an array of copies. A cleared reference takes them in the same
//! write ([`cleared_through`]); what an older write left behind is found by
//! [`Target::leftovers`] and cleared by [`clear`] (repair, refresh).

use super::records::COPIES_PATH;
use crate::error::Result;
use crate::schema::document::Schema;
use crate::schema::graph::{Graph, Shape, Target};
use crate::store::path::{id_key, lookup};
use crate::store::session::Cx;
use crate::store::updates::send_updates;
use mongodb::bson::{doc, Bson, Document as BsonDoc};

/// The `$unset` of what a holder of `schema` keeps through its single
/// reference `via`: the copies made through it and their version records.
/// A write that clears `via` adds it, so the copies go with the reference
/// (I1: a copy with no source has no value). Empty when nothing is copied
/// through `via`.
pub(crate) fn cleared_through(g: &'static Graph, schema: &'static Schema, via: &str) -> BsonDoc {
    let mut unset = BsonDoc::new();
    for (_, target) in g.held_by(schema) {
        if matches!(target.shape, Shape::Top { via: own } if own == via) {
            for (copy, _) in &target.fields {
                unset.insert(*copy, "");
            }
            unset.insert(format!("{COPIES_PATH}.{via}"), "");
        }
    }
    unset
}

impl Target {
    /// The paths `holder` keeps for this target with no reference behind
    /// them: for a single reference that is absent, its copies that hold a
    /// value and its records; for an array, the records of ids no element
    /// holds. Empty when there is none. `holder` is read with the
    /// [`super::holder_projection`] and [`Target::records_path`].
    pub(crate) fn leftovers(&self, holder: &BsonDoc) -> Vec<String> {
        let records = lookup(holder, &self.records_path()).and_then(Bson::as_document);
        match self.shape {
            Shape::Top { via } => {
                if holder.get(via).is_some_and(|v| *v != Bson::Null) {
                    return Vec::new();
                }
                let mut out: Vec<String> = self
                    .fields
                    .iter()
                    .filter(|(copy, _)| holder.get(*copy).is_some_and(|v| *v != Bson::Null))
                    .map(|(copy, _)| (*copy).to_owned())
                    .collect();
                if records.is_some() {
                    out.push(self.records_path());
                }
                out
            }
            Shape::Array { .. } => {
                let Some(records) = records else { return Vec::new() };
                let held: std::collections::HashSet<String> =
                    self.held_copies(holder).into_iter().map(|(id, _)| id_key(id)).collect();
                let path = self.records_path();
                records.keys().filter(|k| !held.contains(*k)).map(|k| format!("{path}.{k}")).collect()
            }
        }
    }

    /// The holders that may keep leftovers no other scan of this target
    /// reads: those without the reference (a single one), or with records
    /// and no element (an array).
    pub(crate) fn leftover_holders(&self) -> BsonDoc {
        match self.shape {
            Shape::Top { via } => doc! { via: Bson::Null },
            Shape::Array { .. } => doc! { self.records_path(): {"$exists": true}, self.id_path(): {"$exists": false} },
        }
    }
}

/// Unsets the `leftovers` found in each holder, in one `update` command:
/// a single reference's copies only while the reference is still absent
/// (a link that came in between keeps what its refresh writes). A record
/// removed as a concurrent write brings its element back costs nothing
/// but a rewrite: a missing record counts as older. Returns the holders
/// written.
pub(crate) async fn clear(cx: &mut Cx<'_>, target: &Target, found: &[(Bson, Vec<String>)]) -> Result<u64> {
    let statements: Vec<BsonDoc> = found
        .iter()
        .filter(|(_, paths)| !paths.is_empty())
        .map(|(holder, paths)| {
            let mut q = doc! {"_id": holder.clone()};
            if let Shape::Top { via } = target.shape {
                q.insert(via, Bson::Null);
            }
            let unset: BsonDoc = paths.iter().map(|p| (p.clone(), Bson::String(String::new()))).collect();
            let mut u = doc! {"$unset": unset};
            if target.relays() {
                // Copies of these copies follow them (see `Target::update`).
                u.insert("$inc", doc! { super::versions::VERSION_PATH: 1_i64 });
            }
            doc! {"q": q, "u": u}
        })
        .collect();
    if statements.is_empty() {
        return Ok(0);
    }
    send_updates(cx, target.collection, statements).await
}
