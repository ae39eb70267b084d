//! A process obeying the schema published in a database: the collections
//! it does not link join its schema graph from their stored form, so its
//! fan-outs, subset rebuilds, inverses, pulls, cascades and restricts
//! reach them; where its own declarations and the stored ones differ, it
//! says so.

use super::form::{program, StoredType};
use super::merge::merge;
use super::moves_state::ActiveMove;
use super::publish::{fingerprint, load_all, SCHEMA_COLLECTION};
use crate::error::Result;
use mongodb::Database;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What [`obey`] found in the stored schema.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Obeyed {
    /// Collections whose rules this process now follows from their stored
    /// form alone (it links no type of them).
    pub stored_only: Vec<String>,
    /// Collections this program links, with stored rules it does not
    /// declare (another program's copies, subsets, delete rules on them):
    /// it follows those from their stored form too.
    pub supplemented: Vec<String>,
    /// Differences between this program's declarations and the stored
    /// ones: a rule declared differently, or a stored rule this program
    /// does not declare. This program acts on its own declarations there.
    pub differences: Vec<String>,
    /// Rules this program declares that the stored schema lacks (it never
    /// published them, or published an older version): other programs do
    /// not follow them, so another program's rename leaves this one's
    /// copies stale. [`super::publish`] at start-up fixes it.
    pub unpublished: Vec<String>,
}

/// The stored types one database adds to the graph, by collection, with
/// their fingerprints.
type Followed = BTreeMap<String, (String, StoredType)>;

/// The stored rules linked types keep beside their own declarations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Kept {
    /// The stored bounds: (collection, field, max).
    bounds: Vec<(String, String, u32)>,
    /// The stored inverses of arrays they declare one-way.
    inverses: Vec<super::inverses::AdoptedInverse>,
    /// The other sides of arrays made two-way that they declare and that
    /// are not built yet: read from the arrays.
    building: Vec<super::transitions::BuildingInverse>,
}

impl Kept {
    fn is_empty(&self) -> bool {
        self.bounds.is_empty() && self.inverses.is_empty() && self.building.is_empty()
    }
}

/// The other sides of arrays made two-way that this program's types
/// declare and that do not hold every link yet: those a change is building
/// (`listed`), and those this program makes two-way before any change
/// published them (the stored array is one-way). Each is read from the
/// arrays naming its documents.
fn read_from_arrays(
    listed: Vec<super::transitions::BuildingInverse>,
    stored: &[StoredType],
    ours: &[StoredType],
) -> Vec<super::transitions::BuildingInverse> {
    let mut out = listed;
    for t in stored {
        let Some(mine) = ours.iter().find(|o| o.collection == t.collection) else { continue };
        out.extend(super::inverses::changes_of(t, mine).iter().map(super::transitions::BuildingInverse::from));
    }
    let declared = |b: &super::transitions::BuildingInverse| {
        ours.iter().any(|o| o.collection == b.collection && o.relations.iter().any(|r| r.field == b.field))
    };
    out.retain(declared);
    out.sort_by(|a, b| (&a.collection, &a.field).cmp(&(&b.collection, &b.field)));
    out.dedup();
    out
}

/// What this process keeps of the schema it obeys in one database
/// ([`crate::kept`]): each database of each deployment its own.
#[derive(Default)]
struct Obeying {
    /// One obey at a time: a read that started earlier never installs
    /// after one that started later.
    reading: tokio::sync::Mutex<()>,
    /// The stored types, moves and bounds the graph was last built with
    /// (`None`: never).
    followed: Mutex<Option<(Followed, Vec<ActiveMove>, Kept)>>,
    /// The differences last said, so the same ones are said once.
    said: Mutex<Option<Vec<String>>>,
    /// When the stored schema was last read and obeyed.
    confirmed: Mutex<Option<Instant>>,
    /// The moves in progress, as last read.
    moves: Mutex<Vec<ActiveMove>>,
    /// The two-way arrays being made one-way, as last read.
    retiring: Mutex<Vec<super::transitions::RetiringInverse>>,
    /// When this process last renewed its lease row.
    renewed: Mutex<Option<Instant>>,
}

fn obeying(db: &Database) -> std::sync::Arc<Obeying> {
    crate::kept::of_database(db)
}

