//! Many elements appended to the buckets of many parents at once (issue
//! 40): a few round trips whatever the number of elements and parents,
//! where [`Bucket::append`] costs one or more per element.
//!
//! One aggregate on the parents reads each parent (an append for a parent
//! that does not exist is refused before anything is written) with the
//! last bucket of each window it appends to. One ordered `update` command
//! then fills each last bucket and opens the next ones, each statement an
//! upsert guarded by the count the bucket may hold before it: a bucket
//! filled meanwhile by another append refuses the statement (the unique
//! index on parent and page makes the upsert collide), and that statement
//! and every one after it go one element at a time through
//! [`Bucket::append`], in order. The buckets the command opened are
//! confirmed as one append confirms its own ([`super::bucket_opened`]):
//! their parents read again in one `find` when each is the first of its
//! window, else the parents with the buckets below them in one aggregate;
//! only a bucket found wanting is confirmed alone.

use super::bucket::{remember_page, Appended, Bucket, OpenPages};
use super::bucket_check::as_i64;
use crate::error::{show_id, Error, Result};
use crate::id::DocId;
use crate::schema::document::{BucketSpec, Document};
use crate::store::primary;
use crate::store::session::Cx;
use crate::store::updates::update_command;
use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, DateTime, Document as BsonDoc};
use mongodb::Database;
use serde::{de::DeserializeOwned, Serialize};
use std::collections::HashMap;

/// The elements of one parent's window (or of one parent, for count
/// buckets), in the order they were given.
struct Group {
    id: Bson,
    start: Option<DateTime>,
    elements: Vec<usize>,
}

/// The last bucket of a window as read: its number, count, and how many
/// buckets the window has.
#[derive(Clone, Copy)]
struct Last {
    number: i64,
    count: i64,
    buckets: i64,
}

/// One statement of the command: which elements go into which bucket.
struct Chunk {
    group: usize,
    number: i64,
    elements: Vec<usize>,
}

impl<B: Document, P: Document, E: Serialize + DeserializeOwned> Bucket<B, P, E> {
    /// [`Bucket::append_many`] as the bucket pattern does it, with no
    /// move filling the buckets.
    pub(crate) async fn append_many_unmoved(&self, db: &Database, items: &[(P::Id, E)]) -> Result<Vec<Appended>> {
        crate::client::trace::Op::new("append_many", B::COLLECTION)
            .documents(items.len())
            .run(async move {
                crate::schema::stored::hold(db).await?;
                let spec = self.spec()?;
                let values = items.iter().map(|(_, e)| self.element(e)).collect::<Result<Vec<Bson>>>()?;
                let groups = self.groups(spec, items);
                if groups.is_empty() {
                    return Ok(Vec::new());
                }
                let last = self.last_buckets(db, spec, &groups, true).await?;
                let chunks = plan(spec, &groups, &last);
                let sent = self.send(db, spec, &groups, &chunks, &values).await?;
                let mut out = vec![Appended { page: None, start: None }; items.len()];
                for chunk in &chunks[..sent.landed] {
                    let start = groups[chunk.group].start;
                    for &i in &chunk.elements {
                        out[i] = appended(start, chunk.number);
                    }
                }
                self.confirm(db, spec, &groups, &chunks[..sent.landed], &sent.opened).await?;
                self.remember(db, &groups, &chunks[..sent.landed]);
                // Refused by a bucket another append filled: the rest one by one, in order.
                for chunk in &chunks[sent.landed..] {
                    for &i in &chunk.elements {
                        out[i] = self.append_unmoved(db, &items[i].0, &items[i].1).await?;
                    }
                }
                Ok(out)
            })
            .await
    }

    /// The elements grouped by parent and window, in order of first sight.
    fn groups(&self, spec: &BucketSpec, items: &[(P::Id, E)]) -> Vec<Group> {
        let mut out: Vec<Group> = Vec::new();
        let mut index: HashMap<(String, Option<i64>), usize> = HashMap::new();
        for (i, (parent, element)) in items.iter().enumerate() {
            let start = match (spec.window_ms, self.time) {
                (Some(window), Some(time)) => {
                    Some(DateTime::from_millis(time(element).timestamp_millis().div_euclid(window) * window))
                }
                _ => None,
            };
            let id = parent.to_bson();
            let key = (show_id(&id), start.map(|s| s.timestamp_millis()));
            let g = *index.entry(key).or_insert_with(|| {
                out.push(Group { id, start, elements: Vec::new() });
                out.len() - 1
            });
            out[g].elements.push(i);
        }
        out
    }

