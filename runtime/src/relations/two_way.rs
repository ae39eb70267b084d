//! Link, unlink and reassign through references, keeping both sides of a
//! two-way reference (`inverse = ..`) right in one call: inside a
//! transaction when the deployment supports one, and saying whether it did.

use crate::error::{show_id, Error, Result};
use crate::schema::document::{Relation, RelationKind, Schema};
use crate::schema::graph::{Graph, Shape};
use crate::store::session::{in_session, Cx};
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::options::ReturnDocument;
use mongodb::{ClientSession, Database};

/// What a link, unlink or reassign did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkOutcome {
    /// Whether both sides were written in one transaction (all or nothing).
    /// When `false` the deployment has no transactions (a standalone server)
    /// and the writes ran one after the other: a crash between them leaves
    /// one side behind, as the reference texts warn for two-way references.
    pub transactional: bool,
    /// Whether anything changed (linking twice changes nothing the second time).
    pub changed: bool,
}

/// One side of a relationship, as the writes see it.
#[derive(Clone, Copy)]
struct Side {
    collection: &'static str,
    field: &'static str,
    many: bool,
    optional: bool,
    max: Option<u32>,
}

impl Side {
    /// The side `rel` of `collection` is, bounded as writes to the database
    /// of `g` keep it ([`Graph::bound`]).
    fn of(g: &Graph, collection: &'static str, rel: &Relation) -> Result<Side> {
        let (many, optional, max) = match rel.kind {
            RelationKind::RefMany { key: Some(_), .. } => {
                return Err(Error::Invalid {
                    what: crate::error::Misuse::Link,
                    message: format!(
                        "`{}` holds `{{id, ..}}` structs: link/unlink cannot make the other fields of an element; push \
                         the element with the update builder (`fields().{}.push(..)`) instead",
                        rel.field, rel.rust_field
                    ),
                })
            }
            RelationKind::RefMany { max, .. } => (true, true, max),
            RelationKind::RefOne { optional } => (false, optional, None),
            RelationKind::ParentRef => (false, false, None),
            RelationKind::Embed { .. } | RelationKind::Bucket => {
                return Err(Error::Invalid {
                    what: crate::error::Misuse::Link,
                    message: format!("`{}` is an embed, not a reference", rel.field),
                })
            }
        };
        Ok(Side { collection, field: rel.field, many, optional, max: g.bound(collection, rel.field, max) })
    }

    /// The other side of `rel` (declared on `collection`), if it is two-way.
    fn inverse(g: &'static Graph, rel: &'static Relation) -> Result<Option<Side>> {
        let (Some(target), Some(inverse)) = (rel.target, rel.inverse) else { return Ok(None) };
        match g.inverse_of(rel) {
            Some((schema, r)) => Side::of(g, schema.collection, r).map(Some),
            None => Err(Error::Invalid {
                what: crate::error::Misuse::Inverse,
                message: format!(
                    "`{}` names `{inverse}` of `{target}` as its inverse, but that field carries no `#[reference]`: \
                     add `#[reference(.., inverse = {})]` on it",
                    rel.field, rel.rust_field
                ),
            }),
        }
    }
}

/// The writes of one call: inside a transaction (`transactional`), or, on
/// a deployment without transactions, one after the other with a log of
/// how to undo each, applied in reverse if a later write fails.
struct Writes<'s> {
    db: Database,
    session: Option<&'s mut ClientSession>,
    transactional: bool,
    undo: Vec<(Side, BsonDoc, BsonDoc)>,
}

