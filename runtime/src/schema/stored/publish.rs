//! The schema in the database: one document per collection in
//! [`SCHEMA_COLLECTION`], written by [`publish`] and read by [`load`].

use super::form::{StoredType, FORMAT};
use super::merge::{merge, Conflict};
use super::moves_state::ActiveMove;
use super::transitions::{BuildingInverse, RetiringInverse};
use crate::error::{Error, Misuse, Result};
use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::options::SelectionCriteria;
use mongodb::Database;

/// The collection of docrel's own that holds the published schema.
pub const SCHEMA_COLLECTION: &str = "_docrel_schema";

/// How often a publish racing another one starts again before giving up.
pub(super) const ATTEMPTS: usize = 5;

/// What [`publish`] wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Published {
    /// Collections the database's schema did not have.
    pub added: Vec<String>,
    /// Collections it had, with the rules this program added to each.
    pub extended: Vec<(String, Vec<String>)>,
    /// Collections whose stored schema already held every rule of this program.
    pub unchanged: Vec<String>,
}

/// The fingerprint of a stored type: FNV-1a (64 bits) of its JSON, in hex.
/// Equal types have equal fingerprints in every program.
pub fn fingerprint(t: &StoredType) -> String {
    let json = serde_json::to_string(t).unwrap_or_default();
    format!("{:016x}", crate::schema::document::field_key(&json))
}

/// Writes this program's part of the schema (every linked document type)
/// into [`SCHEMA_COLLECTION`] of `db`, so processes that do not link the
/// types can read the rules. Idempotent: a rule already stored is not
/// written again, and rules other programs published are kept. A rule this
/// program declares differently from the stored one (a copy's source
/// field, a bound, a delete rule) is refused with
/// `Error::Invalid { what: Misuse::Schema, .. }` naming both, and then
/// nothing is written.
///
/// ```no_run
/// # async fn f(db: docrel::mongodb::Database) -> docrel::Result<()> {
/// let published = docrel::schema::publish(&db).await?;
/// println!("new collections: {:?}", published.added);
/// # Ok(()) }
/// ```
pub async fn publish(db: &Database) -> Result<Published> {
    publish_types(db, &super::form::program()).await
}

/// [`publish`] of the given types (a program's part).
pub async fn publish_types(db: &Database, ours: &[StoredType]) -> Result<Published> {
    for attempt in 1..=ATTEMPTS {
        match publish_once(db, ours).await? {
            Some(published) => return Ok(published),
            None if attempt == ATTEMPTS => break,
            None => {}
        }
    }
    Err(Error::Invalid {
        what: Misuse::Schema,
        message: format!(
            "the schema in `{SCHEMA_COLLECTION}` kept changing while this program published its own ({ATTEMPTS} \
             attempts); publish again"
        ),
    })
}

/// One attempt: `None` when another publish changed a document meanwhile.
async fn publish_once(db: &Database, ours: &[StoredType]) -> Result<Option<Published>> {
    let stored = load_documents(db).await?;
    let mut writes = Vec::new();
    let mut conflicts: Vec<Conflict> = Vec::new();
    let mut published = Published::default();
    for t in ours {
        match stored.iter().find(|(s, _)| s.collection == t.collection) {
            None => {
                published.added.push(t.collection.clone());
                writes.push((t.clone(), None));
            }
            Some((s, print)) => match merge(s, t) {
                Err(c) => conflicts.extend(c),
                Ok((_, added)) if added.is_empty() => published.unchanged.push(t.collection.clone()),
                Ok((merged, added)) => {
                    published.extended.push((t.collection.clone(), added));
                    writes.push((merged, Some(print.clone())));
                }
            },
        }
    }
    if !conflicts.is_empty() {
        return Err(conflicted(&conflicts));
    }
    let coll = db.collection::<BsonDoc>(SCHEMA_COLLECTION);
    for (t, before) in writes {
        let stored = stored_document(&t)?;
        match before {
            None => match coll.insert_one(stored).await.map_err(|e| Error::driver("insert", SCHEMA_COLLECTION, e)) {
                Ok(_) => {}
                Err(e) if e.is_duplicate_key() => return Ok(None),
                Err(e) => return Err(e),
            },
            Some(print) => {
                let filter = doc! {"_id": &t.collection, "fingerprint": print};
                let r = coll
                    .replace_one(filter, stored)
                    .await
                    .map_err(|e| Error::driver("replace", SCHEMA_COLLECTION, e))?;
                if r.matched_count == 0 {
                    return Ok(None);
                }
            }
        }
    }
    Ok(Some(published))
}