    /// The last bucket of each group's window, by group, read with the
    /// parents in one aggregate. `refuse_missing`: a parent that does not
    /// exist is [`Error::NotFound`]; otherwise its groups are left out.
    async fn last_buckets(
        &self,
        db: &Database,
        spec: &BucketSpec,
        groups: &[Group],
        refuse_missing: bool,
    ) -> Result<HashMap<usize, Option<Last>>> {
        let mut parents: Vec<Bson> = groups.iter().map(|g| g.id.clone()).collect();
        parents.dedup();
        // With `localField` the server finds each parent's buckets by the
        // parent index (MongoDB 5.0+); before, by `$expr`, bucket by bucket.
        let indexed = crate::client::deployment::supports(db.client(), crate::client::deployment::LOOKUP_PIPELINE);
        let mut inner = Vec::new();
        if !indexed {
            inner.push(doc! {"$match": {"$expr": {"$eq": [format!("${}", spec.parent), "$$p"]}}});
        }
        let window = spec.window_ms.is_some();
        if window {
            let starts: Vec<Bson> = groups.iter().filter_map(|g| g.start.map(Bson::DateTime)).collect();
            inner.push(doc! {"$match": {spec.start: {"$in": starts}}});
        }
        let start = if window { Bson::String(format!("${}", spec.start)) } else { Bson::Null };
        inner.push(doc! {"$project": {"_id": 0, "s": start, "n": {"$ifNull": [format!("${}", spec.page), 1]}, "c": format!("${}", spec.count)}});
        inner.push(doc! {"$sort": {"s": 1, "n": -1}});
        inner.push(doc! {"$group": {"_id": "$s", "n": {"$first": "$n"}, "c": {"$first": "$c"}, "k": {"$sum": 1}}});
        let pipeline = vec![
            doc! {"$match": {"_id": {"$in": &parents}}},
            match indexed {
                true => {
                    doc! {"$lookup": {"from": B::COLLECTION, "localField": "_id", "foreignField": spec.parent, "pipeline": inner, "as": "b"}}
                }
                false => doc! {"$lookup": {"from": B::COLLECTION, "let": {"p": "$_id"}, "pipeline": inner, "as": "b"}},
            },
            doc! {"$project": {"_id": 1, "b": 1}},
        ];
        let err = |e| Error::driver("aggregate", P::COLLECTION, e);
        let coll = db.collection::<BsonDoc>(P::COLLECTION);
        let found: Vec<BsonDoc> = coll
            .aggregate(pipeline)
            .selection_criteria(primary())
            .await
            .map_err(err)?
            .try_collect()
            .await
            .map_err(err)?;
        let by_parent: HashMap<String, &BsonDoc> =
            found.iter().filter_map(|d| Some((show_id(d.get("_id")?), d))).collect();
        let mut out = HashMap::new();
        for (i, g) in groups.iter().enumerate() {
            let Some(parent) = by_parent.get(&show_id(&g.id)) else {
                if refuse_missing {
                    return Err(Error::NotFound { collection: P::COLLECTION, id: show_id(&g.id) });
                }
                continue;
            };
            let buckets = parent.get_array("b").map(Vec::as_slice).unwrap_or_default();
            let mine = buckets.iter().filter_map(Bson::as_document).find(|b| match g.start {
                Some(s) => b.get_datetime("_id").ok() == Some(&s),
                None => true,
            });
            let last = mine.map(|b| Last { number: int(b.get("n")), count: int(b.get("c")), buckets: int(b.get("k")) });
            out.insert(i, last);
        }
        Ok(out)
    }
}

