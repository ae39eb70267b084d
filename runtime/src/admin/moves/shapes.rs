//! The words of a move's plan that come from the schemas alone: both
//! shapes, the derived data that goes with the elements, what old readers
//! see, and what refuses the move.

use super::count::MoveCounts;
use crate::schema::stored::{StoredKind, StoredMove, StoredRelation, StoredType};

/// `one-to-few (embed), max 500`.
pub(super) fn old_shape(old: &StoredRelation) -> String {
    let bound = match old.kind {
        StoredKind::Embed { max: Some(m), .. } | StoredKind::RefMany { max: Some(m), .. } => format!(", max {m}"),
        StoredKind::Embed { many: true, .. } | StoredKind::RefMany { .. } => ", unbounded".to_owned(),
        _ => String::new(),
    };
    format!("{}{bound}", old.pattern().name())
}

/// The new collection's parent reference, and what the parent keeps of it.
pub(super) fn new_shape(program: &[StoredType], mv: &StoredMove) -> Vec<String> {
    let mut out = Vec::new();
    let parent_ref = types(program, &mv.to.collection).flat_map(|t| &t.relations).find(|r| r.field == mv.parent_field);
    if let Some(r) = parent_ref {
        out.push(format!(
            "`{}` ({}): {} to {} by `{}`",
            mv.to.collection,
            mv.to.rust_type,
            r.pattern().name(),
            mv.from.rust_type,
            r.field
        ));
    }
    for (r, s) in subsets_from(program, mv) {
        let bound = match r.kind {
            StoredKind::Embed { max: Some(m), .. } => format!("{m} "),
            _ => String::new(),
        };
        let order: Vec<String> = s.sort.iter().map(|(k, d)| format!("{}{k}", if *d < 0 { "-" } else { "" })).collect();
        out.push(format!(
            "`{}.{}`: subset, the {} {bound}of `{}` by `{}`",
            mv.from.collection,
            r.field,
            if s.keep_last { "last" } else { "first" },
            mv.to.collection,
            order.join(", ")
        ));
    }
    out
}

/// The parent's subsets of the new collection, in the new version.
fn subsets_from<'p>(
    program: &'p [StoredType],
    mv: &'p StoredMove,
) -> impl Iterator<Item = (&'p StoredRelation, &'p crate::schema::stored::StoredSubset)> {
    types(program, &mv.from.collection)
        .flat_map(|t| &t.relations)
        .filter_map(move |r| r.subset.as_ref().filter(|s| s.child == mv.to.collection).map(|s| (r, s)))
}

fn types<'p>(program: &'p [StoredType], collection: &'p str) -> impl Iterator<Item = &'p StoredType> {
    program.iter().filter(move |t| t.collection == collection)
}

/// What the new version declares that stops the move.
pub(super) fn program_refusals(program: &[StoredType], mv: &StoredMove, old: &StoredRelation) -> Vec<String> {
    let mut out = Vec::new();
    let owner = types(program, &mv.from.collection);
    if let Some(t) = owner.into_iter().find(|t| t.relations.iter().any(|r| r.field == old.field)) {
        let kept = t.relations.iter().find(|r| r.field == old.field).is_some_and(|r| r.subset.is_some());
        out.push(if kept {
            format!(
                "`{}.{}` would be both the old array and a subset of `{}`: give the subset another name (the old \
                 array stays until it is retired)",
                mv.from.collection, old.field, mv.to.collection
            )
        } else {
            format!(
                "the new `{}` still declares `{}`: remove it from the struct (its elements are `{}` documents now)",
                t.rust_name, old.field, mv.to.rust_type
            )
        });
    }
    if !types(program, &mv.to.collection).any(|t| t.rust_name == mv.to.rust_type) {
        out.push(format!(
            "the file declares the move into `{}` but not the type `{}`",
            mv.to.collection, mv.to.rust_type
        ));
    }
    out
}

