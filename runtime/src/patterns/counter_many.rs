//! Many counter events recorded at once (issue 40): the events of one
//! parent's window add up into one upsert, and every window's upsert goes
//! in one `update` command, whatever the number of events and parents,
//! where [`Counter::record`] costs one round trip per event.

use super::counter::Counter;
use crate::error::{show_id, Error, Misuse, Result};
use crate::id::DocId;
use crate::schema::document::Document;
use crate::store::session::Cx;
use crate::store::updates::update_command;
use mongodb::bson::{doc, Bson, DateTime, Document as BsonDoc};
use mongodb::Database;
use serde::{de::DeserializeOwned, Serialize};
use std::collections::HashMap;

/// One window's events: how many, and their amounts added up.
struct Window {
    parent: Bson,
    start: DateTime,
    events: i64,
    sum: Option<Bson>,
}

impl<B: Document, P: Document, S: Serialize + DeserializeOwned + Send + Sync> Counter<B, P, S> {
    /// Counts many events at once, each `(parent, at, amount)` as
    /// [`Counter::record`] counts one: one upsert per parent and window,
    /// all of them in one `update` command (and one more for the windows
    /// two writers made at the same moment). Answers each event's window
    /// start, in order. An amount that is not a finite number is refused
    /// before anything is written; as with `record`, the parents are not
    /// read. An error of the server met on the way names the windows it
    /// left uncounted.
    ///
    /// ```
    /// # docrel::testing::doc_test(|db| async move {
    /// use docrel::{Document, bson::{oid::ObjectId, DateTime}};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "pages")]
    /// struct Page { #[serde(rename = "_id")] id: i32 }
    ///
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "page_hours")]
    /// struct PageHour {
    ///     #[serde(rename = "_id")] id: ObjectId,
    ///     #[parent_ref(to = Page)] page: i32,
    ///     start: DateTime,
    ///     #[bucket(counter, window = "hour", sum = seconds)] views: i64,
    ///     seconds: f64,
    /// }
    ///
    /// PageHour::repo(&db).ensure_indexes().await?;
    /// let at = DateTime::from_millis(1_700_006_400_000);
    /// let views = PageHour::rels().views;
    /// let events: Vec<(i32, DateTime, f64)> = (0..100).map(|i| (i % 4, at, 1.5)).collect();
    /// views.record_many(&db, &events).await?;
    /// let counted = views.counts(&db, &0, at, DateTime::from_millis(1_700_010_000_000)).await?;
    /// assert_eq!((counted[0].count, counted[0].sum), (25, 37.5));
    /// # Ok(()) });
    /// ```
    pub async fn record_many(&self, db: &Database, events: &[(P::Id, DateTime, S)]) -> Result<Vec<DateTime>> {
        crate::client::trace::Op::new("record_many", B::COLLECTION)
            .documents(events.len())
            .run(async move {
                let spec = self.spec()?;
                let mut windows: Vec<Window> = Vec::new();
                let mut index: HashMap<(String, i64), usize> = HashMap::new();
                let mut out = Vec::with_capacity(events.len());
                for (parent, at, amount) in events {
                    let start = Self::window_of(spec, *at);
                    let amount = match spec.sum {
                        Some(_) => Some(self.amount(amount)?),
                        None => None,
                    };
                    let parent = parent.to_bson();
                    let key = (show_id(&parent), start.timestamp_millis());
                    let w = *index.entry(key).or_insert_with(|| {
                        windows.push(Window { parent, start, events: 0, sum: None });
                        windows.len() - 1
                    });
                    windows[w].events += 1;
                    windows[w].sum = add(windows[w].sum.take(), amount);
                    out.push(start);
                }
                let statements: Vec<BsonDoc> = windows
                    .iter()
                    .map(|w| {
                        let mut inc = doc! { spec.count: w.events };
                        if let (Some(field), Some(sum)) = (spec.sum, &w.sum) {
                            inc.insert(field, sum.clone());
                        }
                        doc! {"q": {spec.parent: w.parent.clone(), spec.start: w.start}, "u": {"$inc": inc}, "upsert": true}
                    })
                    .collect();
                // Two first events of a window may race to make it: the unique
                // index refuses one upsert, which then finds the window made.
                let refused = upserts(db, B::COLLECTION, statements.clone()).await?;
                if !refused.is_empty() {
                    let again: Vec<BsonDoc> = refused.iter().map(|&i| statements[i].clone()).collect();
                    let still = upserts(db, B::COLLECTION, again).await?;
                    if let Some(&i) = still.first() {
                        return Err(Error::Invalid {
                            what: Misuse::Bucket,
                            message: format!(
                                "the window of `{}` at {} for parent {} was refused twice as a duplicate; the other \
                                 windows were counted",
                                B::COLLECTION,
                                windows[refused[i]].start,
                                show_id(&windows[refused[i]].parent)
                            ),
                        });
                    }
                }
                Ok(out)
            })
            .await
    }
}

/// Two amounts added as `$inc` adds them: whole numbers stay whole.
fn add(a: Option<Bson>, b: Option<Bson>) -> Option<Bson> {
    let whole = |v: &Bson| match v {
        Bson::Int32(n) => Some(i64::from(*n)),
        Bson::Int64(n) => Some(*n),
        _ => None,
    };
    let real = |v: &Bson| match v {
        Bson::Double(d) => *d,
        other => whole(other).unwrap_or(0) as f64,
    };
    match (a, b) {
        (None, b) => b,
        (a, None) => a,
        (Some(a), Some(b)) => match (whole(&a), whole(&b)) {
            (Some(x), Some(y)) => Some(x.checked_add(y).map_or(Bson::Double(x as f64 + y as f64), Bson::Int64)),
            _ => Some(Bson::Double(real(&a) + real(&b))),
        },
    }
}

/// One unordered `update` command of upserts; the statements it refused
/// as duplicate keys (any other refusal is the error).
async fn upserts(db: &Database, collection: &'static str, statements: Vec<BsonDoc>) -> Result<Vec<usize>> {
    let total = statements.len();
    let reply = update_command(&mut Cx::new(db, None), collection, statements, false).await?;
    let number = |d: &BsonDoc, f: &str| super::bucket_check::as_i64(d.get(f)).unwrap_or(0);
    let mut refused = Vec::new();
    for e in reply.get_array("writeErrors").map(Vec::as_slice).unwrap_or_default().iter().filter_map(Bson::as_document)
    {
        if number(e, "code") != 11000 {
            return Err(Error::Invalid {
                what: Misuse::Bucket,
                message: format!(
                    "the server refused {} of {total} windows of `{collection}` ({}: {}); the others were counted",
                    reply.get_array("writeErrors").map_or(1, Vec::len),
                    number(e, "code"),
                    e.get_str("errmsg").unwrap_or("no message")
                ),
            });
        }
        refused.push(usize::try_from(number(e, "index")).unwrap_or(0));
    }
    if let Ok(wc) = reply.get_document("writeConcernError") {
        return Err(Error::Invalid {
            what: Misuse::Bucket,
            message: format!(
                "every window of `{collection}` was counted, but the write concern was not met ({}: {})",
                number(wc, "code"),
                wc.get_str("errmsg").unwrap_or("no message")
            ),
        });
    }
    Ok(refused)
}