impl<B: Document, P: Document, E: Serialize + DeserializeOwned> Bucket<B, P, E> {
    /// Sends the chunks' statements, in commands of at most
    /// [`STATEMENTS`] statements or [`COMMAND_BYTES`] of elements, in order;
    /// stops at the first statement a bucket filled meanwhile refused.
    async fn send(
        &self,
        db: &Database,
        spec: &BucketSpec,
        groups: &[Group],
        chunks: &[Chunk],
        values: &[Bson],
    ) -> Result<Sent> {
        let size = i64::from(spec.bound().unwrap_or(u32::MAX));
        let field = self.relation().field;
        let mut sent = Sent { landed: 0, opened: Vec::new() };
        let (mut statements, mut bytes, mut first) = (Vec::new(), 0usize, 0usize);
        for (c, chunk) in chunks.iter().enumerate() {
            let group = &groups[chunk.group];
            let mut filter = doc! { spec.parent: group.id.clone() };
            if let Some(start) = group.start {
                filter.insert(spec.start, start);
            }
            let number = match (group.start, chunk.number) {
                // A window's first bucket has no number (see `append`).
                (Some(_), ..=1) => Bson::Document(doc! {"$exists": false}),
                (_, n) => Bson::Int32(i32::try_from(n).unwrap_or(i32::MAX)),
            };
            filter.insert(spec.page, number);
            let m = chunk.elements.len() as i64;
            filter.insert(spec.count, doc! {"$lte": size - m});
            let elements: Vec<Bson> = chunk.elements.iter().map(|&i| values[i].clone()).collect();
            bytes += elements
                .iter()
                .map(|v| crate::bson_compat::to_vec(&doc! {"e": v}).map_or(0, |b| b.len()))
                .sum::<usize>();
            let push = vec![doc! {"$set": {
                // 32-bit, as a single append stores it (the reference text's `count`).
                spec.count: {"$add": [{"$ifNull": [format!("${}", spec.count), 0]}, i32::try_from(m).unwrap_or(i32::MAX)]},
                field: {"$concatArrays": [{"$ifNull": [format!("${field}"), []]}, {"$literal": elements}]},
            }}];
            statements.push(doc! {"q": filter, "u": push, "upsert": true});
            let last = c + 1 == chunks.len();
            if last || statements.len() >= STATEMENTS || bytes >= COMMAND_BYTES {
                let (landed, opened) = command(db, B::COLLECTION, std::mem::take(&mut statements)).await?;
                sent.opened.extend(opened.into_iter().map(|(i, id)| (first + i, id)));
                sent.landed = first + landed;
                if sent.landed < c + 1 {
                    return Ok(sent);
                }
                (bytes, first) = (0, c + 1);
            }
        }
        Ok(sent)
    }

    /// Confirms the buckets the command opened (`opened`: chunk, `_id`)
    /// as [`Bucket::append`] does, their parents and the buckets below
    /// them read again in one aggregate; a bucket found wanting (its parent
    /// gone, a number below it missing) is confirmed alone.
    async fn confirm(
        &self,
        db: &Database,
        spec: &'static BucketSpec,
        groups: &[Group],
        chunks: &[Chunk],
        opened: &[(usize, Bson)],
    ) -> Result<()> {
        if opened.is_empty() {
            return Ok(());
        }
        // Buckets numbered 1 have none below them: their parents' being
        // there is all there is to confirm, one `find` of the parents.
        let all_first = opened.iter().all(|(c, _)| chunks[*c].number <= 1);
        let (again, there) = match all_first {
            true => (HashMap::new(), self.parents_there(db, groups).await?),
            false => (self.last_buckets(db, spec, groups, false).await?, Default::default()),
        };
        for (c, id) in opened {
            let chunk = &chunks[*c];
            let group = &groups[chunk.group];
            // Whole: the parent is there and its window's buckets are numbered 1..=n.
            let whole = match all_first {
                true => there.contains(&show_id(&group.id)),
                false => again.get(&chunk.group).copied().flatten().is_some_and(|l| l.buckets == l.number),
            };
            if whole {
                continue;
            }
            self.confirm_opened(db, group.id.clone(), group.start, id.clone(), chunk.number).await?;
        }
        Ok(())
    }

    /// The parents of `groups` that exist, by [`show_id`]: one `find`.
    async fn parents_there(&self, db: &Database, groups: &[Group]) -> Result<std::collections::HashSet<String>> {
        let ids: Vec<Bson> = groups.iter().map(|g| g.id.clone()).collect();
        let err = |e| Error::driver("find", P::COLLECTION, e);
        let coll = db.collection::<BsonDoc>(P::COLLECTION);
        let find = coll.find(doc! {"_id": {"$in": ids}}).projection(doc! {"_id": 1}).selection_criteria(primary());
        let found: Vec<BsonDoc> = find.await.map_err(err)?.try_collect().await.map_err(err)?;
        Ok(found.iter().filter_map(|d| Some(show_id(d.get("_id")?))).collect())
    }

