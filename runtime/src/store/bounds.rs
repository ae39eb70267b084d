//! The bounds an update passes for sure or may pass: what docrel reads from
//! each operation of an update before sending it (see [`super::update`]).

use crate::error::{Error, Result};
use crate::schema::document::{Document, RelationKind, Schema};
use crate::schema::graph::Graph;
use mongodb::bson::Bson;
use mongodb::bson::{Document as BsonDoc, RawDocumentBuf};

/// Why an update cannot be sent, kept until it is used.
#[derive(Debug, Clone)]
pub(super) enum Problem {
    Invalid(String),
    Full { collection: &'static str, field: &'static str, max: u32, len: usize },
}

/// An array an update may grow, with its bound.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Push {
    pub(crate) path: &'static str,
    pub(crate) count: usize,
    pub(crate) max: Option<u32>,
}

/// `pushes` of `collection`, each with the bound its write keeps to in the
/// database of `graph`: the lower of the type's and the stored one
/// ([`Graph::bound`]).
pub(crate) fn kept_to(graph: &Graph, collection: &str, pushes: &[Push]) -> Vec<Push> {
    pushes.iter().map(|p| Push { max: graph.bound(collection, p.path, p.max), ..*p }).collect()
}

/// Refuses a whole document of `collection` holding more elements in an
/// array than a stored bound lower than its type's ([`Graph::bound`]):
/// the bound a program's `check_bounds` does not know.
pub(crate) fn check_stored(graph: &'static Graph, collection: &'static str, raws: &[RawDocumentBuf]) -> Result<()> {
    let bounds: Vec<(&'static str, u32)> = graph.stored_bounds(collection).collect();
    if bounds.is_empty() {
        return Ok(());
    }
    for raw in raws {
        let plain: BsonDoc = crate::bson_compat::from_slice(raw.as_bytes())
            .map_err(|e| Error::Encode { what: format!("a document of `{collection}`"), message: e.to_string() })?;
        for (field, max) in &bounds {
            let len = plain.get_array(field).map_or(0, Vec::len);
            if len > *max as usize {
                let id = plain.get("_id").map_or_else(|| "(no id yet)".to_owned(), crate::bson_compat::relaxed_extjson);
                return Err(Error::EmbedFull { collection, id, field, max: *max, len });
            }
        }
    }
    Ok(())
}

/// Refuses an update of `collection` that sets a whole array longer than a
/// stored bound lower than its type's (the type's own are checked when the
/// update is built).
pub(crate) fn check_stored_sets(graph: &'static Graph, collection: &'static str, update: &BsonDoc) -> Result<()> {
    for (field, max) in graph.stored_bounds(collection) {
        for op in ["$set", "$setOnInsert"] {
            let len = update.get_document(op).ok().and_then(|set| set.get_array(field).ok()).map_or(0, Vec::len);
            if len > max as usize {
                return Err(Error::EmbedFull { collection, id: "(any)".into(), field, max, len });
            }
        }
    }
    Ok(())
}

/// The bound declared on a top-level array of the schema, by stored name.
fn declared_bound(schema: &'static Schema, field: &str) -> Option<(&'static str, u32)> {
    schema.relations.iter().find_map(|r| match r.kind {
        RelationKind::Embed { many: true, max: Some(max) } | RelationKind::RefMany { max: Some(max), .. }
            if r.field == field =>
        {
            Some((r.field, max))
        }
        _ => None,
    })
}

/// How many elements a `$push`/`$addToSet` value adds at most, and its `$slice`.
fn pushed(value: &Bson) -> (usize, Option<i64>) {
    match value {
        Bson::Document(d) if d.contains_key("$each") => {
            let count = match d.get("$each") {
                Some(Bson::Array(items)) => items.len(),
                _ => 0,
            };
            let slice = match d.get("$slice") {
                Some(Bson::Int32(n)) => Some(i64::from(*n)),
                Some(Bson::Int64(n)) => Some(*n),
                _ => None,
            };
            (count, slice)
        }
        _ => (1, None),
    }
}

/// What writing `value` at `path` with `op` does to the bounds of `D`: the
/// top-level array it may grow, or the bound it passes for sure. `handle`
/// is the typed handle's own path and bound, when there is one.
pub(super) fn check<D: Document>(
    op: &str,
    path: &str,
    handle: Option<(&'static str, Option<u32>)>,
    value: &Bson,
) -> std::result::Result<Option<Push>, Problem> {
    let schema = D::schema();
    let full = |field, max, len| Problem::Full { collection: D::COLLECTION, field, max, len };
    match path.split_once('.') {
        None => {
            let (field, max) = match handle {
                Some(known) => known,
                None => match schema.fields.iter().find(|f| f.bson == path) {
                    Some(f) => (f.bson, declared_bound(schema, path).map(|(_, max)| max)),
                    None => return Ok(None),
                },
            };
            match op {
                "$push" | "$addToSet" => {
                    let (count, slice) = pushed(value);
                    let trimmed = |max: &u32| slice.is_some_and(|s| s.unsigned_abs() <= u64::from(*max));
                    Ok(Some(Push { path: field, count, max: max.filter(|m| !trimmed(m)) }))
                }
                "$set" | "$setOnInsert" | "$min" | "$max" => match (max, value) {
                    (Some(max), Bson::Array(items)) if items.len() > max as usize => Err(full(field, max, items.len())),
                    _ => Ok(None),
                },
                _ => Ok(None),
            }
        }
        Some((head, rest)) => {
            let Some((field, max)) = declared_bound(schema, head) else { return Ok(None) };
            if matches!(op, "$unset" | "$pull" | "$pullAll" | "$pop" | "$rename") {
                return Ok(None);
            }
            match rest.split('.').next().and_then(|i| i.parse::<usize>().ok()) {
                Some(index) if index >= max as usize => Err(full(field, max, index + 1)),
                _ => Ok(None),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::pushed;
    use mongodb::bson::{doc, Bson};

    #[test]
    fn pushed_counts_each_and_reads_slice() {
        assert_eq!(pushed(&Bson::Int32(1)), (1, None));
        assert_eq!(pushed(&Bson::Document(doc! {"n": 1})), (1, None));
        assert_eq!(pushed(&Bson::Document(doc! {"$each": [1, 2, 3]})), (3, None));
        assert_eq!(pushed(&Bson::Document(doc! {"$each": [1, 2], "$slice": -5_i64})), (2, Some(-5)));
    }
}