/// Reads the schema published in `db` and follows it from now on in this
/// process: every collection this program does not link but some program
/// published joins the schema graph, so a rename here fans out to copies
/// declared only elsewhere, a delete here applies their `on_delete` rules,
/// and so on, by stored name and path with the same version guards.
/// Differences with this program's own declarations are returned and
/// logged (a `tracing` warning each); this program acts on its own
/// declarations for the types it links.
///
/// ```no_run
/// # async fn f(db: docrel::mongodb::Database) -> docrel::Result<()> {
/// let obeyed = docrel::schema::obey(&db).await?;
/// for d in &obeyed.differences {
///     eprintln!("schema difference: {d}");
/// }
/// # Ok(()) }
/// ```
pub async fn obey(db: &Database) -> Result<Obeyed> {
    obey_saying(db, true).await
}

/// [`obey`], saying this program's unpublished rules only when `unpublished`
/// (a test's own database, which no other program writes, has none to say).
pub(crate) async fn obey_saying(db: &Database, unpublished: bool) -> Result<Obeyed> {
    let state = obeying(db);
    let _one = state.reading.lock().await;
    // The lease runs from before the read: what was read was true then.
    let read_at = Instant::now();
    let loaded = load_all(db).await?;
    let (moves, retiring) = (loaded.moves, loaded.retiring);
    let stored: Vec<StoredType> = loaded.types.into_iter().map(|(t, _)| t).collect();
    let ours = program();
    let missing = unpublished_rules(&stored, &ours);
    let mut out = Obeyed::default();
    let mut extra = BTreeMap::new();
    let mut kept = Kept { building: read_from_arrays(loaded.building, &stored, &ours), ..Kept::default() };
    for t in stored {
        let Some(mine) = ours.iter().find(|o| o.collection == t.collection) else {
            out.stored_only.push(t.collection.clone());
            extra.insert(t.collection.clone(), (fingerprint(&t), t));
            continue;
        };
        if let Err(conflicts) = merge(&t, mine) {
            out.differences.extend(conflicts.iter().map(ToString::to_string));
        }
        out.differences.extend(super::bounds::changes_of(&t, mine).iter().map(|c| {
            format!(
                "`{}.{}`: the stored schema bounds it at {} and this program at {}: its writes keep to the lower \
                 until `docrel schema apply` publishes this program's",
                c.collection,
                c.field,
                c.stored.map_or_else(|| "no bound".to_owned(), |m| m.to_string()),
                c.declared.map_or_else(|| "no bound".to_owned(), |m| m.to_string()),
            )
        }));
        out.differences.extend(super::inverses::changes_of(&t, mine).iter().map(|c| {
            format!(
                "`{}.{}`: this program makes it two-way with `{}.{}`, which the stored schema keeps one-way: \
                 `{}.{}` holds only the links this program writes until `docrel schema apply` builds it",
                c.collection, c.field, c.target, c.inverse, c.target, c.inverse
            )
        }));
        kept.bounds.extend(super::bounds::followed(&t, mine));
        for a in super::inverses::adopted(&t, mine) {
            out.differences.push(format!(
                "`{}.{}`: the stored schema makes it two-way with `{}.{}` and this program declares it one-way: \
                 its writes of it keep the other side, each in a transaction",
                a.collection, a.field, a.target, a.inverse
            ));
            kept.inverses.push(a);
        }
        if let Some(more) = supplement(&t, mine) {
            let rules = more.relations.iter().map(|r| format!("relation `{}`", r.field));
            let rules: Vec<String> = rules.chain(more.copies.iter().map(|c| format!("copy `{}`", c.field))).collect();
            out.differences.push(format!(
                "`{}`: the stored schema has {} which this program does not declare; it follows them from there",
                t.collection,
                rules.join(", ")
            ));
            out.supplemented.push(t.collection.clone());
            extra.insert(t.collection.clone(), (fingerprint(&more), more));
        }
    }
    out.unpublished = missing;
    let unsaid: &[String] = if unpublished { &out.unpublished } else { &[] };
    let said: Vec<String> = out.differences.iter().chain(unsaid).cloned().collect();
    if newly_said(&state, &said) {
        for d in &said {
            tracing::warn!(target: "docrel::schema", database = db.name(), "{d}");
        }
    }
    install(db, &state, extra, moves.clone(), kept);
    remember(db, &state, moves, retiring).await?;
    confirmed_at(db, read_at);
    Ok(out)
}

