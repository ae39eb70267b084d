//! A write of a shape a move keeps (`#[document(moved_from = ..)]`): the
//! call runs in a transaction with the reconcile of the other shape for
//! every parent it may touch, so a reader of either shape sees the write
//! or neither. Two writes of one parent's shapes conflict on the parent's
//! documents, and the later one is retried whole: the reconciles see every
//! write before them. A move's writes thus cost a transaction and the
//! parents' arrays, and only while it runs.

use super::affected::Affected;
use super::repo::Operation;
use crate::denormalize::moved::{
    arrays_from_collection, collection_from_arrays, inverses_from_arrays, mark, named, one_each, read, Reach,
};
use crate::error::{Error, Misuse, Result};
use crate::schema::document::Document;
use crate::schema::document::Schema;
use crate::schema::graph_moves::Side;
use crate::schema::repository::Repository;
use crate::schema::stored::{ActiveMove, AdoptedInverse, MoveState, OldArray};
use crate::store::session::Cx;
use mongodb::bson::{doc, Bson};
use mongodb::ClientSession;
use std::time::{Duration, Instant};

/// One move the call's collection takes part in, and on which side.
type Mirror = (&'static ActiveMove, Side);

/// What a write keeps beside itself: the moves it takes part in, and the
/// other sides of the arrays it writes that its type declares one-way and
/// the stored schema two-way.
struct Keeps {
    moves: Vec<Mirror>,
    inverses: Vec<&'static AdoptedInverse>,
    /// It writes whole documents holding the other side of an adopted
    /// inverse (kept as stored): in a transaction, so that keeping it
    /// conflicts with a reconcile changing it rather than undoing it.
    guarded: bool,
}

impl Keeps {
    fn is_empty(&self) -> bool {
        self.moves.is_empty() && self.inverses.is_empty() && !self.guarded
    }
}

/// Refuses a write of a type declared `moved_from` an array that the
/// database still holds, with no move of it under way: the old version's
/// readers would not see it, and the move would not keep it.
fn applied<T: Document>(graph: &crate::schema::graph::Graph) -> Result<()> {
    // The type declaring the move, not another of its collection (the old
    // version's type of the documents an array of ids names).
    let declaring = |m: &&crate::schema::moves::Move| {
        m.to_collection == T::COLLECTION && m.to_type == T::schema().rust_name && m.module == T::schema().module
    };
    for m in crate::schema::moves::declared().filter(declaring).filter(|m| !m.kind.is_back()) {
        if !graph.lists_move(m.from_collection, m.from_rust_field, m.to_collection)
            && graph.holds_array(m.from_collection, m.from_rust_field)
        {
            return Err(Error::Invalid {
                what: Misuse::Schema,
                message: format!(
                    "`{}` was declared `moved_from = {}::{}`, and the database still keeps `{}.{}` with no move \
                     under way: nothing was written. Run `docrel schema apply --file <this program's export>` \
                     first; its writes are taken once the move is maintained",
                    m.to_type, m.from_type, m.from_rust_field, m.from_collection, m.from_rust_field
                ),
            });
        }
    }
    Ok(())
}

/// The stored name of `T`'s field declared `#[embed(moved_from = "..")]`
/// while the database keeps the old collection with no move of it listed:
/// its writes would not reach the old version's readers.
fn unapplied_back<T: Document>(graph: &crate::schema::graph::Graph) -> Option<&'static str> {
    let m = crate::schema::moves::declared().find(|m| {
        m.kind.is_back()
            && m.from_collection == T::COLLECTION
            && m.from_type == T::schema().rust_name
            && m.module == T::schema().module
    })?;
    if graph.lists_move(m.from_collection, m.from_rust_field, m.to_collection)
        || graph.back_parent(m.to_collection, m.from_collection).is_none()
    {
        return None;
    }
    T::schema().relations.iter().find(|r| r.rust_field == m.from_rust_field).map(|r| r.field)
}