/// One link or unlink, owned so that a transaction can run it again.
#[derive(Clone)]
enum Op {
    Link { how: How, rel: &'static Relation, near: Side, far: Option<Side>, x: Bson, y: Bson },
    Unlink { near: Side, far: Option<Side>, x: Bson, y: Bson },
}

/// Which link: asked for ([`link`]), owed by a new document to one that
/// lists it already ([`link_back`]), or written again after a delete's
/// pull ([`relink`]).
#[derive(Clone, Copy)]
enum How {
    Asked,
    Back,
    Again,
}

impl Op {
    async fn run(self, w: &mut Writes<'_>) -> Result<bool> {
        match self {
            Op::Link { how: How::Asked, rel, near, far, x, y } => link_body(w, rel, near, far, &x, &y).await,
            Op::Link { how: How::Back, rel, near, far, x, y } => link_back_body(w, rel, near, far, &x, &y).await,
            // Only while `x` still names `y`: a reassign since is not undone.
            Op::Link { how: How::Again, rel, near, far, x, y } => match w.holds(near, &x, &y).await? {
                true => link_body(w, rel, near, far, &x, &y).await,
                false => Ok(false),
            },
            Op::Unlink { near, far, x, y } => unlink_body(w, near, far, &x, &y).await,
        }
    }
}

/// Runs `op` over both sides: in the caller's transaction when `session`
/// is in one; otherwise in a transaction through the driver's convenient
/// API (a conflict with a concurrent reassign is retried, the commit alone
/// on an unknown result), or, when the server has no transactions (a
/// standalone), once without one, undone on failure.
async fn run_writes(cx: &mut Cx<'_>, what: &'static str, op: Op) -> Result<LinkOutcome> {
    // With the caller's session the attempt is always made: it may be in a
    // transaction, which then runs the writes whatever the deployment.
    if cx.has_session() || !crate::store::transaction::standalone(cx.db) {
        let db = cx.db.clone();
        let result = crate::store::transaction::run_or_join(cx, what, &mut |session| {
            let (db, op) = (db.clone(), op.clone());
            Box::pin(async move {
                let mut w = Writes { db, session: Some(session), transactional: true, undo: Vec::new() };
                op.run(&mut w).await
            })
        })
        .await;
        match result {
            Ok(changed) => return Ok(LinkOutcome { transactional: true, changed }),
            // Refused at its first write: nothing was written.
            Err(e) if crate::store::transaction::unsupported(&e) => {
                crate::store::transaction::remember_standalone(cx.db)
            }
            Err(e) => return Err(e),
        }
    }
    let mut w = Writes { db: cx.db.clone(), session: cx.session(), transactional: false, undo: Vec::new() };
    match op.run(&mut w).await {
        Ok(changed) => Ok(LinkOutcome { transactional: false, changed }),
        Err(e) => {
            // Undo what was written, newest first; the first error is the one to report.
            while let Some((side, filter, update)) = w.undo.pop() {
                let coll = w.db.collection::<BsonDoc>(side.collection);
                let _ = in_session!(coll.update_one(filter, update), w.session.as_deref_mut());
            }
            Err(e)
        }
    }
}

impl Writes<'_> {
    async fn update(&mut self, side: Side, filter: BsonDoc, update: BsonDoc) -> Result<(u64, u64)> {
        let coll = self.db.collection::<BsonDoc>(side.collection);
        let r = in_session!(coll.update_one(filter, update), self.session.as_deref_mut())
            .map_err(|e| Error::driver("update", side.collection, e))?;
        Ok((r.matched_count, r.modified_count))
    }

    /// Sets a single reference, returning the document as it was (or `None`).
    async fn swap(&mut self, side: Side, id: &Bson, update: BsonDoc) -> Result<Option<BsonDoc>> {
        let coll = self.db.collection::<BsonDoc>(side.collection);
        let action = coll
            .find_one_and_update(doc! {"_id": id.clone()}, update)
            .projection(doc! { side.field: 1 })
            .return_document(ReturnDocument::Before);
        in_session!(action, self.session.as_deref_mut()).map_err(|e| Error::driver("findAndModify", side.collection, e))
    }