/// Keeps the moves and retirements just read, and renews this process's
/// lease row while any runs: a process that cannot say what it saw of a
/// move does not write.
async fn remember(
    db: &Database,
    state: &Obeying,
    moves: Vec<ActiveMove>,
    retiring: Vec<super::transitions::RetiringInverse>,
) -> Result<()> {
    if !moves.is_empty() || !retiring.is_empty() {
        super::holders::renew(db, (&moves, &retiring), super::lease_time::lease_for(db)).await?;
        if let Ok(mut renewed) = state.renewed.lock() {
            *renewed = Some(Instant::now());
        }
    }
    if let Ok(mut kept) = state.moves.lock() {
        *kept = moves;
    }
    if let Ok(mut kept) = state.retiring.lock() {
        *kept = retiring;
    }
    Ok(())
}

/// The moves in progress in `db` as this process last read them (with the
/// schema, under its lease).
pub fn active_moves(db: &Database) -> Vec<ActiveMove> {
    obeying(db).moves.lock().map(|m| m.clone()).unwrap_or_default()
}

/// This program's rules that `stored` lacks, by collection, in words: the
/// copies and relations other programs would not follow.
fn unpublished_rules(stored: &[StoredType], ours: &[StoredType]) -> Vec<String> {
    let mut out = Vec::new();
    for mine in ours {
        let theirs = stored.iter().find(|t| t.collection == mine.collection);
        let has_relation = |f: &str| theirs.is_some_and(|t| t.relations.iter().any(|r| r.field == f));
        let has_copy = |f: &str| theirs.is_some_and(|t| t.copies.iter().any(|c| c.field == f));
        let relations =
            mine.relations.iter().filter(|r| !has_relation(&r.field)).map(|r| format!("relation `{}`", r.field));
        let copies = mine.copies.iter().filter(|c| !has_copy(&c.field)).map(|c| format!("copy `{}`", c.field));
        let missing: Vec<String> = copies.chain(relations).collect();
        if !missing.is_empty() {
            out.push(format!(
                "`{}`: this program declares {} which the schema published in the database lacks: other programs \
                 do not follow them (their renames leave these copies stale). Publish at start-up: \
                 `docrel::schema::publish(&db)`",
                mine.collection,
                missing.join(", ")
            ));
        }
    }
    out
}

/// Whether `differences` differ from what the last obey of the database
/// found: every write re-reads the schema once a lease, and the same
/// differences are said once, not every lease.
fn newly_said(state: &Obeying, differences: &[String]) -> bool {
    let Ok(mut said) = state.said.lock() else { return true };
    said.replace(differences.to_vec()).as_deref() != Some(differences)
}

/// The rules of the stored `t` that this program's `mine` does not declare
/// at all (by field), as a type of their own, or `None` when there are
/// none. A rule both declare, however differently, is this program's.
fn supplement(t: &StoredType, mine: &StoredType) -> Option<StoredType> {
    let relations: Vec<_> =
        t.relations.iter().filter(|r| !mine.relations.iter().any(|m| m.field == r.field)).cloned().collect();
    let copies: Vec<_> = t.copies.iter().filter(|c| !mine.copies.iter().any(|m| m.field == c.field)).cloned().collect();
    if relations.is_empty() && copies.is_empty() {
        return None;
    }
    Some(StoredType { relations, copies, indexes: Vec::new(), ..t.clone() })
}

/// Makes `extra` the stored-only types of `db`, `moves` its moves in
/// progress and `kept` the stored rules its linked types keep, and
/// rebuilds its graph when that changed anything.
fn install(db: &Database, state: &Obeying, extra: Followed, moves: Vec<ActiveMove>, kept: Kept) {
    let Ok(mut followed) = state.followed.lock() else { return };
    // A database with nothing stored, seen for the first time, changes nothing.
    let nothing = extra.is_empty() && moves.is_empty() && kept.is_empty();
    let same = followed.as_ref().map_or(nothing, |(before, moved, rules)| {
        before.len() == extra.len()
            && before.iter().zip(&extra).all(|((a, (fa, _)), (b, (fb, _)))| a == b && fa == fb)
            && *moved == moves
            && *rules == kept
    });
    if same {
        return;
    }
    // A linked collection's entry holds only the rules it lacks.
    let schemas = extra.values().map(|(_, t)| super::descriptors::schema(t)).collect();
    let rules = (kept.bounds.clone(), kept.inverses.clone(), kept.building.clone());
    crate::schema::graph::install(db, schemas, moves.clone(), rules);
    *followed = Some((extra, moves, kept));
}

