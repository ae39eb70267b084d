//! Reads of a collection holding the other side of an array made two-way
//! before that side is built (issue 39, N:M one-way → two-way): until the
//! change's build completes it holds only the links written since its
//! inverse was published, while the arrays on the first side hold every
//! link. A program declaring the side reads it from them: each document's
//! side becomes the ids of the documents whose array names it (a
//! `$lookup` on the server, through the multikey index on that array).

use crate::schema::stored::BuildingInverse;
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::options::FindOptions;

/// A field of the read collection that is not built yet, and how it is
/// read: the ids of the documents of `from_collection` whose `from_field`
/// names each document (the other side of an array made two-way), or the
/// one such document itself (`one`: a one-to-one document moved back into
/// its parent, without its `_id` and parent reference).
#[derive(Debug, Clone)]
pub(crate) struct Unbuilt {
    pub(crate) side: BuildingInverse,
    pub(crate) one: bool,
}

/// Whether `d` (a filter or a sort) names `field` or a path inside it, at
/// any depth (`$and`, `$or`, `$elemMatch`, ..).
fn names(d: &BsonDoc, field: &str) -> bool {
    d.iter().any(|(k, v)| {
        k == field
            || k.strip_prefix(field).is_some_and(|rest| rest.starts_with('.'))
            || match v {
                Bson::Document(inner) => names(inner, field),
                Bson::Array(items) => items.iter().any(|i| i.as_document().is_some_and(|d| names(d, field))),
                _ => false,
            }
    })
}

/// The aggregate of a find of `filter` with `options` whose `sides` are
/// read from the arrays. The filter, order, skip and limit run before the
/// `$lookup`s unless they name a side.
pub(crate) fn find(sides: &[Unbuilt], filter: BsonDoc, options: &FindOptions) -> Vec<BsonDoc> {
    let sort = options.sort.clone().unwrap_or_default();
    let late = names_any(sides, &filter) || names_any(sides, &sort);
    let mut narrowing = Vec::new();
    if !filter.is_empty() {
        narrowing.push(doc! {"$match": filter});
    }
    if !sort.is_empty() {
        narrowing.push(doc! {"$sort": sort});
    }
    if let Some(k) = options.skip.filter(|&k| k > 0) {
        narrowing.push(doc! {"$skip": i64::try_from(k).unwrap_or(i64::MAX)});
    }
    if let Some(l) = options.limit.filter(|&l| l != 0) {
        narrowing.push(doc! {"$limit": l.abs()});
    }
    let mut out = if late { Vec::new() } else { std::mem::take(&mut narrowing) };
    for Unbuilt { side: b, one } in sides {
        let side = format!("${}", b.field);
        out.push(doc! {"$lookup": {"from": &b.from_collection, "localField": "_id", "foreignField": &b.from_field, "as": &b.field}});
        if *one {
            let first = doc! {"$cond": [{"$gt": [{"$size": &side}, 0]}, {"$arrayElemAt": [&side, 0]}, "$$REMOVE"]};
            out.push(doc! {"$set": {&b.field: first}});
            let (id, parent, records) =
                (format!("{}._id", b.field), format!("{}.{}", b.field, b.from_field), format!("{}._docrel", b.field));
            out.push(doc! {"$project": {id: 0, parent: 0, records: 0}});
            continue;
        }
        // `$map` rather than `"$side._id"`: a path through an array is what
        // some servers answer wrongly inside expressions.
        out.push(doc! {"$set": {&b.field: {"$map": {"input": &side, "as": "d", "in": "$$d._id"}}}});
    }
    out.extend(narrowing);
    if let Some(p) = options.projection.as_ref().filter(|p| !p.is_empty()) {
        out.push(doc! {"$project": p.clone()});
    }
    out
}

/// Whether `d` (a filter or a sort) names one of `sides`: a count that
/// does not counts the same as stored.
pub(crate) fn names_any(sides: &[Unbuilt], d: &BsonDoc) -> bool {
    sides.iter().any(|b| names(d, &b.side.field))
}

/// The aggregate counting the documents of `filter`.
pub(crate) fn count(sides: &[Unbuilt], filter: BsonDoc) -> Vec<BsonDoc> {
    let mut stages = find(sides, filter, &FindOptions::default());
    stages.push(doc! {"$count": "n"});
    stages
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side() -> Unbuilt {
        let side = BuildingInverse {
            collection: "courses".into(),
            field: "students".into(),
            from_collection: "students".into(),
            from_field: "courses".into(),
        };
        Unbuilt { side, one: false }
    }

    #[test]
    fn a_read_narrows_before_the_lookup_unless_it_names_the_side() {
        let options = FindOptions::builder().sort(doc! {"title": 1}).limit(2).build();
        let early = find(&[side()], doc! {"title": "a"}, &options);
        assert_eq!(early[0], doc! {"$match": {"title": "a"}});
        assert!(early[3].contains_key("$lookup") && early[4].contains_key("$set"));
        let late = find(&[side()], doc! {"$or": [{"students": 1}, {"title": "b"}]}, &options);
        assert!(late[0].contains_key("$lookup"));
        assert_eq!(late[2], doc! {"$match": {"$or": [{"students": 1}, {"title": "b"}]}});
        assert!(names(&doc! {"students.0": {"$exists": true}}, "students"));
        assert!(!names(&doc! {"students_count": 1}, "students"));
    }
}