    /// What the single reference `side` of document `id` names: `None`
    /// when there is no such document, `Some(None)` when it names nothing.
    async fn named(&mut self, side: Side, id: &Bson) -> Result<Option<Option<Bson>>> {
        let coll = self.db.collection::<BsonDoc>(side.collection);
        let action = coll
            .find_one(doc! {"_id": id.clone()})
            .projection(doc! { side.field: 1 })
            .selection_criteria(crate::store::primary());
        let found =
            in_session!(action, self.session.as_deref_mut()).map_err(|e| Error::driver("find", side.collection, e))?;
        Ok(found.map(|d| d.get(side.field).filter(|v| **v != Bson::Null).cloned()))
    }

    /// Whether `side` of document `id` holds `value` (names it, or lists it).
    async fn holds(&mut self, side: Side, id: &Bson, value: &Bson) -> Result<bool> {
        let coll = self.db.collection::<BsonDoc>(side.collection);
        let filter = doc! {"_id": id.clone(), side.field: value.clone()};
        let action = coll.count_documents(filter).limit(1).selection_criteria(crate::store::primary());
        let n =
            in_session!(action, self.session.as_deref_mut()).map_err(|e| Error::driver("count", side.collection, e))?;
        Ok(n > 0)
    }

    async fn exists(&mut self, side: Side, id: &Bson) -> Result<bool> {
        let coll = self.db.collection::<BsonDoc>(side.collection);
        let action =
            coll.count_documents(doc! {"_id": id.clone()}).limit(1).selection_criteria(crate::store::primary());
        let n =
            in_session!(action, self.session.as_deref_mut()).map_err(|e| Error::driver("count", side.collection, e))?;
        Ok(n > 0)
    }

    /// Records how to undo a write, when there is no transaction to abort.
    fn log_undo(&mut self, side: Side, filter: BsonDoc, update: BsonDoc) {
        if !self.transactional {
            self.undo.push((side, filter, update));
        }
    }

    /// Adds `value` to `side` of document `id`: `$addToSet` for arrays (only
    /// while under the bound), `$set` for single references, returning the
    /// value it replaced.
    async fn attach(&mut self, side: Side, id: &Bson, value: &Bson) -> Result<Attached> {
        if side.many {
            let mut filter = doc! {"_id": id.clone()};
            if let Some(max) = side.max {
                // Room for one more, or it is already there (then nothing changes).
                filter.insert(
                    "$or",
                    vec![
                        doc! { format!("{}.{}", side.field, max - 1): {"$exists": false} },
                        doc! { side.field: value.clone() },
                    ],
                );
            }
            let (matched, modified) =
                self.update(side, filter, doc! {"$addToSet": { side.field: value.clone() }}).await?;
            if matched == 0 {
                if side.max.is_some() && self.exists(side, id).await? {
                    return Err(Error::EmbedFull {
                        collection: side.collection,
                        id: show_id(id),
                        field: side.field,
                        max: side.max.unwrap_or_default(),
                        len: side.max.unwrap_or_default() as usize + 1,
                    });
                }
                return Err(Error::NotFound { collection: side.collection, id: show_id(id) });
            }
            if modified > 0 {
                self.log_undo(side, doc! {"_id": id.clone()}, doc! {"$pull": { side.field: value.clone() }});
            }
            Ok(Attached { changed: modified > 0, replaced: None })
        } else {
            let before = self.swap(side, id, doc! {"$set": { side.field: value.clone() }}).await?;
            let Some(before) = before else {
                return Err(Error::NotFound { collection: side.collection, id: show_id(id) });
            };
            // Undo restores the previous owner; a required reference is never unset.
            let restore = match before.get(side.field) {
                Some(previous) => doc! {"$set": { side.field: previous.clone() }},
                None => doc! {"$unset": { side.field: "" }},
            };
            self.log_undo(side, doc! {"_id": id.clone()}, restore);
            let replaced = before.get(side.field).filter(|b| *b != value && **b != Bson::Null).cloned();
            Ok(Attached { changed: before.get(side.field) != Some(value), replaced })
        }
    }

