//! The appends of a bucket array ([`Bucket::append`],
//! [`Bucket::append_many`]): as the bucket pattern makes them, or, while a
//! move fills the buckets from an embedded array (`moved_from` on the
//! bucket document), to the parent's array, whose shape every page
//! follows: the element pushed and the parent's pages made again from
//! the array, in one transaction.

use super::paged::last_place;
use super::{collection_from_arrays, mark, Reach};
use crate::error::{Error, Misuse, Result};
use crate::id::DocId;
use crate::patterns::{Appended, Bucket};
use crate::schema::document::Document;
use crate::schema::stored::{ActiveMove, MoveState};
use crate::store::session::Cx;
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::Database;
use serde::{de::DeserializeOwned, Serialize};

impl<B: Document, P: Document, E: Serialize + DeserializeOwned> Bucket<B, P, E> {
    /// Appends one element to the parent's open bucket, or opens the next:
    /// one update of the page this process appended to last; otherwise an
    /// upsert from the stored last page (more when that page is full). An
    /// append that opens a new bucket (page or time window) checks that the
    /// parent exists, one more round trip, and is refused with
    /// [`Error::NotFound`] if not (so an append for a parent that does not
    /// exist is refused and leaves no bucket). Never more than `size` per
    /// bucket, never one page twice, no element lost, under any concurrency
    /// (given `ensure_indexes`). A time bucket holds at most `size`
    /// elements too ([`crate::schema::TIME_BUCKET_SIZE`] when it declares none): a
    /// busy window goes on in a second bucket of the same window, and
    /// [`Bucket::all`] and [`Bucket::range`] read them in order.
    ///
    /// While a move fills these buckets from an embedded array
    /// (`moved_from` on the bucket document), the element is pushed to the
    /// parent's array within its old bound ([`Error::EmbedFull`]) and the
    /// parent's buckets are made again from it, in one transaction;
    /// refused before the move is maintained.
    pub async fn append(&self, db: &Database, parent: &P::Id, element: &E) -> Result<Appended> {
        crate::schema::stored::hold(db).await?;
        if self.moving(db)?.is_none() {
            return self.append_unmoved(db, parent, element).await;
        }
        let value = self.element(element)?;
        self.append_moving(db, parent.to_bson(), value).await
    }

    /// Appends many elements, each to its parent's buckets as
    /// [`Bucket::append`] would, in a few round trips whatever the number
    /// of elements and parents: one read of the parents and their last
    /// buckets, one `update` command, and one read confirming the buckets
    /// it opened. Each element lands once, in the order given within its
    /// parent (and window); no bucket passes its size, under any
    /// concurrency (given `ensure_indexes`). Answers where each element
    /// went, in the order given.
    ///
    /// Refused with nothing written when an element is invalid or a
    /// parent does not exist ([`Error::NotFound`]). An error of the server
    /// met on the way leaves the elements before it appended (the command
    /// is ordered) and none after it.
    ///
    /// ```
    /// # docrel::testing::doc_test(|db| async move {
    /// use docrel::{Document, bson::{oid::ObjectId, DateTime}};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "sensors")]
    /// struct Sensor { #[serde(rename = "_id")] id: i32 }
    ///
    /// #[derive(Serialize, Deserialize, Clone)]
    /// struct Reading { t: DateTime, value: f64 }
    ///
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "readings")]
    /// struct Hour {
    ///     #[serde(rename = "_id")] id: ObjectId,
    ///     #[parent_ref(to = Sensor)] sensor: i32,
    ///     start: DateTime,
    ///     count: i32,
    ///     #[bucket(by = t, window = "hour")] readings: Vec<Reading>,
    /// }
    ///
    /// Hour::repo(&db).ensure_indexes().await?;
    /// Sensor::repo(&db).insert_many(&[Sensor { id: 1 }, Sensor { id: 2 }]).await?;
    /// let t = DateTime::from_millis(1_700_000_000_000);
    /// let batch: Vec<(i32, Reading)> =
    ///     (0..300).map(|i| (i % 2 + 1, Reading { t, value: f64::from(i) })).collect();
    /// let readings = Hour::rels().readings;
    /// readings.append_many(&db, &batch).await?;
    /// assert_eq!(readings.all(&db, &1).await?.len(), 150);
    /// # Ok(()) });
    /// ```
    pub async fn append_many(&self, db: &Database, items: &[(P::Id, E)]) -> Result<Vec<Appended>> {
        crate::schema::stored::hold(db).await?;
        if self.moving(db)?.is_none() {
            return self.append_many_unmoved(db, items).await;
        }
        // Each element to its parent's array, in order; all checked first.
        let values = items.iter().map(|(_, e)| self.element(e)).collect::<Result<Vec<Bson>>>()?;
        let mut out = Vec::with_capacity(items.len());
        for ((parent, _), value) in items.iter().zip(values) {
            out.push(self.append_moving(db, parent.to_bson(), value).await?);
        }
        Ok(out)
    }

    /// [`Bucket::append`] while `mv` keeps the parent's array: `value`
    /// pushed to it (within the old bound, [`Error::EmbedFull`]) and the
    /// parent's pages made its slices, in one transaction, retried whole
    /// on a conflict with the state the move is in then.
    async fn append_moving(&self, db: &Database, parent: Bson, value: Bson) -> Result<Appended> {
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
