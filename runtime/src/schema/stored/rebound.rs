//! Publishing a program's bounds and inverses in the stored schema: the
//! steps of an online change ([`crate::admin::change`]) that change a
//! bound ([`super::bounds`]) or make an array two-way
//! ([`super::inverses`]).

use super::bounds::BoundChange;
use super::form::{StoredKind, StoredType};
use super::inverses::InverseChange;
use super::publish::rewrite;
use crate::error::Result;
use mongodb::Database;

/// Publishes each change's declared bound in the stored schema (the step
/// of `docrel schema apply` that changes a bound). Idempotent.
pub async fn rebound(db: &Database, changes: &[BoundChange]) -> Result<()> {
    let mut collections: Vec<&str> = changes.iter().map(|c| c.collection.as_str()).collect();
    collections.dedup();
    for collection in collections {
        rebound_one(db, collection, changes).await?;
    }
    Ok(())
}

async fn rebound_one(db: &Database, collection: &str, changes: &[BoundChange]) -> Result<()> {
    let edit = |t: &StoredType| {
        let mut t = t.clone();
        for c in changes.iter().filter(|c| c.collection == collection) {
            let kind = t.relations.iter_mut().find(|r| r.field == c.field).map(|r| &mut r.kind);
            if let Some(StoredKind::Embed { many: true, max } | StoredKind::RefMany { max, .. }) = kind {
                *max = c.declared;
            }
        }
        Some(t)
    };
    rewrite(db, collection, edit, "its bounds were published").await.map(drop)
}

/// Publishes each change's inverse in the stored schema (the step of
/// `docrel schema apply` that makes an array two-way). Idempotent.
pub async fn reinverse(db: &Database, changes: &[InverseChange]) -> Result<()> {
    let mut collections: Vec<&str> = changes.iter().map(|c| c.collection.as_str()).collect();
    collections.dedup();
    for collection in collections {
        let edit = |t: &StoredType| {
            let mut t = t.clone();
            for c in changes.iter().filter(|c| c.collection == collection) {
                if let Some(r) = t.relations.iter_mut().find(|r| r.field == c.field) {
                    r.inverse = Some(c.inverse.clone());
                }
            }
            Some(t)
        };
        rewrite(db, collection, edit, "its inverses were published").await?;
    }
    Ok(())
}

/// Makes `collection.field` one-way where the stored schema names
/// `inverse` as its other side (the step of `docrel schema retire` that
/// makes an array one-way, after that side was removed). Idempotent.
pub(super) async fn uninverse(db: &Database, collection: &str, field: &str, inverse: &str) -> Result<()> {
    let edit = |t: &StoredType| {
        let mut t = t.clone();
        let r = t.relations.iter_mut().find(|r| r.field == field && r.inverse.as_deref() == Some(inverse))?;
        r.inverse = None;
        Some(t)
    };
    rewrite(db, collection, edit, "its inverse was removed").await.map(drop)
}