    /// Removes `value` from `side` of document `id` (pull, or unset when it
    /// holds exactly that value).
    async fn detach(&mut self, side: Side, id: &Bson, value: &Bson) -> Result<bool> {
        let (matched, modified) = if side.many {
            self.update(side, doc! {"_id": id.clone()}, doc! {"$pull": { side.field: value.clone() }}).await?
        } else {
            let filter = doc! {"_id": id.clone(), side.field: value.clone()};
            let (m, n) = self.update(side, filter, doc! {"$unset": { side.field: "" }}).await?;
            // Not holding that value is not an error: nothing to detach.
            if m == 0 {
                return Ok(false);
            }
            (m, n)
        };
        if matched == 0 {
            return Err(Error::NotFound { collection: side.collection, id: show_id(id) });
        }
        if modified > 0 {
            let restore = if side.many {
                doc! {"$addToSet": { side.field: value.clone() }}
            } else {
                doc! {"$set": { side.field: value.clone() }}
            };
            self.log_undo(side, doc! {"_id": id.clone()}, restore);
        }
        Ok(modified > 0)
    }
}

struct Attached {
    changed: bool,
    /// For single references: the value it held before, if another.
    replaced: Option<Bson>,
}

/// Links document `x` (holding `rel`) to `y`, and `y` back to `x` when the
/// reference is two-way. A single reference that held another value is
/// moved: the old target's inverse array loses `x`. In the caller's
/// session when given (joining its transaction if it is in one).
pub(crate) async fn link(
    cx: &mut Cx<'_>,
    schema: &'static Schema,
    rel: &'static Relation,
    x: Bson,
    y: Bson,
) -> Result<LinkOutcome> {
    linked(cx, schema, rel, x, y, How::Asked).await
}

/// Whether `rel` is the single side of a 1:N two-way pair (`task.owner`
/// against `person.tasks`): the side the two-way repair takes as the
/// truth (`inverse_check.rs`), what a document says about itself.
pub(crate) fn single_of_one_to_many(g: &'static Graph, rel: &'static Relation) -> bool {
    let many = |r: &Relation| matches!(r.kind, RelationKind::RefMany { .. });
    !many(rel) && g.inverse_of(rel).is_some_and(|(_, inverse)| many(inverse))
}

/// Settles `x`, a new document, with `y`, which already lists it in the
/// array on the other side of `rel`, the single side of a 1:N pair: as
/// [`link`] when `x` names nothing; when `x` names another document that
/// is the truth, and `x` leaves `y`'s array instead (`y` may list an
/// earlier document with the same id whose delete has not pulled it yet).
/// What `x` names is read in the same transaction as the write, so a
/// reassign committed meanwhile is seen, never undone.
pub(crate) async fn link_back(
    cx: &mut Cx<'_>,
    schema: &'static Schema,
    rel: &'static Relation,
    x: Bson,
    y: Bson,
) -> Result<LinkOutcome> {
    linked(cx, schema, rel, x, y, How::Back).await
}

async fn link_back_body(
    w: &mut Writes<'_>,
    rel: &'static Relation,
    near: Side,
    far: Option<Side>,
    x: &Bson,
    y: &Bson,
) -> Result<bool> {
    let Some(far) = far else { return link_body(w, rel, near, far, x, y).await };
    match w.named(near, x).await? {
        Some(None) => link_body(w, rel, near, Some(far), x, y).await,
        Some(Some(named)) if named != *y => w.detach(far, y, x).await,
        // Linked already, or `x` deleted meanwhile (its delete pulls it).
        _ => Ok(false),
    }
}

/// Writes again both sides of the link from `x` to `y` through `rel`
/// while `x` still holds `y` (read in the same transaction as the
/// writes): for a document whose other sides a concurrent write may have
/// taken away (`on_delete.rs`, a pull of its id meant for a namesake).
pub(crate) async fn relink(
    cx: &mut Cx<'_>,
    schema: &'static Schema,
    rel: &'static Relation,
    x: Bson,
    y: Bson,
) -> Result<LinkOutcome> {
    linked(cx, schema, rel, x, y, How::Again).await
}

