//! The docrel guide as rustdoc. The pages are the mdBook's own
//! (`docs/guide/src/`, read them with `mdbook build docs/guide` or
//! `scripts/guide`); here each page is the documentation of one module, so
//! `cargo test --doc -p docrel-guide` compiles every snippet against the
//! current crate and runs it against the server of `MONGODB_URI`
//! (`scripts/test` starts one). `build.rs` expands the pages' `{{#include}}`s
//! of the examples' code and collects the stored-document JSON each page
//! shows into [`shown`], which the page's test compares with what the server
//! holds ([`assert_stored`]).
//!
//! Links between pages are checked by `tests/links.rs`.

use docrel::bson::{Bson, Document as BsonDoc};
use docrel::mongodb::Database;
use serde_json::Value;

/// The stored documents the pages show, one constant per
/// `<!-- stored: NAME -->` JSON block.
pub mod shown {
    include!(concat!(env!("OUT_DIR"), "/shown.rs"));
}

macro_rules! pages {
    ($($(#[$meta:meta])* $name:ident = $file:literal;)*) => {
        $(
            $(#[$meta])*
            #[doc = include_str!(concat!(env!("OUT_DIR"), "/pages/", $file))]
            pub mod $name {}
        )*
    };
}

pages! {
    introduction = "introduction.md";
    choosing = "choosing.md";
    embed = "patterns/embed.md";
    child_references = "patterns/child-references.md";
    parent_references = "patterns/parent-references.md";
    two_way = "patterns/two-way.md";
    many_to_many = "patterns/many-to-many.md";
    denormalize_many_to_one = "patterns/denormalize-many-to-one.md";
    denormalize_one_to_many = "patterns/denormalize-one-to-many.md";
    subset = "patterns/subset.md";
    bucket = "patterns/bucket.md";
    references_in_elements = "patterns/references-in-elements.md";
    loading = "loading.md";
    queries = "queries.md";
    consistency = "consistency.md";
    operations = "operations.md";
    web_service = "web-service.md";
    testing = "testing.md";
    services = "services.md";
    migrations = "migrations.md";
    coming_from = "coming-from.md";
}

/// The string a page's JSON uses for a value the reader should not read
/// literally (a clock-based version): it matches any stored value.
pub const ANY: &str = "…";

/// Reads the one document of `collection` matching `filter` with the raw
/// driver and checks that it is the JSON a page shows (relaxed Extended
/// JSON, keys in any order, `"…"` matching any value).
///
/// # Panics
/// When the document is missing or differs: the panic prints what the
/// server holds, ready to paste into the page.
pub async fn assert_stored(db: &Database, collection: &str, filter: BsonDoc, shown: &str) -> docrel::Result<()> {
    let stored = db
        .collection::<BsonDoc>(collection)
        .find_one(filter.clone())
        .await
        .map_err(|e| docrel::Error::driver("find", collection, e))?;
    let Some(stored) = stored else {
        panic!("no document of `{collection}` matches {filter}");
    };
    let actual = Bson::Document(stored).into_relaxed_extjson();
    let expected: Value = serde_json::from_str(shown).unwrap_or_else(|e| panic!("the page's JSON does not parse: {e}"));
    if !matches(&expected, &actual) {
        panic!(
            "the page shows\n{}\nbut `{collection}` holds\n{}",
            shown.trim_end(),
            serde_json::to_string_pretty(&actual).unwrap_or_default()
        );
    }
    Ok(())
}

/// `expected` equals `actual`, where the string [`ANY`] matches anything.
fn matches(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::String(s), _) if s == ANY => true,
        (Value::Object(e), Value::Object(a)) => {
            e.len() == a.len() && e.iter().all(|(k, v)| a.get(k).is_some_and(|w| matches(v, w)))
        }
        (Value::Array(e), Value::Array(a)) => e.len() == a.len() && e.iter().zip(a).all(|(v, w)| matches(v, w)),
        (Value::Number(e), Value::Number(a)) => e == a || e.as_f64() == a.as_f64(),
        _ => expected == actual,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn any_matches_anything_and_keys_may_come_in_any_order() {
        assert!(matches(&json!({"a": 1, "b": "…"}), &json!({"b": {"x": 2}, "a": 1})));
        assert!(!matches(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
        assert!(!matches(&json!([1, 2]), &json!([2, 1])));
        assert!(matches(&json!(1.0), &json!(1)));
    }
}
