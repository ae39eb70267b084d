//! The index plan: the indexes every document type declares or its
//! relationships need ([`crate::schema::indexes::needed_by`]) against the
//! ones that exist, per collection, and the changes that would bring them
//! together. Nothing is written until [`IndexPlan::apply`].
//!
//! An index is matched with the existing one on the same keys; it is kept
//! when its options are as declared (unique, sparse, TTL, partial filter,
//! collation, text weights and languages, and the name when one is
//! declared), and recreated otherwise. Indexes that exist but that no type
//! declares are listed as such and dropped only when asked
//! (`drop_undeclared`): another program may use them.

use super::index_shape::Shape;
use crate::error::{Error, Result};
use crate::schema::graph::all_types;
use crate::schema::indexes::needed_by;
use mongodb::bson::Document as BsonDoc;
use mongodb::{Database, IndexModel};
use serde::Serialize;

/// What the plan does with one index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// It exists as declared.
    Keep,
    /// It is declared (or needed) and missing.
    Create,
    /// It exists with other options than declared (a unique one that is
    /// not, another TTL, partial filter or collation, ...): dropped and
    /// created again.
    Recreate,
    /// It exists and nothing declares it.
    Undeclared,
}

/// One line of the plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// The collection.
    pub collection: String,
    /// The keys, `{parts.id: 1}`.
    pub keys: String,
    /// The index's name on the server (existing ones).
    pub name: Option<String>,
    /// Declared unique (an undeclared one: unique on the server).
    pub unique: bool,
    /// The other options, declared (or, for an undeclared index, on the
    /// server): `sparse, expire_after 3600s, partial {..}, collation {..}`.
    pub options: String,
    /// What happens.
    pub action: Action,
    /// Why, in words.
    pub reason: String,
    /// The model to create, as `{key, ..options}`.
    #[serde(skip)]
    model: Option<BsonDoc>,
}

/// The plan of every collection of the program.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IndexPlan {
    /// The changes, by collection.
    pub changes: Vec<Change>,
}

/// `{parts.id: 1, time: -1}`
pub(crate) fn show(keys: &BsonDoc) -> String {
    let parts: Vec<String> = keys.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    format!("{{{}}}", parts.join(", "))
}

/// An index some type of a collection declares or needs.
#[derive(Debug, Clone)]
pub(crate) struct Needed {
    /// What `createIndexes` is sent.
    pub model: IndexModel,
    /// What is compared.
    pub shape: Shape,
}

/// An index a collection has.
#[derive(Debug, Clone)]
pub(crate) struct Present {
    pub shape: Shape,
    pub name: String,
}

/// Every index the types of `collection` declare or their relationships
/// need, each key pattern once (unique when any type needs it unique).
pub(crate) fn needed(g: &'static crate::schema::graph::Graph, collection: &str) -> Result<Vec<Needed>> {
    let mut needed: Vec<Needed> = Vec::new();
    for s in g.types().into_iter().filter(|s| s.collection == collection) {
        for model in needed_by(s)? {
            let shape = Shape::of(&model);
            match needed.iter_mut().find(|n| n.shape.keys == shape.keys) {
                Some(n) if shape.unique() && !n.shape.unique() => *n = Needed { model, shape },
                Some(_) => {}
                None => needed.push(Needed { model, shape }),
            }
        }
    }
    Ok(needed)
}

/// The collections `db` has (`listCollections`).
pub(crate) async fn existing_collections(db: &Database) -> Result<Vec<String>> {
    db.list_collection_names().await.map_err(|e| Error::driver("listCollections", db.name(), e))
}

/// The indexes `collection` has (`listIndexes`).
pub(crate) async fn present(db: &Database, collection: &str) -> Result<Vec<Present>> {
    let mut present = Vec::new();
    let mut cursor = db
        .collection::<BsonDoc>(collection)
        .list_indexes()
        .await
        .map_err(|e| Error::driver("listIndexes", collection, e))?;
    while cursor.advance().await.map_err(|e| Error::driver("listIndexes", collection, e))? {
        let m = cursor.deserialize_current().map_err(|e| Error::driver("listIndexes", collection, e))?;
        let name = m.options.as_ref().and_then(|o| o.name.clone()).unwrap_or_default();
        present.push(Present { shape: Shape::of(&m), name });
    }
    Ok(present)
}

/// What the plan does with a needed index, given the one on its keys.
fn judge(needed: &Needed, found: Option<&Present>) -> (Action, Option<String>, String) {
    let Some(found) = found else {
        return (Action::Create, None, "declared or needed by a relationship, and missing".to_owned());
    };
    let differences = needed.shape.differences(&found.shape);
    if differences.is_empty() {
        return (Action::Keep, Some(found.name.clone()), "exists as declared".to_owned());
    }
    let reason = match differences.as_slice() {
        [one] if one.starts_with("unique none") => "exists, but not unique as declared".to_owned(),
        _ => format!("exists with other options: {}", differences.join("; ")),
    };
    (Action::Recreate, Some(found.name.clone()), reason)
}