/// Runs the link `how` from `x` to `y` through `rel`, then the copies
/// that come through it follow.
async fn linked(
    cx: &mut Cx<'_>,
    schema: &'static Schema,
    rel: &'static Relation,
    x: Bson,
    y: Bson,
    how: How,
) -> Result<LinkOutcome> {
    let near = Side::of(cx.graph, schema.collection, rel)?;
    let far = Side::inverse(cx.graph, rel)?;
    let op = Op::Link { how, rel, near, far, x: x.clone(), y: y.clone() };
    let outcome = run_writes(cx, "link", op).await?;
    refresh_copies(cx, schema, rel, &x, &y).await?;
    Ok(outcome)
}

/// Copies that come through the references just changed follow their new
/// source: `x`'s through `rel`, and `y`'s through the inverse.
async fn refresh_copies(
    cx: &mut Cx<'_>,
    schema: &'static Schema,
    rel: &'static Relation,
    x: &Bson,
    y: &Bson,
) -> Result<()> {
    // Held copies include those of stored rules the type follows.
    let through = |s: &'static Schema, field: &str| {
        cx.graph.held_by(s).iter().any(|(_, t)| matches!(t.shape, Shape::Top { via } if via == field))
    };
    if through(schema, rel.field) {
        crate::denormalize::fill::refresh(cx, schema, std::slice::from_ref(x)).await?;
    }
    if let Some((other, inverse)) = cx.graph.inverse_of(rel) {
        if through(other, inverse.field) {
            crate::denormalize::fill::refresh(cx, other, std::slice::from_ref(y)).await?;
        }
    }
    Ok(())
}

async fn link_body(
    w: &mut Writes<'_>,
    rel: &'static Relation,
    near: Side,
    far: Option<Side>,
    x: &Bson,
    y: &Bson,
) -> Result<bool> {
    // The target first: a missing target fails before anything else is written.
    let far_result = match far {
        Some(far) => Some(w.attach(far, y, x).await?),
        None => {
            if !w.exists(target_side(rel, near), y).await? {
                return Err(Error::NotFound { collection: rel.target.unwrap_or_default(), id: show_id(y) });
            }
            None
        }
    };
    let near_result = w.attach(near, x, y).await?;
    let mut changed = near_result.changed || far_result.as_ref().is_some_and(|r| r.changed);
    // x held another single target: that one's inverse array loses x.
    if let (Some(old), Some(far)) = (&near_result.replaced, far) {
        if far.many {
            changed |= w.detach(far, old, x).await?;
        }
    }
    // y held another single back-reference: that one's array loses y.
    if let Some(old) = far_result.and_then(|r| r.replaced) {
        if near.many {
            changed |= w.detach(near, &old, y).await?;
        }
    }
    Ok(changed)
}

fn target_side(rel: &Relation, near: Side) -> Side {
    Side { collection: rel.target.unwrap_or(near.collection), field: "_id", many: false, optional: false, max: None }
}

/// Unlinks `x` from `y` on both sides of the reference (in the caller's
/// session when given, as [`link`]).
pub(crate) async fn unlink(
    cx: &mut Cx<'_>,
    schema: &'static Schema,
    rel: &'static Relation,
    x: Bson,
    y: Bson,
) -> Result<LinkOutcome> {
    let near = Side::of(cx.graph, schema.collection, rel)?;
    let far = Side::inverse(cx.graph, rel)?;
    for side in std::iter::once(near).chain(far) {
        if !side.many && !side.optional {
            return Err(Error::Invalid {
                what: crate::error::Misuse::Unlink,
                message: format!(
                    "`{}.{}` is a required reference (not an `Option`): a document cannot be left without it. \
                     Reassign it instead, or make the field an `Option`",
                    side.collection, side.field
                ),
            });
        }
    }
    let op = Op::Unlink { near, far, x: x.clone(), y: y.clone() };
    let outcome = run_writes(cx, "unlink", op).await?;
    refresh_copies(cx, schema, rel, &x, &y).await?;
    Ok(outcome)
}