    /// Remembers each parent's last bucket, as [`Bucket::append`] does.
    fn remember(&self, db: &Database, groups: &[Group], chunks: &[Chunk]) {
        let pages = crate::kept::of_database::<OpenPages>(db);
        for chunk in chunks {
            let group = &groups[chunk.group];
            match group.start {
                None => remember_page(&pages, (B::COLLECTION, show_id(&group.id)), chunk.number),
                Some(start) if chunk.number > 1 => {
                    let key = format!("{}@{}", show_id(&group.id), start.timestamp_millis());
                    remember_page(&pages, (B::COLLECTION, key), chunk.number);
                }
                Some(_) => {}
            }
        }
    }
}

/// Statements per command, and bytes of elements per command: well below
/// the server's 100,000 statements and 16 MiB command.
const STATEMENTS: usize = 1_000;
const COMMAND_BYTES: usize = 8 * 1024 * 1024;

/// What the command did: how many chunks landed (in order), and the
/// buckets it opened (chunk, `_id`).
struct Sent {
    landed: usize,
    opened: Vec<(usize, Bson)>,
}

/// Where the chunks go: the last bucket's room first, then new buckets of
/// `size` each, numbered on from it.
fn plan(spec: &BucketSpec, groups: &[Group], last: &HashMap<usize, Option<Last>>) -> Vec<Chunk> {
    let size = i64::from(spec.bound().unwrap_or(u32::MAX)).max(1);
    let mut out = Vec::new();
    for (g, group) in groups.iter().enumerate() {
        let (mut number, mut room) = match last.get(&g).copied().flatten() {
            Some(l) => (l.number, (size - l.count).max(0)),
            None => (1, size),
        };
        let mut rest: &[usize] = &group.elements;
        while !rest.is_empty() {
            if room == 0 {
                (number, room) = (number + 1, size);
            }
            let m = usize::try_from(room).unwrap_or(usize::MAX).min(rest.len());
            out.push(Chunk { group: g, number, elements: rest[..m].to_vec() });
            rest = &rest[m..];
            room -= m as i64;
        }
    }
    out
}

/// One ordered `update` command: how many statements landed, and the
/// `_id`s of the buckets it opened (statement, `_id`). A statement refused
/// as a duplicate key (a bucket filled meanwhile) stops it there; any other
/// refusal is the error.
async fn command(
    db: &Database,
    collection: &'static str,
    statements: Vec<BsonDoc>,
) -> Result<(usize, Vec<(usize, Bson)>)> {
    let total = statements.len();
    let reply = update_command(&mut Cx::new(db, None), collection, statements, true).await?;
    let opened: Vec<(usize, Bson)> = reply
        .get_array("upserted")
        .map(|u| {
            u.iter()
                .filter_map(Bson::as_document)
                .filter_map(|d| Some((usize::try_from(int(d.get("index"))).ok()?, d.get("_id")?.clone())))
                .collect()
        })
        .unwrap_or_default();
    let error = reply.get_array("writeErrors").ok().and_then(|e| e.first()).and_then(Bson::as_document).cloned();
    if let Some(e) = error {
        let at = usize::try_from(int(e.get("index"))).unwrap_or(0);
        if int(e.get("code")) == 11000 {
            return Ok((at, opened));
        }
        return Err(Error::Invalid {
            what: crate::error::Misuse::Bucket,
            message: format!(
                "the server refused statement {} of {total} appending to `{collection}` ({}: {}); the statements \
                 before it were appended, none after it",
                at + 1,
                int(e.get("code")),
                e.get_str("errmsg").unwrap_or("no message")
            ),
        });
    }
    if let Ok(wc) = reply.get_document("writeConcernError") {
        return Err(Error::Invalid {
            what: crate::error::Misuse::Bucket,
            message: format!(
                "every statement appending to `{collection}` was applied, but the write concern was not met ({}: {})",
                int(wc.get("code")),
                wc.get_str("errmsg").unwrap_or("no message")
            ),
        });
    }
    Ok((total, opened))
}

/// Where an element went: its bucket's number (a time bucket's spill
/// number from 2) and window.
fn appended(start: Option<DateTime>, number: i64) -> Appended {
    match start {
        None => Appended { page: Some(number), start: None },
        Some(start) => Appended { page: (number > 1).then_some(number), start: Some(start) },
    }
}

/// A number the server answered (0 when it is none).
fn int(value: Option<&Bson>) -> i64 {
    as_i64(value).unwrap_or(0)
}
