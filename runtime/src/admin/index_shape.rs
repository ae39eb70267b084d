//! An index as the index plan compares it: its keys, and the options docrel
//! declares (unique, sparse, TTL, partial filter, collation, text weights and
//! languages), in one form whether it was declared or read back with
//! `listIndexes`.
//!
//! What the server adds is not a difference: the defaults of a collation it
//! fills in (`caseLevel: false`, `version: "57.1"`, ...), a text index's
//! `{_fts: "text", _ftsx: 1}` keys (the text keys, from its weights), its
//! weights of 1 and default languages, and a generated name when none is
//! declared. Numbers compare by value (`5` and `5L` are the same filter).
//! A `simple` collation is no collation: MongoDB 9.0 lists one on every
//! index created without.

use mongodb::bson::{Bson, Document as BsonDoc};
use mongodb::IndexModel;

/// The options compared, in the order they are shown.
const OPTIONS: &[&str] = &[
    "unique",
    "sparse",
    "expireAfterSeconds",
    "partialFilterExpression",
    "collation",
    "weights",
    "default_language",
    "language_override",
    "name",
];

/// An index's keys and compared options.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Shape {
    /// The keys, text keys as `"text"` in name order.
    pub keys: BsonDoc,
    /// The options, as `listIndexes` names them, defaults left out.
    pub options: BsonDoc,
}

impl Shape {
    /// The shape of a model, declared or read back.
    pub(crate) fn of(model: &IndexModel) -> Shape {
        let options = model.options.as_ref().and_then(|o| crate::bson_compat::to_document(o).ok()).unwrap_or_default();
        let weights = options.get_document("weights").ok();
        let keys = text_keys(&model.keys, weights);
        let text: Vec<String> =
            keys.iter().filter(|(_, v)| v.as_str() == Some("text")).map(|(k, _)| k.clone()).collect();
        let mut out = BsonDoc::new();
        for key in OPTIONS {
            let value = match (*key, options.get(*key)) {
                ("unique" | "sparse", Some(Bson::Boolean(false))) => None,
                ("weights", _) if !text.is_empty() => Some(Bson::Document(
                    text.iter().map(|f| (f.clone(), Bson::Int64(weights.map_or(1, |w| number(w.get(f)))))).collect(),
                )),
                ("default_language", v) if !text.is_empty() => Some(v.cloned().unwrap_or_else(|| "english".into())),
                ("language_override", v) if !text.is_empty() => Some(v.cloned().unwrap_or_else(|| "language".into())),
                ("expireAfterSeconds", Some(v)) => Some(Bson::Int64(number(Some(v)))),
                // MongoDB 9.0 lists `{locale: "simple"}` on an index created
                // without a collation, and "simple" is what no collation means
                // on every version: one shape for both, or the plan would drop
                // and build an unchanged index on every start.
                ("collation", Some(Bson::Document(c))) if c.get_str("locale").ok() == Some("simple") => None,
                ("partialFilterExpression" | "collation", Some(v)) => Some(by_value(v)),
                (_, v) => v.cloned(),
            };
            if let Some(v) = value {
                out.insert(*key, v);
            }
        }
        Shape { keys, options: out }
    }

    /// Whether the index is unique.
    pub(crate) fn unique(&self) -> bool {
        self.options.get_bool("unique").unwrap_or(false)
    }

    /// How `present` differs from this declared shape, one phrase per
    /// option; empty when it is as declared.
    pub(crate) fn differences(&self, present: &Shape) -> Vec<String> {
        let mut out = Vec::new();
        for key in OPTIONS {
            let (declared, found) = (self.options.get(*key), present.options.get(*key));
            let same = match (*key, declared, found) {
                // A name is compared only when declared.
                ("name", None, _) => true,
                // The server fills in the rest of a collation.
                ("collation", Some(Bson::Document(d)), Some(Bson::Document(p))) => {
                    d.iter().all(|(k, v)| p.get(k) == Some(v))
                }
                _ => declared == found,
            };
            if !same {
                out.push(format!("{} {} (declared {})", option_name(key), shown(found), shown(declared)));
            }
        }
        out
    }

    /// The options other than `unique`, as the plan shows them:
    /// `sparse, expire_after 3600s, partial {active: true}`.
    pub(crate) fn show_options(&self) -> String {
        let text = self.keys.values().any(|v| v.as_str() == Some("text"));
        let mut out = Vec::new();
        for (key, value) in &self.options {
            match (key.as_str(), value) {
                ("unique", _) => {}
                ("sparse", _) => out.push("sparse".to_owned()),
                ("expireAfterSeconds", v) => out.push(format!("expire_after {}s", number(Some(v)))),
                ("partialFilterExpression", v) => out.push(format!("partial {v}")),
                ("weights", Bson::Document(w)) if text && w.values().all(|v| number(Some(v)) == 1) => {}
                ("default_language", v) if text && v.as_str() == Some("english") => {}
                ("language_override", v) if text && v.as_str() == Some("language") => {}
                (key, v) => out.push(format!("{} {v}", option_name(key))),
            }
        }
        out.join(", ")
    }
}