/// What the data stops: elements without identity, or one identity twice.
pub(super) fn data_refusals(
    program: &[StoredType],
    mv: &StoredMove,
    old: &StoredRelation,
    c: &MoveCounts,
) -> Vec<String> {
    let at = format!("`{}.{}`", mv.from.collection, old.field);
    let mut out = Vec::new();
    if matches!(old.kind, StoredKind::RefMany { .. }) {
        let parent = types(program, &mv.to.collection).flat_map(|t| &t.fields).find(|f| f.bson == mv.parent_field);
        let optional = parent.is_some_and(|f| crate::schema::indexes::is_option(&f.rust_type));
        if c.orphans > 0 && !optional {
            out.push(format!(
                "{} `{}` document(s) are named by no array of {at}, so they get no parent reference, and `{}::{}` \
                 is not an `Option`: make it `Option<..>`, or name them first",
                c.orphans, mv.to.collection, mv.to.rust_type, mv.parent_field
            ));
        }
        if c.duplicate_keys > 0 {
            out.push(format!(
                "{} id(s) are held more than once across {at} (by two parents, or twice by one): a `{}` gets \
                 one parent reference; make each id appear once first",
                c.duplicate_keys, mv.to.rust_type
            ));
        }
        return out;
    }
    if c.without_key > 0 {
        out.push(format!(
            "{} element(s) of {at} have no `{}` (absent or null), which becomes the new document's `_id`: give every element one \
             first (each moves exactly once only by it)",
            c.without_key, mv.key
        ));
    }
    if c.duplicate_keys > 0 {
        out.push(format!(
            "{} `{}` value(s) are held by more than one element of {at}: each would become one document; make them \
             unique first",
            c.duplicate_keys, mv.key
        ));
    }
    let id_type = types(program, &mv.to.collection)
        .flat_map(|t| &t.fields)
        .find(|f| f.bson == "_id")
        .map(|f| f.rust_type.clone());
    if let Some(id_type) = id_type {
        let wrong: Vec<String> = c.key_types.iter().filter(|t| !holds(&id_type, t)).map(|t| format!("`{t}`")).collect();
        let wrong = wrong.join(", ");
        let one = matches!(old.kind, StoredKind::Embed { many: false, .. });
        if one && !wrong.is_empty() {
            out.push(format!(
                "parents holding {at} have `_id`s of type {wrong}, which become the new documents' `_id`, where \
                 `{}`'s `_id` is `{id_type}`: declare it so",
                mv.to.rust_type
            ));
        } else if !wrong.is_empty() {
            out.push(format!(
                "elements of {at} hold `{}` of type {wrong} where `{}`'s `_id` is `{id_type}`",
                mv.key, mv.to.rust_type
            ));
        }
    }
    out
}

/// Whether a Rust `_id` type reads a stored BSON type (unknown types do).
fn holds(rust: &str, bson: &str) -> bool {
    let last = rust.rsplit("::").next().unwrap_or(rust).replace(' ', "");
    match last.as_str() {
        "ObjectId" => bson == "objectId",
        "String" => bson == "string",
        "i32" | "i64" | "u32" | "u64" | "isize" | "usize" | "i16" | "u16" | "i8" | "u8" => {
            matches!(bson, "int" | "long")
        }
        "Uuid" => bson == "binData",
        _ => true,
    }
}