fn conflicted(conflicts: &[Conflict]) -> Error {
    let lines: Vec<String> = conflicts.iter().map(|c| format!("- {c}")).collect();
    Error::Invalid {
        what: Misuse::Schema,
        message: format!(
            "this program's schema conflicts with the one published in `{SCHEMA_COLLECTION}`, so nothing was \
             published:\n{}\nMake the programs agree (deploy the same declaration everywhere), or change the rule \
             online as docs/deployment.md describes",
            lines.join("\n")
        ),
    }
}

/// The stored document of a type: its form, format and fingerprint.
pub(super) fn stored_document(t: &StoredType) -> Result<BsonDoc> {
    let form = crate::bson_compat::to_document(t)
        .map_err(|e| Error::Encode { what: format!("the schema of `{}`", t.collection), message: e.to_string() })?;
    Ok(doc! {"_id": &t.collection, "format": FORMAT, "fingerprint": fingerprint(t), "type": form})
}

/// The schema published in `db`: every stored type, by collection.
///
/// ```no_run
/// # async fn f(db: docrel::mongodb::Database) -> docrel::Result<()> {
/// for t in docrel::schema::load(&db).await? {
///     println!("{}: {} relations", t.collection, t.relations.len());
/// }
/// # Ok(()) }
/// ```
pub async fn load(db: &Database) -> Result<Vec<StoredType>> {
    Ok(load_documents(db).await?.into_iter().map(|(t, _)| t).collect())
}

/// Every stored type with its fingerprint, from the primary.
pub(super) async fn load_documents(db: &Database) -> Result<Vec<(StoredType, String)>> {
    Ok(load_all(db).await?.types)
}

/// What the schema collection holds: the stored types with their
/// fingerprints, the moves in progress, the two-way arrays being made
/// one-way and the other sides of arrays being made two-way.
#[derive(Debug, Default)]
pub(super) struct Loaded {
    pub(super) types: Vec<(StoredType, String)>,
    pub(super) moves: Vec<ActiveMove>,
    pub(super) retiring: Vec<RetiringInverse>,
    pub(super) building: Vec<BuildingInverse>,
}

/// Everything the schema collection holds, from the primary in one read.
pub(super) async fn load_all(db: &Database) -> Result<Loaded> {
    let coll = db.collection::<BsonDoc>(SCHEMA_COLLECTION);
    let cursor = coll
        .find(doc! {})
        .sort(doc! {"_id": 1})
        .selection_criteria(SelectionCriteria::ReadPreference(mongodb::options::ReadPreference::Primary))
        .await
        .map_err(|e| Error::driver("find", SCHEMA_COLLECTION, e))?;
    let docs: Vec<BsonDoc> = cursor.try_collect().await.map_err(|e| Error::driver("find", SCHEMA_COLLECTION, e))?;
    let (moves, types): (Vec<BsonDoc>, Vec<BsonDoc>) = docs.into_iter().partition(super::moves_state::is_moves);
    let (moves, retiring, building) = match moves.first() {
        Some(d) => (
            super::moves_state::decode(d)?,
            super::transitions::decode(d, "retiring")?,
            super::transitions::decode(d, "building")?,
        ),
        None => (Vec::new(), Vec::new(), Vec::new()),
    };
    Ok(Loaded { types: types.iter().map(decode).collect::<Result<_>>()?, moves, retiring, building })
}

/// The moves in progress in `db`, from the primary.
pub async fn load_moves(db: &Database) -> Result<Vec<ActiveMove>> {
    Ok(load_all(db).await?.moves)
}

/// The moves in progress, the two-way arrays being made one-way and the
/// other sides being built in `db`, from the primary in one read.
pub(crate) async fn load_transitions(
    db: &Database,
) -> Result<(Vec<ActiveMove>, Vec<RetiringInverse>, Vec<BuildingInverse>)> {
    let all = load_all(db).await?;
    Ok((all.moves, all.retiring, all.building))
}

/// The two-way arrays being made one-way in `db`, from the primary.
pub async fn load_retiring(db: &Database) -> Result<Vec<RetiringInverse>> {
    Ok(load_all(db).await?.retiring)
}

/// The other sides of arrays being made two-way in `db`, from the primary.
pub async fn load_building(db: &Database) -> Result<Vec<BuildingInverse>> {
    Ok(load_all(db).await?.building)
}