/// The moves `moving` a write of `schema` described by `affected` must
/// keep, refusing a write they cannot take yet.
fn mirrors(moving: Vec<Mirror>, affected: &Affected, schema: &Schema) -> Result<Vec<Mirror>> {
    let mut out = Vec::new();
    for (mv, side) in moving {
        // The old version writing the documents an array of ids names: its
        // type has no parent reference to change, and until the move is
        // maintained no document has one to keep.
        let unlinked = mv.old == OldArray::Ids && !schema.fields.iter().any(|f| f.bson == mv.spec.parent_field);
        // A move back: the documents are the old shape, the field the new.
        let back = mv.spec.kind.is_back();
        match side {
            // The old shape: before the field is kept, only checked to keep
            // one document a parent.
            Side::Collection if back => out.push((mv, side)),
            Side::Array if back && !affected.writes(&mv.field) => continue,
            // The old version's parents (without the field) need no mirror
            // before the field is kept; the new version's wait for it.
            Side::Array
                if back
                    && mv.state < MoveState::Maintained
                    && !schema.relations.iter().any(|r| r.field == mv.field) =>
            {
                continue
            }
            Side::Array if back && mv.state < MoveState::Maintained => {
                return Err(refused(mv, "the new shape takes writes once the move is maintained"))
            }
            Side::Collection if unlinked && mv.state < MoveState::Maintained => continue,
            Side::Array if !affected.writes(&mv.field) => continue,
            Side::Array if affected.unnamed => {
                return Err(refused(
                    mv,
                    "an inserted document of the old shape needs its `_id` set (none is generated)",
                ))
            }
            Side::Collection if mv.state < MoveState::Maintained => {
                return Err(refused(mv, "the new shape takes writes once the move is maintained"))
            }
            _ => out.push((mv, side)),
        }
    }
    Ok(out)
}

fn refused(mv: &ActiveMove, why: &str) -> Error {
    Error::Invalid {
        what: Misuse::Schema,
        message: format!(
            "`{}` is moving ({}, {}): {why}; nothing was written. `docrel schema status` shows where it stands",
            mv.spec.label(),
            mv.state,
            mv.spec.id
        ),
    }
}

/// Runs `op` of `repo`, keeping every move it takes part in; the plain
/// call when it takes part in none.
pub(super) async fn run<'a, T: Document, O: Operation<'a, T>>(
    repo: &'a Repository<T>,
    op: O,
    session: Option<&'a mut ClientSession>,
) -> Result<O::Output> {
    let graph = crate::schema::graph::of(&repo.db);
    applied::<T>(graph)?;
    if let Some(field) = unapplied_back::<T>(graph) {
        if op.affected()?.writes(field) {
            return Err(Error::Invalid {
                what: Misuse::Schema,
                message: format!(
                    "`{}.{field}` was declared `moved_from` another collection, and the database still keeps that \
                     collection with no move under way: nothing was written. Run `docrel schema apply --file <this \
                     program's export>` first; writes of the field are taken once the move is maintained",
                    T::COLLECTION
                ),
            });
        }
    }
    // Without a move of this collection, or an inverse it adopts, a write
    // costs what it cost before: nothing is asked of it.
    let adopting = !graph.adopted_inverses(T::COLLECTION).is_empty() || !graph.adopted_into(T::COLLECTION).is_empty();
    if graph.mirrored(T::COLLECTION).is_empty() && !adopting {
        return op.run(repo, session).await;
    }
    let affected = op.affected()?;
    let mirrors = current::<T>(&affected, &repo.db)?;
    if mirrors.is_empty() {
        return op.run(repo, session).await;
    }
    let mut owned = None;
    let session: &mut ClientSession = match session {
        Some(s) => {
            if crate::store::transaction::in_transaction(s).await {
                return mirrored(repo, op, s, &affected, &mirrors).await;
            }
            s
        }
        None => {
            let started = repo.db.client().start_session().causal_consistency(false).await;
            owned.insert(started.map_err(|e| Error::driver("startSession", repo.db.name(), e))?)
        }
    };
    in_transaction(repo, op, session, &affected, mirrors).await
}

