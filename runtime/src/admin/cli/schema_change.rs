//! `schema diff` and `schema apply`: a program's schema (the JSON its
//! `docrel::schema::export()` gives) against the one stored in the
//! database, then published with the backfills its new rules need.

use super::console::{json, Console, Exit, Shutdown};
use super::verify;
use crate::admin::checks;
use crate::error::{Error, Misuse, Result};
use crate::schema::stored::{self, StoredType, FORMAT};
use mongodb::Database;
use std::path::Path;

/// The types of a program's exported schema.
fn program(file: &Path) -> Result<Vec<StoredType>> {
    let bad = |message: String| Error::Invalid {
        what: Misuse::File,
        message: format!("{}: {message}; write it with `docrel::schema::export()`", file.display()),
    };
    let text = std::fs::read_to_string(file).map_err(|e| bad(e.to_string()))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    if value["format"] != FORMAT {
        return Err(bad(format!("format {} where this docrel reads {FORMAT}", value["format"])));
    }
    serde_json::from_value(value["types"].clone()).map_err(|e| bad(format!("not an exported schema: {e}")))
}

/// `schema diff --file F`: what publishing would change; exit 1 when
/// anything would (or a rule conflicts).
pub(super) async fn diff(db: &Database, file: &Path, console: &mut Console, as_json: bool) -> Result<Exit> {
    let diff = stored::diff(&stored::load(db).await?, &program(file)?);
    console.say(&if as_json { json(&diff) } else { diff.to_text() });
    Ok(if diff.has_changes() { Exit::Found } else { Exit::Ok })
}

/// `schema apply --file F`: publishes the program's schema (refused, with
/// nothing written, when a rule conflicts), follows it, and runs the
/// repairs that backfill the new rules.
pub(super) async fn apply(
    db: &Database,
    file: &Path,
    console: &mut Console,
    shutdown: &mut Shutdown<'_>,
    as_json: bool,
) -> Result<Exit> {
    let program = program(file)?;
    let diff = stored::diff(&stored::load(db).await?, &program);
    let published = stored::publish_types(db, &program).await?;
    stored::obey(db).await?;
    console.note(&format!(
        "published: {} collection(s) added, {} extended, {} unchanged",
        published.added.len(),
        published.extended.len(),
        published.unchanged.len()
    ));
    let mut exit = Exit::Ok;
    for collection in &diff.repairs {
        console.note(&format!("backfill: repair {collection}"));
        let run = checks::repair(db, Some(collection))?;
        match verify::repair(run, false, console, shutdown, as_json).await? {
            Exit::Ok => {}
            other => exit = other,
        }
    }
    Ok(exit)
}