/// Reads the existing indexes and makes the plan (one `listIndexes` per collection).
///
/// ```
/// # docrel::testing::doc_test(|db| async move {
/// # use docrel::{Document, bson::oid::ObjectId};
/// # use serde::{Deserialize, Serialize};
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "hosts")]
/// struct Host { #[serde(rename = "_id")] id: i32, #[document(unique)] name: String }
///
/// use docrel::admin::index_plan::{plan, Action};
/// let before = plan(&db).await?;
/// let host = before.changes.iter().find(|c| c.collection == "hosts").unwrap();
/// assert_eq!((host.keys.as_str(), host.action), ("{name: 1}", Action::Create));
/// before.apply(&db, false).await?;
/// let after = plan(&db).await?;
/// assert!(after.changes.iter().filter(|c| c.collection == "hosts").all(|c| c.action == Action::Keep));
/// # Ok(()) });
/// ```
pub async fn plan(db: &Database) -> Result<IndexPlan> {
    let existing = existing_collections(db).await?;
    let mut collections: Vec<&'static str> = all_types(db).iter().map(|s| s.collection).collect();
    collections.dedup();
    let mut changes = Vec::new();
    for collection in collections {
        let needed = needed(crate::schema::graph::of(db), collection)?;
        let present =
            if existing.iter().any(|c| c == collection) { present(db, collection).await? } else { Vec::new() };
        for n in &needed {
            // Several indexes on the same keys (other collations): the one as declared, if any.
            let on_keys: Vec<&Present> = present.iter().filter(|p| p.shape.keys == n.shape.keys).collect();
            let found = on_keys.iter().find(|p| n.shape.differences(&p.shape).is_empty()).or(on_keys.first());
            let (action, name, reason) = judge(n, found.copied());
            changes.push(Change {
                collection: collection.to_owned(),
                keys: show(&n.shape.keys),
                name,
                unique: n.shape.unique(),
                options: n.shape.show_options(),
                action,
                reason,
                model: crate::bson_compat::to_document(&n.model).ok(),
            });
        }
        for p in &present {
            if p.name == "_id_" || needed.iter().any(|n| n.shape.keys == p.shape.keys) {
                continue;
            }
            changes.push(Change {
                collection: collection.to_owned(),
                keys: show(&p.shape.keys),
                name: Some(p.name.clone()),
                unique: p.shape.unique(),
                options: p.shape.show_options(),
                action: Action::Undeclared,
                reason: "exists, and no document type declares it (dropped only with --drop-undeclared)".to_owned(),
                model: None,
            });
        }
    }
    Ok(IndexPlan { changes })
}

/// What [`IndexPlan::apply`] did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Applied {
    /// `collection {keys}` created.
    pub created: Vec<String>,
    /// `collection name` dropped.
    pub dropped: Vec<String>,
}

impl IndexPlan {
    /// Whether applying the plan would change anything (undeclared indexes
    /// count only with `drop_undeclared`).
    pub fn has_changes(&self, drop_undeclared: bool) -> bool {
        self.changes.iter().any(|c| match c.action {
            Action::Keep => false,
            Action::Undeclared => drop_undeclared,
            Action::Create | Action::Recreate => true,
        })
    }

    /// The plan as text, one line per index: `+` create, `~` recreate,
    /// `=` keep, `?` undeclared (`-` when it would be dropped).
    pub fn to_text(&self, drop_undeclared: bool) -> String {
        let mut out = String::new();
        for c in &self.changes {
            let sign = match c.action {
                Action::Keep => "=",
                Action::Create => "+",
                Action::Recreate => "~",
                Action::Undeclared if drop_undeclared => "-",
                Action::Undeclared => "?",
            };
            out.push_str(&format!(
                "{sign} {:<16} {:<40} {}\n",
                c.collection,
                format!(
                    "{}{}{}{}",
                    c.keys,
                    if c.unique { " unique" } else { "" },
                    if c.options.is_empty() { "" } else { " " },
                    c.options
                ),
                c.reason
            ));
        }
        if out.is_empty() {
            out.push_str("no document type declares or needs an index\n");
        }
        out
    }

    /// Creates what is missing, recreates what differs, and drops the
    /// undeclared indexes when `drop_undeclared`.
    pub async fn apply(&self, db: &Database, drop_undeclared: bool) -> Result<Applied> {
        let mut out = Applied::default();
        for c in &self.changes {
            let coll = db.collection::<BsonDoc>(&c.collection);
            let drop = match c.action {
                Action::Recreate => true,
                Action::Undeclared => drop_undeclared,
                _ => false,
            };
            if drop {
                if let Some(name) = &c.name {
                    coll.drop_index(name).await.map_err(|e| Error::driver("dropIndexes", &c.collection, e))?;
                    out.dropped.push(format!("{} {name}", c.collection));
                }
            }
            if let (Action::Create | Action::Recreate, Some(model)) = (c.action, &c.model) {
                let model: IndexModel =
                    crate::bson_compat::from_document(model.clone()).map_err(|e| Error::Invalid {
                        what: crate::error::Misuse::Index,
                        message: format!("the index {} of `{}` cannot be read back: {e}", c.keys, c.collection),
                    })?;
                coll.create_index(model).await.map_err(|e| Error::driver("createIndexes", &c.collection, e))?;
                out.created.push(format!("{} {}", c.collection, c.keys));
            }
        }
        Ok(out)
    }
}
