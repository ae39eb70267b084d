//! The executor of relation loads: ONE query per target collection and
//! key, however many relations and parents, the `$in` lists split into
//! chunks only when they are longer than one.

use super::request::{union_projection, JoinSet, LoadQuery, Pending, DEFAULT_CHUNK};
use crate::bson_compat;
use crate::error::Result;
use crate::store::options::{count, read_setters};
use crate::store::query::Filter;
use mongodb::bson::{doc, Bson, RawDocumentBuf};
use mongodb::{ClientSession, Database};

/// Runs several relation loads together: ONE `find` per target collection
/// (relations into the same collection are merged into one `$in` with the
/// union of their projections), so K relations over N parents cost at most
/// 1 + K round trips counting the parents' own query, whatever N is.
///
/// ```
/// # docrel::testing::doc_test(|db| async move {
/// use docrel::{Document, bson::oid::ObjectId};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "people")]
/// struct Person { #[serde(rename = "_id")] id: ObjectId, name: String }
///
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "tasks")]
/// struct Task {
///     #[serde(rename = "_id")] id: ObjectId,
///     description: String,
///     #[reference(to = Person)] owner: ObjectId,
///     #[reference(to = Person)] reviewer: Option<ObjectId>,
/// }
///
/// let kate = Person { id: ObjectId::new(), name: "Kate Monster".into() };
/// Person::repo(&db).insert(&kate).await?;
/// let tasks = vec![Task { id: ObjectId::new(), description: "Write lesson plan".into(), owner: kate.id, reviewer: None }];
///
/// let trips = docrel::testing::round_trips(&db);
/// let mark = trips.mark();
/// let (owners, reviewers) = docrel::join(&db, (
///     Task::rels().owner.of::<Person>(&tasks),
///     Task::rels().reviewer.of::<Person>(&tasks),
/// )).await?;
/// assert_eq!(trips.since(mark), 1); // both relations into `people`: one query
/// assert_eq!(owners.one(0).map(|p| p.name.as_str()), Some("Kate Monster"));
/// assert!(reviewers.one(0).is_none());
/// # Ok(()) });
/// ```
pub fn join<J: JoinSet>(db: &Database, set: J) -> Join<'_, J> {
    Join { db, set, chunk: DEFAULT_CHUNK, session: None }
}

/// Relation loads run together; from [`join`]. Await it.
#[must_use = "a Join does nothing until awaited"]
pub struct Join<'a, J> {
    db: &'a Database,
    set: J,
    chunk: usize,
    session: Option<&'a mut ClientSession>,
}

impl<J> std::fmt::Debug for Join<'_, J> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Join").field("database", &self.db.name()).field("chunk", &self.chunk).finish()
    }
}

impl<'a, J: JoinSet> Join<'a, J> {
    read_setters! {
        /// Splits `$in` lists into chunks of at most `chunk` ids (by default
        /// [`DEFAULT_CHUNK`]).
        chunk => chunk;
        /// Reads in `session`, like the driver's `.session(..)`: inside the
        /// caller's transaction it sees the transaction's own writes.
        session<'a> => session;
    }

    /// Runs the loads (what `.await` does).
    pub async fn run(self) -> Result<J::Output> {
        join_in(self.db, self.set, self.chunk, self.session).await
    }
}

impl<'a, J: JoinSet + Send + 'a> std::future::IntoFuture for Join<'a, J>
where
    J::Output: Send,
{
    type Output = Result<J::Output>;
    type IntoFuture = futures::future::BoxFuture<'a, Self::Output>;
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run())
    }
}

/// [`join`] with `$in` lists split into chunks of at most `chunk` ids
/// (`join(db, set).chunk(chunk)`).
pub async fn join_chunked<J: JoinSet>(db: &Database, set: J, chunk: usize) -> Result<J::Output> {
    join_in(db, set, chunk, None).await
}

