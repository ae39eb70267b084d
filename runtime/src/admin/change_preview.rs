//! What a program's schema would meet in a live database before it is
//! applied: the stored rules it adds (and the backfills they need), the
//! index builds its types need, the documents already over a bound it
//! declares, and what an N:M array changing direction carries.

use crate::admin::index_plan::{existing_collections, show};
use crate::admin::index_shape::Shape;
use crate::error::{Error, Result};
use crate::schema::stored::{self, Diff, StoredKind, StoredType};
use mongodb::bson::{doc, Document as BsonDoc};
use mongodb::Database;
use serde::Serialize;

/// [`preview`]'s answer.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Preview {
    /// The rules the program adds to the stored schema, their backfills,
    /// and the rules it declares differently.
    pub diff: Diff,
    /// The indexes its types declare or their relationships need that the
    /// database lacks, as `collection {keys}` (unique said).
    pub index_builds: Vec<String>,
    /// The arrays already over a bound the program declares, one line each
    /// with how many documents: writes of those documents will be refused.
    pub bound_violations: Vec<String>,
    /// What each N:M array changing direction carries, counted: the links
    /// a change builds into the other side (and the documents that would
    /// pass its bound), or the ids a retired side holds.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inverse_counts: Vec<String>,
    /// The plan of each move the program declares (`moved_from`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub moves: Vec<crate::admin::moves::MovePlan>,
    /// What the program may mean but does not declare (an array dropped
    /// while a collection appears, with no `moved_from`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Preview {
    /// Whether applying would change anything or meet a problem.
    pub fn has_changes(&self) -> bool {
        self.diff.has_changes()
            || !self.index_builds.is_empty()
            || !self.bound_violations.is_empty()
            || !self.moves.is_empty()
    }

    /// The preview in words, one line each.
    pub fn to_text(&self) -> String {
        let mut out = self.diff.to_text();
        for i in &self.index_builds {
            out.push_str(&format!("index build: {i}\n"));
        }
        for b in &self.bound_violations {
            out.push_str(&format!("bound violation: {b}\n"));
        }
        for c in &self.inverse_counts {
            out.push_str(&format!("inverse count: {c}\n"));
        }
        for m in &self.moves {
            out.push_str(&m.to_text());
        }
        for n in &self.notes {
            out.push_str(&format!("note: {n}\n"));
        }
        out
    }
}

/// Compares `program` (a program's exported types) with the schema stored
/// in `db` and with its data: one `listIndexes` per collection the program
/// declares, one count per bounded array, and one aggregate per N:M array
/// changing direction.
///
/// ```no_run
/// # async fn f(db: docrel::mongodb::Database) -> docrel::Result<()> {
/// let preview = docrel::admin::change_preview::preview(&db, &docrel::schema::stored::program()).await?;
/// print!("{}", preview.to_text());
/// # Ok(()) }
/// ```
pub async fn preview(db: &Database, program: &[StoredType]) -> Result<Preview> {
    let diff = super::backfilled::owed(db, program).await?;
    let existing = existing_collections(db).await?;
    let mut out = Preview { diff, ..Preview::default() };
    for (collection, model) in super::missing_indexes::missing_in(db, program, &existing).await? {
        let unique = if Shape::of(&model).unique() { " unique" } else { "" };
        out.index_builds.push(format!("{collection} {}{unique}", show(&model.keys)));
    }
    for t in program.iter().filter(|t| existing.contains(&t.collection)) {
        out.bound_violations.extend(over_bounds(db, t).await?);
    }
    for c in &out.diff.inverses {
        out.inverse_counts.push(super::inverse_counts::built(db, program, c).await?);
    }
    for c in &out.diff.one_way {
        out.inverse_counts.push(super::inverse_counts::retired(db, c).await?);
    }
    Ok(out)
}

/// [`preview`] of an export read with [`stored::read_export`], with the
/// plan of every move it declares (see [`crate::admin::moves::plan`]; with
/// `probe`, one page of each is copied to a scratch collection to time it).
///
/// ```no_run
/// # async fn f(db: docrel::mongodb::Database) -> docrel::Result<()> {
/// let exported = docrel::schema::stored::read_export(&docrel::schema::export()).expect("our own export");
/// let preview = docrel::admin::change_preview::preview_export(&db, &exported, true).await?;
/// for m in &preview.moves {
///     print!("{}", m.to_text());
/// }
/// # Ok(()) }
/// ```
pub async fn preview_export(db: &Database, exported: &stored::Exported, probe: bool) -> Result<Preview> {
    let mut out = preview(db, &exported.types).await?;
    let stored = stored::load(db).await?;
    out.moves = crate::admin::moves::plan_with(db, &stored, &exported.types, &exported.moves, probe).await?;
    out.notes = crate::admin::moves::undeclared(&stored, &exported.types, &exported.moves);
    Ok(out)
}

/// The bounded arrays of `t` that documents already hold more of than the bound.
async fn over_bounds(db: &Database, t: &StoredType) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for r in &t.relations {
        let max = match &r.kind {
            StoredKind::Embed { many: true, max: Some(max) } | StoredKind::RefMany { max: Some(max), .. } => *max,
            _ => continue,
        };
        let over = doc! {"$expr": {"$gt": [{"$size": {"$cond": [{"$isArray": format!("${}", r.field)}, format!("${}", r.field), []]}}, max]}};
        let n = db
            .collection::<BsonDoc>(&t.collection)
            .count_documents(over)
            .await
            .map_err(|e| Error::driver("count", t.collection.clone(), e))?;
        if n > 0 {
            out.push(format!(
                "`{}.{}`: {n} document(s) hold more than {max}, the bound declared; a write of them will be refused \
                 until they are trimmed or the bound raised",
                t.collection, r.field
            ));
        }
    }
    Ok(out)
}
