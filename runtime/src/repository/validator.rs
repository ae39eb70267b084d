//! Installing a type's `$jsonSchema` validator, at the strongest level the
//! server has: `constraint` on MongoDB 9.0 and later (the server then
//! guarantees every stored document keeps the rules, and refuses to raise
//! the level while one does not), `strict` before. 9.0 refuses to edit the
//! rules of a collection at `constraint`, so an edit always goes strict →
//! edit → constraint, and the documents breaking the rules are counted
//! before the level is raised.

use crate::error::{Error, Misuse, Result};
use mongodb::bson::{doc, Document as BsonDoc};
use mongodb::Database;

/// The level a server of `release` enforces a validator at.
pub(crate) fn level(release: crate::client::release::Release) -> &'static str {
    if release.0 >= 9 {
        "constraint"
    } else {
        "strict"
    }
}

/// Installs `validator` on `collection` of `db` (created if needed) at the
/// strongest level the server has.
pub(crate) async fn install(db: &Database, collection: &str, validator: &BsonDoc) -> Result<()> {
    let command = doc! {"collMod": collection, "validator": validator.clone(), "validationLevel": "strict"};
    match db.run_command(command).await {
        Ok(_) => {}
        // NamespaceNotFound: create the collection with the validator instead.
        Err(e) if matches!(*e.kind, mongodb::error::ErrorKind::Command(ref c) if c.code == 26) => {
            let created = db.create_collection(collection).validator(validator.clone()).await;
            created.map_err(|e| Error::driver("create", collection, e))?;
        }
        Err(e) => return Err(Error::driver("collMod", collection, e)),
    }
    if level(crate::client::release::of(db).await?) == "strict" {
        return Ok(());
    }
    let coll = db.collection::<BsonDoc>(collection);
    let breaking = doc! {"$nor": [validator.clone()]};
    let count = coll.count_documents(breaking.clone()).await.map_err(|e| Error::driver("count", collection, e))?;
    if count > 0 {
        let first = coll.find_one(breaking).projection(doc! {"_id": 1}).await.ok().flatten();
        let example = first.and_then(|d| d.get("_id").map(crate::error::show_id)).unwrap_or_default();
        return Err(Error::Invalid {
            what: Misuse::Validator,
            message: format!(
                "the validator of `{collection}` is installed at level `strict` (new writes that break it are \
                 refused), but {count} stored document(s) break it already (the first by `_id`: {example}), and \
                 the server raises the level to `constraint` only when none does. Bring them within the bounds \
                 (`docrel doctor` names the arrays over them) and call `ensure_validator` again"
            ),
        });
    }
    let raise = doc! {"collMod": collection, "validationLevel": "constraint"};
    db.run_command(raise).await.map_err(|e| Error::driver("collMod", collection, e))?;
    Ok(())
}
