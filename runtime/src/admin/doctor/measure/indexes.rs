//! The indexes the relationships need against the ones each collection
//! has, with their uses where `$indexStats` counts them.

use super::read::{aggregate, as_u64};
use crate::admin::doctor::rules::Present;
use crate::admin::index_plan::{needed, present, show};
use crate::error::Result;
use mongodb::bson::{doc, Bson};
use mongodb::Database;
use std::collections::BTreeMap;

/// One index a collection needs, and what the server has of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IndexRead {
    /// The collection.
    pub collection: &'static str,
    /// `{parts.id: 1}`
    pub keys: String,
    /// Whether it must be unique.
    pub unique: bool,
    /// Whether it exists, and how it is used.
    pub present: Present,
}

/// Every needed index of the collections that exist (one that does not
/// yet gets its indexes with its first document), and whether
/// `$indexStats` counted uses (`tracked`) or not (`untracked`) anywhere.
pub(crate) async fn indexes(
    db: &Database,
    collections: impl Iterator<Item = &'static str>,
) -> Result<(Vec<IndexRead>, bool, bool)> {
    let (mut tracked, mut untracked) = (false, false);
    let mut out = Vec::new();
    for collection in collections {
        let needed = needed(crate::schema::graph::of(db), collection)?;
        if needed.is_empty() {
            continue;
        }
        let present = present(db, collection).await?;
        let uses =
            if present.is_empty() { BTreeMap::new() } else { uses(db, collection, &mut tracked, &mut untracked).await };
        for n in needed {
            let present = match present.iter().find(|p| p.shape.keys == n.shape.keys) {
                None => Present::Missing,
                Some(p) => Present::Found { unique: p.shape.unique(), uses: uses.get(&p.name).copied() },
            };
            out.push(IndexRead { collection, keys: show(&n.shape.keys), unique: n.shape.unique(), present });
        }
    }
    Ok((out, tracked, untracked))
}

/// Uses per index name, where the server counts them (`accesses.since`
/// is a date); a refused `$indexStats` counts as not tracked.
async fn uses(db: &Database, collection: &str, tracked: &mut bool, untracked: &mut bool) -> BTreeMap<String, u64> {
    let mut uses = BTreeMap::new();
    let Ok(rows) = aggregate(db, collection, vec![doc! {"$indexStats": {}}]).await else {
        *untracked = true;
        return uses;
    };
    for r in rows {
        let accesses = r.get_document("accesses").ok();
        if !matches!(accesses.and_then(|a| a.get("since")), Some(Bson::DateTime(_))) {
            *untracked = true;
            continue;
        }
        *tracked = true;
        if let Ok(name) = r.get_str("name") {
            uses.insert(name.to_owned(), as_u64(accesses.and_then(|a| a.get("ops"))).unwrap_or(0));
        }
    }
    uses
}