async fn unlink_body(w: &mut Writes<'_>, near: Side, far: Option<Side>, x: &Bson, y: &Bson) -> Result<bool> {
    let mut changed = w.detach(near, x, y).await?;
    if let Some(far) = far {
        changed |= match w.detach(far, y, x).await {
            Err(Error::NotFound { .. }) => false, // a dangling reference: nothing to detach there
            other => other?,
        };
    }
    Ok(changed)
}

/// A link, unlink or reassign through a relation handle, to `.await`;
/// [`LinkWrite::session`] runs it in the caller's own session.
#[must_use = "a link does nothing until awaited"]
pub struct LinkWrite<'a> {
    db: &'a Database,
    schema: &'static Schema,
    rel: &'static Relation,
    x: Bson,
    y: Bson,
    unlink: bool,
    session: Option<&'a mut ClientSession>,
}

impl std::fmt::Debug for LinkWrite<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkWrite")
            .field("relation", &self.rel.field)
            .field("x", &self.x)
            .field("y", &self.y)
            .field("unlink", &self.unlink)
            .field("session", &self.session.is_some())
            .finish()
    }
}

impl<'a> LinkWrite<'a> {
    pub(crate) fn new(
        db: &'a Database,
        schema: &'static Schema,
        rel: &'static Relation,
        x: Bson,
        y: Bson,
        unlink: bool,
    ) -> Self {
        LinkWrite { db, schema, rel, x, y, unlink, session: None }
    }

    /// Runs the writes of both sides in `session`, like the driver's
    /// `.session(..)`. When the session is in a transaction they join it
    /// and commit or abort with it (no transaction of docrel's own); when
    /// it is not, docrel runs them in a transaction on it, as without a session.
    ///
    /// ```
    /// # docrel::testing::doc_test(|db| async move {
    /// use docrel::{Document, bson::oid::ObjectId};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "people")]
    /// struct Person {
    ///     #[serde(rename = "_id")] id: i32,
    ///     #[serde(default)] #[reference(many, to = Task, inverse = owner, max = 100)] tasks: Vec<ObjectId>,
    /// }
    ///
    /// #[derive(Document, Serialize, Deserialize)]
    /// #[document(collection = "tasks")]
    /// struct Task {
    ///     #[serde(rename = "_id")] id: ObjectId,
    ///     #[reference(to = Person, inverse = tasks)] owner: Option<i32>,
    /// }
    ///
    /// Person::repo(&db).insert(&Person { id: 1, tasks: vec![] }).await?;
    /// let task = Task { id: ObjectId::new(), owner: None };
    /// Task::repo(&db).insert(&task).await?;
    ///
    /// let driver = |e| docrel::Error::driver("session", "", e);
    /// let mut s = db.client().start_session().await.map_err(driver)?;
    /// s.start_transaction().await.map_err(driver)?;
    /// Task::rels().owner.reassign(&db, &task.id, &1).session(&mut s).await?;
    /// s.abort_transaction().await.map_err(driver)?; // neither side was linked
    /// assert_eq!(Person::repo(&db).require(&1).await?.tasks, []);
    /// # Ok(()) });
    /// ```
    pub fn session(mut self, session: &'a mut ClientSession) -> Self {
        self.session = Some(session);
        self
    }
}

impl<'a> std::future::IntoFuture for LinkWrite<'a> {
    type Output = Result<LinkOutcome>;
    type IntoFuture = futures::future::BoxFuture<'a, Result<LinkOutcome>>;

    fn into_future(self) -> Self::IntoFuture {
        let LinkWrite { db, schema, rel, x, y, unlink: un, session } = self;
        let op = crate::client::trace::Op::new(if un { "unlink" } else { "link" }, schema.collection);
        Box::pin(op.run(async move {
            crate::schema::stored::hold(db).await?;
            let cx = &mut Cx::new(db, session);
            match un {
                true => unlink(cx, schema, rel, x, y).await,
                false => link(cx, schema, rel, x, y).await,
            }
        }))
    }
}