/// What a write of `T` described by `affected` keeps, as the graph of `db`
/// has it now.
fn current<T: Document>(affected: &Affected, db: &mongodb::Database) -> Result<Keeps> {
    let graph = crate::schema::graph::of(db);
    let moves = mirrors(graph.mirrored(T::COLLECTION), affected, T::schema())?;
    let inverses: Vec<_> =
        graph.adopted_inverses(T::COLLECTION).into_iter().filter(|a| affected.writes(&a.field)).collect();
    if let Some(a) = inverses.first().filter(|_| affected.unnamed) {
        return Err(Error::Invalid {
            what: Misuse::Schema,
            message: format!(
                "`{}.{}` is two-way with `{}.{}` in the stored schema, which this program's writes keep: an inserted \
                 document needs its `_id` set (none is generated); nothing was written",
                a.collection, a.field, a.target, a.inverse
            ),
        });
    }
    let guarded = graph.adopted_into(T::COLLECTION).iter().any(|a| affected.writes(&a.inverse));
    Ok(Keeps { moves, inverses, guarded })
}

/// [`mirrored`] in a transaction of its own on `session`, committed with
/// docrel's commit (after-commit hooks, the rules' check), retried whole on
/// a transient error for up to two minutes, as the driver's convenient
/// transactions are.
async fn in_transaction<'a, T: Document, O: Operation<'a, T>>(
    repo: &'a Repository<T>,
    op: O,
    session: &mut ClientSession,
    affected: &Affected,
    mut mirrors: Keeps,
) -> Result<O::Output> {
    let started = Instant::now();
    let within = || started.elapsed() < Duration::from_secs(120);
    let mut attempt = 0u32;
    'body: loop {
        attempt += 1;
        if attempt > 1 {
            // A retry is a write of its own: it holds the schema again and
            // keeps the moves in the state they are in now, never in one
            // the fleet has left (retries may outlast two leases).
            crate::schema::stored::hold(&repo.db).await?;
            mirrors = current::<T>(affected, &repo.db)?;
        }
        session
            .start_transaction()
            .selection_criteria(crate::store::primary())
            .await
            .map_err(|e| Error::driver("startTransaction", repo.db.name(), e))?;
        let out = match mirrored(repo, op.clone(), session, affected, &mirrors).await {
            Ok(out) => out,
            Err(e) => {
                let _ = super::caller_transaction::abort(session).await;
                if e.is_transient() && within() {
                    crate::client::trace::retry("write of a moving shape", attempt);
                    continue;
                }
                return Err(e);
            }
        };
        loop {
            match super::caller_transaction::commit(session).await {
                Ok(()) => return Ok(out),
                // The body may have landed: only the commit is tried again.
                Err(e) if commit_unknown(&e) && within() => {}
                // Aborted at the commit (a conflict, changed rules): nothing
                // landed, the whole write runs again.
                Err(e) if e.is_transient() && !commit_unknown(&e) && within() => continue 'body,
                Err(e) if commit_unknown(&e) => {
                    let namespace = format!("{}.{}", repo.db.name(), T::COLLECTION);
                    let message = e.to_string();
                    return Err(Error::CommitUnknown { operation: "write of a moving shape", namespace, message });
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// Whether a commit's outcome is unknown: it may have landed.
fn commit_unknown(e: &Error) -> bool {
    matches!(e, Error::Driver { source, .. } if source.contains_label(mongodb::error::UNKNOWN_TRANSACTION_COMMIT_RESULT))
}

/// `op` and the reconciles of its parents, in the transaction `session` is in.
async fn mirrored<'a, T: Document, O: Operation<'a, T>>(
    repo: &'a Repository<T>,
    op: O,
    session: &mut ClientSession,
    affected: &Affected,
    keeps: &Keeps,
) -> Result<O::Output> {
    let (db, mirrors) = (repo.db.clone(), &keeps.moves);
    let mut before = Vec::new();
    let (mut linking, mut before_arrays) = (Vec::new(), Vec::new());
    {
        let cx = &mut Cx::new(&db, Some(&mut *session));
        if !keeps.inverses.is_empty() {
            linking = parents::<T>(cx, None, affected).await?;
            for a in &keeps.inverses {
                // What they named before, whose other sides the write may leave.
                before_arrays.push(named(cx, a, &linking).await?);
            }
        }
        for (mv, side) in mirrors {
            let parents = parents::<T>(cx, parent_field(mv, *side), affected).await?;
            // The new shape of a parent not copied yet is made first, from
            // the old one, which holds every element until the move is done
            // (for a move back, the old shape is the documents).
            let back = mv.spec.kind.is_back();
            match side {
                Side::Collection if !back => collection_from_arrays(cx, mv, &parents, Reach::Full).await?,
                Side::Array if back => arrays_from_collection(cx, mv, &parents).await?,
                _ => {}
            }
            before.push(parents);
        }
    }
    let out = op.run(repo, Some(&mut *session)).await?;
    let cx = &mut Cx::new(&db, Some(session));
    if !keeps.inverses.is_empty() {
        linking.extend(parents::<T>(cx, None, affected).await?);
        for (a, before) in keeps.inverses.iter().zip(&before_arrays) {
            inverses_from_arrays(cx, a, &linking, before).await?;
        }
    }
    for ((mv, side), mut parents) in mirrors.iter().zip(before) {
        // The reconciles take each parent once, however often it is named.
        parents.extend(self::parents::<T>(cx, parent_field(mv, *side), affected).await?);
        match side {
            Side::Array => {
                let reach = if mv.state == MoveState::Announced { Reach::DeletesAndUpdates } else { Reach::Full };
                collection_from_arrays(cx, mv, &parents, reach).await?;
            }
            Side::Collection if mv.spec.kind.is_back() && mv.state < MoveState::Maintained => {
                one_each(cx, mv, &parents).await?
            }
            Side::Collection => arrays_from_collection(cx, mv, &parents).await?,
        }
        if mv.state == MoveState::Maintained {
            mark(cx, mv, &parents).await?;
        }
    }
    Ok(out)
}

/// The parent reference naming a move's parents on `side` (`None`: the
/// array's side, whose written documents are the parents).
fn parent_field(mv: &ActiveMove, side: Side) -> Option<&str> {
    (side == Side::Collection).then_some(mv.spec.parent_field.as_str())
}

/// The parents a write described by `affected` may touch, now: without a
/// parent reference (the array's side) the written documents themselves,
/// with one (the collection's side) the parents it names (and, for
/// documents given whole, the ones they will name).
async fn parents<T: Document>(cx: &mut Cx<'_>, parent: Option<&str>, affected: &Affected) -> Result<Vec<Bson>> {
    let mut out: Vec<Bson> = Vec::new();
    match parent {
        None => out.extend(affected.ids.iter().cloned()),
        Some(p) => out.extend(affected.docs.iter().filter_map(|d| d.get(p).cloned())),
    }
    let filter = match (&affected.filter, affected.ids.is_empty()) {
        (Some(f), _) => f.clone(),
        (None, false) if parent.is_some() => doc! {"_id": {"$in": affected.ids.clone()}},
        _ => return Ok(out),
    };
    let field = parent.unwrap_or("_id");
    let found = read(cx, T::COLLECTION, filter, Some(doc! {field: 1})).await?;
    out.extend(found.iter().filter_map(|d| d.get(field).cloned()));
    Ok(out)
}