/// The derived data that goes with the elements.
pub(super) fn derived(program: &[StoredType], mv: &StoredMove, old: &StoredRelation) -> Vec<String> {
    if matches!(old.kind, StoredKind::RefMany { .. }) {
        let mut out = vec![format!(
            "each id in `{}.{}` becomes the parent reference `{}.{}` of the document it names; an id naming \
             none gets nothing, and leaves the array when its parent is next written",
            mv.from.collection, old.field, mv.to.collection, mv.parent_field
        )];
        for (r, _) in subsets_from(program, mv) {
            out.push(format!(
                "subset `{}.{}` is built from `{}` once every parent reference is there (the change's backfill)",
                mv.from.collection, r.field, mv.to.collection
            ));
        }
        return out;
    }
    let mut out = Vec::new();
    // An element's field is `comments[].x`; one document's `address.x`.
    let path = match old.kind {
        StoredKind::Embed { many: false, .. } => old.field.clone(),
        _ => format!("{}[]", old.field),
    };
    let new_copies: Vec<&str> =
        types(program, &mv.to.collection).flat_map(|t| &t.copies).map(|c| c.field.as_str()).collect();
    for r in &old.elements {
        for c in &r.copies {
            let kept = if new_copies.contains(&c.field.as_str()) {
                format!("kept by `{}`'s `#[denormalize]`", mv.to.rust_type)
            } else {
                format!(
                    "`{}` declares no copy `{}`: it moves as a plain field and is no longer kept",
                    mv.to.rust_type, c.field
                )
            };
            out.push(format!(
                "copy `{}.{}` ← `{}.{}` becomes `{}.{}`, {kept}",
                path, c.field, c.source, c.source_field, mv.to.collection, c.field
            ));
        }
        out.push(format!(
            "reference `{}.{}` → `{}` (on_delete {}) becomes `{}.{}`",
            path, r.field, r.target, r.on_delete, mv.to.collection, r.field
        ));
    }
    for (r, _) in subsets_from(program, mv) {
        out.push(format!(
            "subset `{}.{}` is built from `{}` once the elements are there (the change's backfill)",
            mv.from.collection, r.field, mv.to.collection
        ));
    }
    out.push(format!(
        "the version records of copies inside `{}` (each parent's `_docrel.copies`) go when the array is retired",
        old.field
    ));
    out
}

/// What a reader of the old version sees.
pub(super) fn readers(mv: &StoredMove, old: &StoredRelation) -> Vec<String> {
    if matches!(old.kind, StoredKind::RefMany { .. }) {
        return vec![
            format!(
                "during the move: `{}.{}` as before, with the id of every `{}` the new version gives a parent in it",
                mv.from.collection, old.field, mv.to.rust_type
            ),
            format!(
                "after it is retired: `{}.{}` no longer changes; with `--drop-old` it is gone, so old readers must \
                 be gone first",
                mv.from.collection, old.field
            ),
        ];
    }
    vec![
        format!(
            "during the move: `{}.{}` as before, with every element the new version writes in it",
            mv.from.collection, old.field
        ),
        format!(
            "after it is retired: `{}.{}` no longer changes; with `--drop-old` it is gone, so old readers must be \
             gone first",
            mv.from.collection, old.field
        ),
    ]
}

/// The old bound keeps limiting writes while both shapes are kept.
pub(super) fn bounds(mv: &StoredMove, old: &StoredRelation) -> Vec<String> {
    match old.kind {
        StoredKind::Embed { many: false, .. } => vec![format!(
            "`{}.{}` is one document while both shapes are kept: a second `{}` of one parent, or one whose `_id` \
             is not its parent's, is refused in either version until the old field is retired",
            mv.from.collection, old.field, mv.to.rust_type
        )],
        StoredKind::Embed { max: Some(max), .. } | StoredKind::RefMany { max: Some(max), .. } => vec![format!(
            "`{}.{}` keeps its bound of {max} while both shapes are kept: a parent's element {} is refused in either \
             version until the old array is retired",
            mv.from.collection,
            old.field,
            u64::from(max) + 1
        )],
        _ => Vec::new(),
    }
}

/// Whether a type of `collection` in `types` requires its field `field`
/// (no `Option`): the old version's, as stored, for a move out (a parent
/// keeps its one document while the old shape is kept); the new
/// version's, for a move back (every parent needs its document).
pub(super) fn required(types: &[StoredType], collection: &str, field: &str) -> bool {
    let owner = types.iter().filter(|t| t.collection == collection);
    owner
        .flat_map(|t| &t.fields)
        .find(|f| f.bson == field)
        .is_some_and(|f| !crate::schema::indexes::is_option(&f.rust_type))
}
