//! Link, unlink and reassign through references, keeping both sides of a
//! two-way reference (`inverse = ..`) right in one call: inside a
//! transaction when the deployment supports one, and saying whether it did.

use crate::error::{show_id, Error, Result};
use crate::schema::document::{Relation, RelationKind};
use crate::schema::graph::graph;
use bson::{doc, Bson, Document as BsonDoc};
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
    fn of(collection: &'static str, rel: &Relation) -> Result<Side> {
        let (many, optional, max) = match rel.kind {
            RelationKind::RefMany { key: Some(_), .. } => {
                return Err(Error::Invalid {
                    what: "link",
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
                    what: "link",
                    message: format!("`{}` is an embed, not a reference", rel.field),
                })
            }
        };
        Ok(Side { collection, field: rel.field, many, optional, max })
    }

    /// The other side of `rel` (declared on `collection`), if it is two-way.
    fn inverse(rel: &'static Relation) -> Result<Option<Side>> {
        let (Some(target), Some(inverse)) = (rel.target, rel.inverse) else { return Ok(None) };
        match graph().inverse_of(rel) {
            Some((schema, r)) => Side::of(schema.collection, r).map(Some),
            None => Err(Error::Invalid {
                what: "inverse",
                message: format!(
                    "`{}` names `{inverse}` of `{target}` as its inverse, but that field carries no `#[reference]`: \
                     add `#[reference(.., inverse = {})]` on it",
                    rel.field, rel.rust_field
                ),
            }),
        }
    }
}

/// The writes of one call, in a transaction when the deployment has them.
struct Writes<'a> {
    db: &'a Database,
    session: Option<ClientSession>,
}

impl<'a> Writes<'a> {
    async fn begin(db: &'a Database) -> Result<Writes<'a>> {
        let mut session = db.client().start_session().await.map_err(|e| Error::driver("startSession", db.name(), e))?;
        match session.start_transaction().await {
            Ok(()) => Ok(Writes { db, session: Some(session) }),
            Err(e) if matches!(*e.kind, mongodb::error::ErrorKind::Transaction { .. }) => {
                Ok(Writes { db, session: None })
            }
            Err(e) => Err(Error::driver("startTransaction", db.name(), e)),
        }
    }

    async fn update(&mut self, side: Side, filter: BsonDoc, update: BsonDoc) -> Result<(u64, u64)> {
        let coll = self.db.collection::<BsonDoc>(side.collection);
        let action = coll.update_one(filter, update);
        let r = match &mut self.session {
            Some(s) => action.session(s).await,
            None => action.await,
        }
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
        match &mut self.session {
            Some(s) => action.session(s).await,
            None => action.await,
        }
        .map_err(|e| Error::driver("findAndModify", side.collection, e))
    }

    async fn exists(&mut self, side: Side, id: &Bson) -> Result<bool> {
        let coll = self.db.collection::<BsonDoc>(side.collection);
        let action = coll.count_documents(doc! {"_id": id.clone()}).limit(1);
        let n = match &mut self.session {
            Some(s) => action.session(s).await,
            None => action.await,
        }
        .map_err(|e| Error::driver("count", side.collection, e))?;
        Ok(n > 0)
    }

    async fn commit(self, changed: bool) -> Result<LinkOutcome> {
        let transactional = self.session.is_some();
        if let Some(mut s) = self.session {
            s.commit_transaction().await.map_err(|e| Error::driver("commitTransaction", self.db.name(), e))?;
        }
        Ok(LinkOutcome { transactional, changed })
    }

    async fn fail(self, error: Error) -> Result<LinkOutcome> {
        if let Some(mut s) = self.session {
            // The transaction is abandoned either way; the first error is the one to report.
            let _ = s.abort_transaction().await;
        }
        Err(error)
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
            Ok(Attached { changed: modified > 0, replaced: None })
        } else {
            let before = self.swap(side, id, doc! {"$set": { side.field: value.clone() }}).await?;
            let Some(before) = before else {
                return Err(Error::NotFound { collection: side.collection, id: show_id(id) });
            };
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
/// moved: the old target's inverse array loses `x`.
pub(crate) async fn link(
    db: &Database,
    collection: &'static str,
    rel: &'static Relation,
    x: Bson,
    y: Bson,
) -> Result<LinkOutcome> {
    let near = Side::of(collection, rel)?;
    let far = Side::inverse(rel)?;
    let mut w = Writes::begin(db).await?;
    let result = async {
        // The target first: a missing target fails before anything else is written.
        let far_result = match far {
            Some(far) => Some(w.attach(far, &y, &x).await?),
            None => {
                if !w.exists(target_side(rel, near), &y).await? {
                    return Err(Error::NotFound { collection: rel.target.unwrap_or_default(), id: show_id(&y) });
                }
                None
            }
        };
        let near_result = match w.attach(near, &x, &y).await {
            Ok(r) => r,
            Err(e) => {
                // Without a transaction, undo the far side so nothing is half-linked.
                if let (Some(far), Some(fr), None) = (far, &far_result, &w.session) {
                    if fr.changed {
                        let _ = w.detach(far, &y, &x).await;
                    }
                }
                return Err(e);
            }
        };
        let mut changed = near_result.changed || far_result.as_ref().is_some_and(|r| r.changed);
        // x held another single target: that one's inverse array loses x.
        if let (Some(old), Some(far)) = (&near_result.replaced, far) {
            if far.many {
                changed |= w.detach(far, old, &x).await?;
            }
        }
        // y held another single back-reference: that one's array loses y.
        if let Some(old) = far_result.and_then(|r| r.replaced) {
            if near.many {
                changed |= w.detach(near, &old, &y).await?;
            }
        }
        Ok(changed)
    }
    .await;
    match result {
        Ok(changed) => w.commit(changed).await,
        Err(e) => w.fail(e).await,
    }
}

fn target_side(rel: &Relation, near: Side) -> Side {
    Side { collection: rel.target.unwrap_or(near.collection), field: "_id", many: false, optional: false, max: None }
}

/// Unlinks `x` from `y` on both sides of the reference.
pub(crate) async fn unlink(
    db: &Database,
    collection: &'static str,
    rel: &'static Relation,
    x: Bson,
    y: Bson,
) -> Result<LinkOutcome> {
    let near = Side::of(collection, rel)?;
    let far = Side::inverse(rel)?;
    for side in std::iter::once(near).chain(far) {
        if !side.many && !side.optional {
            return Err(Error::Invalid {
                what: "unlink",
                message: format!(
                    "`{}.{}` is a required reference (not an `Option`): a document cannot be left without it. \
                     Reassign it instead, or make the field an `Option`",
                    side.collection, side.field
                ),
            });
        }
    }
    let mut w = Writes::begin(db).await?;
    let result = async {
        let mut changed = w.detach(near, &x, &y).await?;
        if let Some(far) = far {
            changed |= match w.detach(far, &y, &x).await {
                Err(Error::NotFound { .. }) => false, // a dangling reference: nothing to detach there
                other => other?,
            };
        }
        Ok(changed)
    }
    .await;
    match result {
        Ok(changed) => w.commit(changed).await,
        Err(e) => w.fail(e).await,
    }
}
