//! The rules whose data a complete online change has backfilled, kept in
//! [`CHANGE_COLLECTION`]: what a change owes is measured against them, not
//! against the stored schema. A rule can be published without its data
//! being written (a program publishes at start-up, or a change stopped
//! between publishing and saving its state); measured against the stored
//! schema, such a rule would look old and its backfill would be skipped.

use crate::error::{Error, Misuse, Result};
use crate::schema::stored::{self, Diff, StoredType};
use mongodb::bson::{doc, Document as BsonDoc};
use mongodb::Database;

/// The collection where changes keep their state (and the backfilled rules).
pub const CHANGE_COLLECTION: &str = "_docrel_schema_changes";

/// The `_id` of the document holding the backfilled rules.
const BACKFILLED: &str = "_backfilled";

/// What publishing `program` changes in the stored schema of `db`, with the
/// backfills it owes: those of every rule no complete change backfilled.
pub(crate) async fn owed(db: &Database, program: &[StoredType]) -> Result<Diff> {
    let mut diff = stored::diff(&stored::load(db).await?, program);
    // The other sides of arrays made two-way are built, not repaired.
    let owed = stored::diff_building(&load(db).await?, program, Some(&diff.inverses));
    diff.backfills = owed.backfills;
    diff.repairs = owed.repairs;
    Ok(diff)
}

/// Records that the data of `program`'s rules is written, less the rules
/// `removed` (`collection.field`): a later change owes nothing for them,
/// and a removed rule added again is backfilled again.
pub(crate) async fn record(db: &Database, program: &[StoredType], removed: &[String]) -> Result<()> {
    let mut types = load(db).await?;
    for t in program {
        match types.iter_mut().find(|b| b.collection == t.collection) {
            // A rule declared differently is the program's now (the publish
            // refused nothing, or the change would not be complete).
            Some(b) => *b = stored::merge_rules(b, t),
            None => types.push(t.clone()),
        }
    }
    for rule in removed {
        let Some((collection, field)) = rule.split_once('.') else { continue };
        if let Some(b) = types.iter_mut().find(|b| b.collection == collection) {
            if let Some(without) = stored::without_rule(b, field) {
                *b = without;
            }
        }
    }
    let types = crate::bson_compat::to_bson(&types)
        .map_err(|e| Error::Encode { what: "the backfilled rules".into(), message: e.to_string() })?;
    db.collection::<BsonDoc>(CHANGE_COLLECTION)
        .update_one(doc! {"_id": BACKFILLED}, doc! {"$set": {"types": types}})
        .upsert(true)
        .await
        .map_err(|e| Error::driver("update", CHANGE_COLLECTION, e))?;
    Ok(())
}

async fn load(db: &Database) -> Result<Vec<StoredType>> {
    let found = db
        .collection::<BsonDoc>(CHANGE_COLLECTION)
        .find_one(doc! {"_id": BACKFILLED})
        .selection_criteria(crate::store::primary())
        .await
        .map_err(|e| Error::driver("find", CHANGE_COLLECTION, e))?;
    let Some(types) = found.and_then(|d| d.get("types").cloned()) else { return Ok(Vec::new()) };
    crate::bson_compat::from_bson::<Vec<StoredType>>(types).map_err(|e| Error::Invalid {
        what: Misuse::Schema,
        message: format!("the backfilled rules in `{CHANGE_COLLECTION}` cannot be read ({e}); delete that document to backfill every rule again"),
    })
}