/// Keeps this process obeying the schema of `db` as programs publish to
/// it: a change stream on the schema collection re-reads it on every
/// change and renews the lease with every answer (and, while a move or a
/// retirement runs, its lease row every half lease); where the deployment
/// has no change streams (a standalone server), it is re-read every
/// `every`. Runs until the task is aborted.
pub fn keep_current(db: &Database, every: Duration) -> tokio::task::JoinHandle<()> {
    let db = db.clone();
    tokio::spawn(async move {
        loop {
            if let Err(e) = follow(&db).await {
                tracing::debug!(target: "docrel::schema", database = db.name(), error = %e, "schema watch restarts");
            }
            tokio::time::sleep(every).await;
            if let Err(e) = obey(&db).await {
                tracing::warn!(target: "docrel::schema", database = db.name(), error = %e, "schema re-read failed");
            }
        }
    })
}

/// Follows the schema collection's change stream, obeying again on each event.
async fn follow(db: &Database) -> Result<()> {
    let coll = db.collection::<mongodb::bson::Document>(SCHEMA_COLLECTION);
    let mut stream = coll.watch().await.map_err(|e| crate::error::Error::driver("watch", SCHEMA_COLLECTION, e))?;
    // Read after the stream opened: a publish in between is not missed.
    obey(db).await?;
    // Each answer of the stream confirms the schema: an empty one says
    // nothing changed since, so writes here need no read of their own.
    loop {
        match stream.next_if_any().await {
            Ok(Some(_)) => {
                obey(db).await?;
            }
            Ok(None) if stream.is_alive() => {
                confirmed(db);
                renew_due(db).await?;
            }
            Ok(None) => return Ok(()),
            Err(e) => return Err(crate::error::Error::driver("watch", SCHEMA_COLLECTION, e)),
        }
    }
}

/// Renews this process's lease row when a move or a retirement runs and
/// the row is half a lease old: a process the change stream alone keeps
/// confirmed still says, within every lease, what it holds.
async fn renew_due(db: &Database) -> Result<()> {
    let (state, lease) = (obeying(db), super::lease_time::lease_for(db));
    let due = state.renewed.lock().map_or(true, |r| r.is_none_or(|at| at.elapsed() >= lease / 2));
    let moves = state.moves.lock().map(|m| m.clone()).unwrap_or_default();
    let retiring = state.retiring.lock().map(|r| r.clone()).unwrap_or_default();
    if !due || (moves.is_empty() && retiring.is_empty()) {
        return Ok(());
    }
    super::holders::renew(db, (&moves, &retiring), lease).await?;
    if let Ok(mut renewed) = state.renewed.lock() {
        *renewed = Some(Instant::now());
    }
    Ok(())
}

/// How long ago this process last confirmed the schema of `db` (`None`:
/// never, so its next write reads it first).
///
/// ```no_run
/// # async fn f(db: docrel::mongodb::Database) -> docrel::Result<()> {
/// docrel::schema::obey(&db).await?;
/// assert!(docrel::schema::confirmed_ago(&db).is_some());
/// # Ok(()) }
/// ```
pub fn confirmed_ago(db: &Database) -> Option<Duration> {
    obeying(db).confirmed.lock().ok()?.map(|at| at.elapsed())
}

/// Records that the stored schema of `db` was just read and obeyed.
pub(super) fn confirmed(db: &Database) {
    confirmed_at(db, Instant::now());
}

/// Records that the stored schema of `db` read at `at` is obeyed.
fn confirmed_at(db: &Database, at: Instant) {
    if let Ok(mut confirmed) = obeying(db).confirmed.lock() {
        // A later confirmation (the change stream's) is never moved back.
        if confirmed.is_none_or(|before| before < at) {
            *confirmed = Some(at);
        }
    }
}