fn decode(d: &BsonDoc) -> Result<(StoredType, String)> {
    let id = d.get("_id").map(Bson::to_string).unwrap_or_default();
    let bad = |message: String| Error::Invalid {
        what: Misuse::Schema,
        message: format!("the stored schema {id} in `{SCHEMA_COLLECTION}` cannot be read: {message}"),
    };
    let format = d.get("format").and_then(|f| f.as_i32().map(i64::from).or_else(|| f.as_i64())).unwrap_or(0);
    if format != i64::from(FORMAT) {
        return Err(bad(format!(
            "it has format {format} and this docrel reads format {FORMAT}; upgrade docrel, or publish again"
        )));
    }
    let form = d.get_document("type").map_err(|e| bad(e.to_string()))?;
    let t: StoredType = crate::bson_compat::from_document(form.clone()).map_err(|e| bad(e.to_string()))?;
    let print = d.get_str("fingerprint").unwrap_or_default().to_owned();
    Ok((t, print))
}

/// Publishes `moves` as the moves in progress of `db` (all of them: the
/// list is replaced); the moves document goes when it lists nothing.
pub async fn publish_moves(db: &Database, moves: &[ActiveMove]) -> Result<()> {
    set_listed(db, "moves", super::transitions::encode(moves, "a move")?).await
}

/// Publishes `retiring` as the two-way arrays being made one-way in `db`
/// (all of them: the list is replaced).
pub async fn publish_retiring(db: &Database, retiring: &[RetiringInverse]) -> Result<()> {
    set_listed(db, "retiring", super::transitions::encode(retiring, "a retiring array")?).await
}

/// Publishes `building` as the other sides of arrays being made two-way
/// in `db` (all of them: the list is replaced).
pub async fn publish_building(db: &Database, building: &[BuildingInverse]) -> Result<()> {
    set_listed(db, "building", super::transitions::encode(building, "a side being built")?).await
}

/// The lists of the moves document.
const LISTS: [&str; 3] = ["moves", "retiring", "building"];

/// Sets one list of the moves document, which keeps the others; the
/// document goes when all are empty. Each list is written alone, so a move
/// and a retirement published at once do not undo each other.
async fn set_listed(db: &Database, field: &str, listed: Vec<Bson>) -> Result<()> {
    let coll = db.collection::<BsonDoc>(SCHEMA_COLLECTION);
    let failed = |e| Error::driver("update", SCHEMA_COLLECTION, e);
    let id = super::moves_state::MOVES_ID;
    if listed.is_empty() {
        let mut all_empty = doc! {"_id": id};
        for other in LISTS.iter().filter(|l| **l != field) {
            all_empty.insert(format!("{other}.0"), doc! {"$exists": false});
        }
        coll.delete_one(all_empty).await.map_err(failed)?;
        coll.update_one(doc! {"_id": id}, doc! {"$set": {field: []}}).await.map_err(failed)?;
        return Ok(());
    }
    let set = doc! {"$set": {"format": super::moves::MOVES_FORMAT as i32, field: listed}};
    coll.update_one(doc! {"_id": id}, set).upsert(true).await.map_err(failed)?;
    Ok(())
}

/// Rewrites the stored schema of `collection` with `edit` (`None`: it
/// leaves it as it is), guarded by its fingerprint and read again when
/// another publish changed it meanwhile; whether it was rewritten. `while_`
/// says what was being done, for the error after [`ATTEMPTS`] changes.
pub(super) async fn rewrite(
    db: &Database,
    collection: &str,
    edit: impl Fn(&StoredType) -> Option<StoredType>,
    while_: &str,
) -> Result<bool> {
    for _ in 0..ATTEMPTS {
        let stored = load_documents(db).await?;
        let Some((t, print)) = stored.into_iter().find(|(t, _)| t.collection == collection) else {
            return Ok(false);
        };
        let Some(edited) = edit(&t) else { return Ok(false) };
        let filter = doc! {"_id": collection, "fingerprint": print};
        let replaced = db
            .collection::<BsonDoc>(SCHEMA_COLLECTION)
            .replace_one(filter, stored_document(&edited)?)
            .await
            .map_err(|e| Error::driver("replace", SCHEMA_COLLECTION, e))?;
        if replaced.matched_count == 1 {
            return Ok(true);
        }
    }
    Err(Error::Invalid {
        what: Misuse::Schema,
        message: format!("the schema of `{collection}` kept changing while {while_}; run it again"),
    })
}