/// [`join_chunked`] read in the caller's session, when given.
pub(crate) async fn join_in<J: JoinSet>(
    db: &Database,
    mut set: J,
    chunk: usize,
    session: Option<&mut ClientSession>,
) -> Result<J::Output> {
    // The span names the collections loaded from ("parts,suppliers").
    let mut targets: Vec<&str> = Vec::new();
    for p in set.pendings() {
        if !targets.contains(&p.collection()) {
            targets.push(p.collection());
        }
    }
    let op = crate::client::trace::Op::new("load", &targets.join(","));
    op.run(async move {
        run(db, set.pendings(), chunk.max(1), session).await?;
        Ok(set.finish())
    })
    .await
}

/// Runs the pending loads: the plain ones into the same collection and key
/// merged into one query, each other one a query of its own.
async fn run(
    db: &Database,
    mut pendings: Vec<&mut dyn Pending>,
    chunk: usize,
    mut session: Option<&mut ClientSession>,
) -> Result<()> {
    for p in &pendings {
        if let Some(LoadQuery { per_parent, skip_per_parent, .. }) = p.query() {
            per_parent.map(|n| count("limit_per_parent", n)).transpose()?;
            count("skip_per_parent", *skip_per_parent)?;
        }
    }
    for (collection, key, members) in groups(&pendings) {
        let ids = union_ids(members.iter().map(|&i| pendings[i].ids()).collect());
        if ids.is_empty() {
            continue;
        }
        let projection = union_projection(members.iter().map(|&i| pendings[i].projection()), key);
        let mut query = pendings[members[0]].query().cloned().unwrap_or_default();
        let extra = query.read.filter.take().map(Filter::into_document).transpose()?;
        let coll = db.collection::<RawDocumentBuf>(collection);
        let mut remaining = query.read.limit.map(|l| count("limit", l)).transpose()?;
        // The id list moves into the command; split (and copied) only when
        // it is longer than a chunk.
        let parts: Vec<Vec<Bson>> =
            if ids.len() <= chunk { vec![ids] } else { ids.chunks(chunk).map(<[Bson]>::to_vec).collect() };
        for part in parts {
            if remaining.is_some_and(|r| r <= 0) {
                break;
            }
            let mut filter = doc! { key: {"$in": part} };
            if let Some(extra) = &extra {
                filter = doc! {"$and": [filter, extra.clone()]};
            }
            let mut options = query.read.one_batch(projection.clone())?;
            options.limit = remaining;
            crate::store::moving::collect_find(&coll, filter, options, session.as_deref_mut(), |raw| {
                if let Some(r) = &mut remaining {
                    *r -= 1;
                }
                for &i in &members {
                    pendings[i].absorb(raw)?;
                }
                Ok(())
            })
            .await?;
        }
    }
    Ok(())
}

/// The pendings grouped by (collection, key), by index: one query per
/// group. A request with its own filter, order or limit is a group of its own.
fn groups(pendings: &[&mut dyn Pending]) -> Vec<(&'static str, &'static str, Vec<usize>)> {
    let mut groups: Vec<(&'static str, &'static str, Vec<usize>)> = Vec::new();
    for (i, p) in pendings.iter().enumerate() {
        let (c, k) = (p.collection(), p.key_path());
        let plain = p.query().is_none_or(LoadQuery::is_plain);
        match groups
            .iter_mut()
            .find(|(gc, gk, m)| plain && *gc == c && *gk == k && pendings[m[0]].query().is_none_or(LoadQuery::is_plain))
        {
            Some(g) => g.2.push(i),
            None => groups.push((c, k, vec![i])),
        }
    }
    groups
}

/// The ids of merged relations, each once (by the ids' BSON bytes).
fn union_ids(mut lists: Vec<Vec<Bson>>) -> Vec<Bson> {
    if lists.len() == 1 {
        return lists.pop().unwrap_or_default();
    }
    let mut seen = std::collections::HashSet::<_, foldhash::fast::RandomState>::default();
    let mut out = Vec::new();
    for id in lists.into_iter().flatten() {
        let bytes = bson_compat::to_vec(&doc! {"": &id}).unwrap_or_default();
        if seen.insert(bytes) {
            out.push(id);
        }
    }
    out
}