/// The keys with a text index's `{_fts: "text", _ftsx: 1}` (as the server
/// lists it) or its declared text keys replaced by the text keys in name
/// order.
fn text_keys(keys: &BsonDoc, weights: Option<&BsonDoc>) -> BsonDoc {
    let mut text: Vec<String> =
        keys.iter().filter(|(_, v)| v.as_str() == Some("text")).map(|(k, _)| k.clone()).collect();
    if keys.contains_key("_fts") {
        text = weights.map(|w| w.keys().cloned().collect()).unwrap_or_default();
    }
    text.sort();
    let mut out = BsonDoc::new();
    for (k, v) in keys {
        let is_text = k == "_fts" || k == "_ftsx" || v.as_str() == Some("text");
        if !is_text {
            out.insert(k.clone(), v.clone());
        } else if !text.is_empty() {
            for t in text.drain(..) {
                out.insert(t, "text");
            }
        }
    }
    out
}

/// A number as `i64` (1 when absent or not a number).
fn number(v: Option<&Bson>) -> i64 {
    match v {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        Some(Bson::Double(n)) => *n as i64,
        _ => 1,
    }
}

/// A document whose numbers are typed by value, not as written: through
/// relaxed extended JSON and back.
fn by_value(v: &Bson) -> Bson {
    crate::bson_compat::from_extjson(crate::bson_compat::relaxed_json(v)).unwrap_or_else(|_| v.clone())
}

/// The attribute's name of an option.
fn option_name(key: &str) -> &str {
    match key {
        "expireAfterSeconds" => "expire_after",
        "partialFilterExpression" => "partial",
        other => other,
    }
}

fn shown(v: Option<&Bson>) -> String {
    v.map_or_else(|| "none".to_owned(), ToString::to_string)
}

#[cfg(test)]
mod tests {
    use super::Shape;
    use mongodb::bson::{doc, Document as BsonDoc};
    use mongodb::IndexModel;

    fn model(keys: BsonDoc, options: BsonDoc) -> IndexModel {
        let mut raw = options;
        raw.insert("key", keys);
        crate::bson_compat::from_document(raw).expect("an index model")
    }

    /// A text index as declared and as MongoDB lists it are the same shape;
    /// another weight is a difference.
    #[test]
    fn text_indexes_compare_through_the_servers_form() {
        let declared =
            Shape::of(&model(doc! {"tenant": 1, "title": "text", "body": "text"}, doc! {"weights": {"title": 10}}));
        let listed = Shape::of(&model(
            doc! {"tenant": 1, "_fts": "text", "_ftsx": 1},
            doc! {"name": "tenant_1_title_text_body_text", "weights": {"body": 1, "title": 10},
            "default_language": "english", "language_override": "language", "textIndexVersion": 3},
        ));
        assert_eq!(declared.keys, doc! {"tenant": 1, "body": "text", "title": "text"});
        assert!(declared.differences(&listed).is_empty(), "{:?}", declared.differences(&listed));
        assert_eq!(declared.show_options(), "weights { \"body\": 1, \"title\": 10 }");
        let other = Shape::of(&model(
            doc! {"tenant": 1, "_fts": "text", "_ftsx": 1},
            doc! {"weights": {"body": 1, "title": 5}},
        ));
        assert_eq!(
            declared.differences(&other),
            ["weights { \"body\": 1, \"title\": 5 } (declared { \"body\": 1, \"title\": 10 })"]
        );
    }

    /// MongoDB 9.0's `listIndexes` shows `collation: {locale: "simple"}` on
    /// an index created without one: that is no collation, so no difference
    /// from an index declared without, and nothing to show.
    #[test]
    fn a_simple_collation_is_no_collation() {
        let declared = Shape::of(&model(doc! {"name": 1}, doc! {"unique": true}));
        let listed = Shape::of(&model(
            doc! {"name": 1},
            doc! {"v": 2, "name": "name_1", "unique": true, "collation": {"locale": "simple"}},
        ));
        assert_eq!(listed.options, doc! {"unique": true, "name": "name_1"}, "no collation left");
        assert!(declared.differences(&listed).is_empty(), "{:?}", declared.differences(&listed));
        assert_eq!(listed.show_options(), "name \"name_1\"");
        let declared_simple =
            Shape::of(&model(doc! {"name": 1}, doc! {"unique": true, "collation": {"locale": "simple"}}));
        assert_eq!(declared_simple, declared, "declaring `simple` is declaring none");
        // Another collation is still one.
        let french = Shape::of(&model(doc! {"name": 1}, doc! {"unique": true, "collation": {"locale": "fr"}}));
        assert_eq!(french.differences(&listed), ["collation none (declared { \"locale\": \"fr\" })"]);
        assert_eq!(declared.differences(&french), ["collation { \"locale\": \"fr\" } (declared none)"]);
    }

    /// The server fills in a collation's defaults; numbers compare by value.
    #[test]
    fn filled_in_defaults_and_number_types_are_no_difference() {
        let declared = Shape::of(&model(
            doc! {"name": 1},
            doc! {"collation": {"locale": "fr", "strength": 2}, "partialFilterExpression": {"qty": {"$gt": 5_i64}},
            "expireAfterSeconds": 60},
        ));
        let listed = Shape::of(&model(
            doc! {"name": 1},
            doc! {"name": "name_1", "collation": {"locale": "fr", "strength": 2, "caseLevel": false, "version": "57.1"},
            "partialFilterExpression": {"qty": {"$gt": 5}}, "expireAfterSeconds": 60_i64},
        ));
        assert!(declared.differences(&listed).is_empty(), "{:?}", declared.differences(&listed));
        let plain = Shape::of(&model(doc! {"name": 1}, doc! {}));
        assert_eq!(plain.differences(&listed).len(), 3, "{:?}", plain.differences(&listed));
        assert_eq!(
            declared.differences(&plain)[0],
            "expire_after none (declared 60)",
            "{:?}",
            declared.differences(&plain)
        );
    }
}
