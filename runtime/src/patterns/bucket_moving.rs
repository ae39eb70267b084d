//! Appends to buckets that a move fills from an embedded array
//! (`#[document(moved_from = Post::comments)]` on a bucket document):
//! while the array is kept, it is the shape every page follows, so an
//! append pushes to the parent's array and the parent's pages are made
//! again from it, in one transaction. Reads of the pages wait until the
//! move has made every one (`moved`).

use super::bucket::{Appended, Bucket};
use crate::denormalize::moved::{collection_from_arrays, last_place, mark, Reach};
use crate::error::{Error, Misuse, Result};
use crate::schema::document::Document;
use crate::schema::stored::{ActiveMove, MoveState};
use crate::store::session::Cx;
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::Database;

impl<B: Document, P: Document, E> Bucket<B, P, E> {
    /// The move filling `B`'s pages now, if any; refused when its pages
    /// cannot take an append yet, or when this program declares one the
    /// database has not started while it keeps the array.
    pub(super) fn moving(&self, db: &Database) -> Result<Option<&'static ActiveMove>> {
        let graph = crate::schema::graph::of(db);
        match graph.filling_pages(B::COLLECTION) {
            Some(mv) if mv.state < MoveState::Maintained => Err(Error::Invalid {
                what: Misuse::Schema,
                message: format!(
                    "`{}` is moving into buckets ({}): the pages take appends once the move is maintained; nothing \
                     was written. `docrel schema status` shows where it stands",
                    mv.spec.label(),
                    mv.state
                ),
            }),
            Some(mv) => Ok(Some(mv)),
            None => match graph.unmade_pages(B::COLLECTION) {
                Some(why) => {
                    Err(Error::Invalid { what: Misuse::Schema, message: format!("{why}; nothing was written") })
                }
                None => Ok(None),
            },
        }
    }

    /// Refuses a read of pages the move has not all made yet.
    pub(super) fn readable(&self, db: &Database) -> Result<()> {
        match crate::schema::graph::of(db).unmade_pages(B::COLLECTION) {
            Some(why) => Err(crate::store::moving::unmade(why)),
            None => Ok(()),
        }
    }

    /// [`Bucket::append`] while `mv` keeps the parent's array: `value`
    /// pushed to it (within the old bound, [`Error::EmbedFull`]) and the
    /// parent's pages made its slices, in one transaction, retried whole
    /// on a conflict with the state the move is in then.
    pub(super) async fn append_moving(&self, db: &Database, parent: Bson, value: Bson) -> Result<Appended> {
        let db2 = db.clone();
        let pushed = crate::store::transaction::run(db, "append during a move into buckets", &mut |s| {
            let (db, parent, value) = (db2.clone(), parent.clone(), value.clone());
            Box::pin(async move {
                let graph = crate::schema::graph::of(&db);
                let Some(mv) = graph.filling_pages(B::COLLECTION) else {
                    return Err(Error::Invalid {
                        what: Misuse::Schema,
                        message: format!(
                            "the move filling `{}` ended while appending; nothing was written: append again",
                            B::COLLECTION
                        ),
                    });
                };
                let cx = &mut Cx::new(&db, Some(s));
                let parents = [parent.clone()];
                // A parent the copy has not reached gets its pages first.
                collection_from_arrays(cx, mv, &parents, Reach::Full).await?;
                let array = push(cx, mv, &parent, value).await?;
                collection_from_arrays(cx, mv, &parents, Reach::Full).await?;
                if mv.state == MoveState::Maintained {
                    mark(cx, mv, &parents).await?;
                }
                Ok(mv.spec.buckets.as_ref().map(|b| last_place(b, &array)))
            })
        })
        .await?;
        Ok(match pushed {
            // A time bucket's page is its spill number, from 2.
            Some((Some(start), spill)) => Appended {
                page: (spill > 1).then_some(spill),
                start: Some(mongodb::bson::DateTime::from_millis(start)),
            },
            Some((None, page)) => Appended { page: Some(page), start: None },
            None => Appended { page: None, start: None },
        })
    }
}

/// Pushes `value` to the parent's array within the move's bound; the
/// array after it.
async fn push(cx: &mut Cx<'_>, mv: &'static ActiveMove, parent: &Bson, value: Bson) -> Result<Vec<Bson>> {
    let from = &mv.spec.from.collection;
    let coll = cx.db.collection::<BsonDoc>(from);
    let mut filter = doc! {"_id": parent.clone()};
    if let Some(max) = mv.bound.filter(|m| *m > 0) {
        filter.insert(format!("{}.{}", mv.field, max - 1), doc! {"$exists": false});
    }
    let update = doc! {"$push": {&mv.field: value}};
    let found = crate::store::session::in_session!(
        coll.find_one_and_update(filter, update)
            .return_document(mongodb::options::ReturnDocument::After)
            .projection(doc! {&mv.field: 1}),
        cx.session()
    )
    .map_err(|e| Error::driver("findAndModify", from.clone(), e))?;
    if let Some(d) = found {
        return Ok(d.get_array(&mv.field).cloned().unwrap_or_default());
    }
    let id = crate::bson_compat::relaxed_extjson(parent);
    let stored = crate::denormalize::moved::read(cx, from, doc! {"_id": parent.clone()}, Some(doc! {"_id": 1}));
    if stored.await?.is_empty() {
        return Err(Error::NotFound { collection: from.as_str(), id });
    }
    let max = mv.bound.unwrap_or(0);
    Err(Error::EmbedFull { collection: from, id, field: &mv.field, max, len: max as usize })
}
