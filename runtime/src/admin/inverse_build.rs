//! The step of an online change that builds the other side of an array
//! made two-way ([`crate::schema::stored::InverseChange`]): once every
//! process keeps both sides of its writes (two leases after the inverse
//! was published), the arrays written before are read a page at a time
//! in `_id` order, and each page's documents are linked back in a
//! transaction, with the reconcile the old version's writes use. A page
//! is idempotent, so a stopped build starts again from the first page.
//! Until it is built the side is listed in the moves document, and a
//! program declaring it reads it from the arrays.

use crate::denormalize::moved::inverses_from_arrays;
use crate::error::{Error, Result};
use crate::schema::stored::{AdoptedInverse, BuildingInverse, InverseChange};
use crate::store::page::id_page;
use crate::store::session::Cx;
use mongodb::bson::{doc, Bson, Document as BsonDoc, RawDocumentBuf};
use mongodb::Database;

/// Builds `c`'s other side; `false` when `stop` said so first. `done`
/// hears the documents linked so far of the collection's total.
pub(super) async fn build(
    db: &Database,
    c: &InverseChange,
    stop: &mut impl FnMut() -> bool,
    done: &mut impl FnMut(u64, u64),
) -> Result<bool> {
    // One per build: the bound errors name its collections for the process.
    let kept: &'static AdoptedInverse = Box::leak(Box::new(AdoptedInverse {
        collection: c.collection.clone(),
        field: c.field.clone(),
        target: c.target.clone(),
        inverse: c.inverse.clone(),
    }));
    let holders = db.collection::<RawDocumentBuf>(&c.collection);
    let total = holders.count_documents(doc! {}).await.map_err(|e| Error::driver("count", c.collection.clone(), e))?;
    let (filter, mut after, mut linked) = (BsonDoc::new(), None::<Bson>, 0u64);
    done(0, total);
    while let Some(page) = id_page(&holders, &filter, after.clone(), None).await? {
        if stop() {
            return Ok(false);
        }
        let db2 = db.clone();
        crate::store::transaction::run(db, "build of a two-way reference's other side", &mut |s| {
            let (db, page) = (db2.clone(), page.clone());
            Box::pin(
                async move { inverses_from_arrays(&mut Cx::new(&db, Some(s)), kept, &page, &Default::default()).await },
            )
        })
        .await?;
        linked += page.len() as u64;
        done(linked.min(total), total);
        after = page.last().cloned();
    }
    Ok(true)
}

/// The other sides `changes` build, listed so that a program declaring
/// one reads it from the arrays until it is built ([`built`] unlists it).
pub(super) async fn announce(db: &Database, changes: &[InverseChange]) -> Result<()> {
    if changes.is_empty() {
        return Ok(());
    }
    let mut listed = crate::schema::stored::load_building(db).await?;
    for c in changes {
        let side = BuildingInverse::from(c);
        if !listed.contains(&side) {
            listed.push(side);
        }
    }
    crate::schema::stored::publish_building(db, &listed).await
}

/// `c`'s other side is built: it is read as stored from now on.
pub(super) async fn built(db: &Database, c: &InverseChange) -> Result<()> {
    let (side, listed) = (BuildingInverse::from(c), crate::schema::stored::load_building(db).await?);
    if !listed.contains(&side) {
        return Ok(());
    }
    let rest: Vec<BuildingInverse> = listed.into_iter().filter(|b| *b != side).collect();
    crate::schema::stored::publish_building(db, &rest).await
}
