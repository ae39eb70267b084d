//! Each rule on figures alone, at its edge: no server.

use super::*;
use crate::admin::doctor::report::{Coverage, Distribution};
use crate::schema::document::{EMBED_WARN_ABOVE, REFERENCE_WARN_ABOVE, TWO_WAY_WARN_FROM};
use crate::schema::pattern::Pattern;

fn all(n: u64) -> Coverage {
    Coverage { documents: n, read: n, sampled: false }
}

/// An array of `kind` whose longest holds `max` elements and whose p99 is `p99`.
fn array_stat(kind: Pattern, declared: Option<u64>, threshold: Option<u64>, p99: u64, max: u64) -> ArrayStat {
    let mut lengths = vec![p99; 99];
    lengths.push(max);
    ArrayStat {
        collection: "hosts".into(),
        field: "logmsgs".into(),
        rust: ("Host".into(), "logmsgs".into()),
        kind,
        declared_max: declared,
        threshold,
        coverage: all(100),
        lengths: Distribution::of(lengths, declared.unwrap_or(0)),
        trend: None,
    }
}

fn rules_of(findings: &[Finding]) -> Vec<(&str, Severity)> {
    findings.iter().map(|f| (f.rule.as_str(), f.severity)).collect()
}

#[test]
fn bound_is_an_error_past_max_and_a_warning_from_nine_tenths() {
    let over = array(&array_stat(Pattern::Embed, Some(100), None, 10, 101), None);
    assert_eq!(rules_of(&over), [("bound", Severity::Error)]);
    assert!(over[0].figure.starts_with("101 elements in the longest array, over its declared max of 100"));
    assert!(array(&array_stat(Pattern::ChildReferences, Some(100), None, 10, 79), None).is_empty(), "p99 low");
    let close = array(&array_stat(Pattern::Embed, Some(100), None, 90, 90), None);
    assert_eq!(rules_of(&close), [("bound", Severity::Warning)]);
    // An array of ids there is outgrowing its bound too: an info naming
    // the move of its ids into a parent reference.
    let refs = array(&array_stat(Pattern::ChildReferences, Some(100), None, 89, 89), None);
    assert_eq!(rules_of(&refs), [("bound", Severity::Info)], "p99 under nine tenths");
    assert!(
        refs[0].fix.contains("moved_from = Host::logmsgs") && refs[0].fix.contains("Option<..>"),
        "{}",
        refs[0].fix
    );
    // An embedded array there is outgrowing its bound: an info.
    assert_eq!(
        rules_of(&array(&array_stat(Pattern::Embed, Some(100), None, 89, 89), None)),
        [("bound", Severity::Info)]
    );
    // A subset is full by design.
    assert!(array(&array_stat(Pattern::Subset, Some(100), None, 100, 100), None).is_empty());
}

#[test]
fn rule_3_warns_above_the_threshold_not_at_it() {
    let at = u64::from(EMBED_WARN_ABOVE);
    assert!(array(&array_stat(Pattern::Embed, None, Some(at), at, at), None).is_empty());
    let above = array(&array_stat(Pattern::Embed, None, Some(at), at, at + 1), None);
    assert_eq!(rules_of(&above), [("rule 3", Severity::Warning)]);
    assert!(above[0].figure.contains(&format!("rule 3 for embedded: a couple of hundred at most ({at})")));
    assert!(above[0].fix.contains("subset"));
    let refs = u64::from(REFERENCE_WARN_ABOVE);
    let many = array(&array_stat(Pattern::ChildReferences, None, Some(refs), 1, refs + 1), None);
    assert!(many[0].figure.contains(&format!("references: a few thousand at most ({refs})")), "{}", many[0].figure);
    assert!(many[0].fix.contains("children_of"));
    assert!(array(&array_stat(Pattern::BucketByCount, Some(50), None, 1, 50), None).is_empty(), "no rule 3 on buckets");
}

#[test]
fn rule_3_uses_the_fields_own_threshold() {
    // `warn_above = 50`: the schema carries 50, and 51 is past it.
    let user = array(&array_stat(Pattern::Embed, None, Some(50), 1, 51), None);
    assert_eq!(rules_of(&user), [("rule 3", Severity::Warning)]);
    assert!(user[0].figure.contains("(50)"), "{}", user[0].figure);
    assert!(array(&array_stat(Pattern::Embed, None, Some(50), 1, 50), None).is_empty());
    // `warn_above = 500` raises it above what would pass the default.
    assert!(array(&array_stat(Pattern::Embed, None, Some(500), 1, 250), None).is_empty());
}

#[test]
fn an_acknowledged_rule_3_keeps_its_severity_and_says_so() {
    let found = array(&array_stat(Pattern::Subset, Some(1000), Some(200), 250, 250), Some("allow_large"));
    assert_eq!(rules_of(&found), [("rule 3", Severity::Warning)]);
    assert!(found[0].figure.contains("(200), acknowledged with `allow_large`;"), "{}", found[0].figure);
}

fn size_stat(max: u64) -> SizeStat {
    SizeStat {
        collection: "hosts".into(),
        coverage: all(1),
        bytes: Distribution::of(vec![max], 0),
        largest_id: Some("1".into()),
        largest_field: Some(("logmsgs".into(), max - 100)),
        log2_counts: Vec::new(),
    }
}

#[test]
fn sixteen_mib_warns_from_a_quarter_and_errs_from_half() {
    let quarter = MAX_DOCUMENT_BYTES as u64 / 4;
    assert!(size(&size_stat(quarter - 1)).is_none());
    let warned = size(&size_stat(quarter)).expect("a quarter");
    assert_eq!(
        (warned.rule.as_str(), warned.severity, warned.field.as_str()),
        ("16 MiB", Severity::Warning, "hosts.logmsgs")
    );
    assert!(warned.figure.starts_with("largest document 4,194,304 bytes (25% of 16 MiB)"), "{}", warned.figure);
    assert_eq!(size(&size_stat(2 * quarter)).map(|f| f.severity), Some(Severity::Error));
}

fn copy_use(writes: Option<u64>, reads: Option<u64>, from: &str) -> CopyUse {
    CopyUse {
        source: "parts".into(),
        fields: vec!["name".into()],
        copy: "products.parts[].name".into(),
        holder: "products".into(),
        writes,
        reads,
        measured_from: from.into(),
        writes_by: Default::default(),
    }
}

#[test]
fn rule_5_needs_min_writes_more_than_the_reads() {
    assert!(copy(&copy_use(Some(MIN_WRITES - 1), Some(0), "profiler")).is_none(), "too few to judge");
    assert!(copy(&copy_use(Some(MIN_WRITES), Some(MIN_WRITES), "profiler")).is_none(), "as many reads");
    assert!(copy(&copy_use(None, None, "not measured")).is_none());
    let exact = copy(&copy_use(Some(MIN_WRITES), Some(1), "profiler")).expect("a finding");
    assert_eq!((exact.rule.as_str(), exact.severity), ("rule 5", Severity::Warning));
    assert!(exact.figure.starts_with("`parts` written 10 times in `name`, the copies' collection `products` read 1"));
    let hint = copy(&copy_use(Some(12), Some(0), "top")).expect("a finding");
    assert_eq!(hint.severity, Severity::Info, "`top` counts writes of any field");
    assert!(hint.figure.contains("written 12 times (any field)"));
    assert!(hint.fix.contains("drop the copy `products.parts[].name`"));
}

fn side(collection: &'static str, field: &'static str, acknowledged: bool) -> BalanceSide {
    BalanceSide {
        collection,
        field,
        label: format!("{collection}.{field}"),
        declared: None,
        threshold: u64::from(TWO_WAY_WARN_FROM),
        acknowledged,
    }
}

fn ids(collection: &str, field: &str, max: u64) -> ArrayStat {
    ArrayStat {
        collection: collection.into(),
        field: field.into(),
        ..array_stat(Pattern::ChildReferences, None, None, 1, max)
    }
}

#[test]
fn balance_warns_from_the_threshold() {
    let edge = u64::from(TWO_WAY_WARN_FROM);
    let sides = [side("authors", "books", false), side("books", "authors", true)];
    assert!(balance("p", &sides, &[]).is_none(), "neither side measured");
    let (stat, findings) = balance("p", &sides, &[ids("authors", "books", edge - 1)]).expect("measured");
    assert!(findings.is_empty());
    assert_eq!(stat.sides, [("authors.books".to_owned(), None, 1, edge - 1), ("books.authors".to_owned(), None, 0, 0)]);
    let arrays = [ids("authors", "books", edge), ids("books", "authors", edge)];
    let (_, findings) = balance("p", &sides, &arrays).expect("measured");
    assert_eq!(rules_of(&findings), [("balance", Severity::Warning), ("balance", Severity::Warning)]);
    assert!(findings[0].figure.ends_with(&format!("balance: {edge}")), "{}", findings[0].figure);
    assert!(findings[1].figure.ends_with("acknowledged with `allow_two_way`"), "{}", findings[1].figure);
    assert!(findings[0].fix.contains("stop keeping `authors.books`, online"), "{}", findings[0].fix);
    assert!(findings[0].fix.contains("`docrel schema retire --file v2.json --drop-old`"), "{}", findings[0].fix);
}

fn ref_stat(kind: Missing, missing: u64) -> RefStat {
    RefStat {
        collection: "tasks".into(),
        field: "owner".into(),
        target: "people".into(),
        kind,
        coverage: all(3),
        ids_checked: 2,
        missing_ids: missing,
        documents: missing,
        examples: (0..missing).map(|i| i.to_string()).collect(),
    }
}

#[test]
fn dangling_and_orphans_are_counted_from_one_missing_id() {
    assert!(reference(&ref_stat(Missing::Dangling, 0)).is_none());
    let dangling = reference(&ref_stat(Missing::Dangling, 1)).expect("one missing");
    assert_eq!((dangling.rule.as_str(), dangling.field.as_str()), ("dangling", "tasks.owner"));
    assert!(dangling.figure.starts_with("1 of 2 referenced ids do not exist in `people`"), "{}", dangling.figure);
    let orphans = reference(&ref_stat(Missing::Orphans, 2)).expect("two missing");
    assert_eq!(orphans.rule, "orphans");
    assert!(orphans.figure.starts_with("2 children of 2 missing `people` parents"), "{}", orphans.figure);
    assert!(orphans.fix.contains("`on_delete = cascade` on `owner`"));
}

#[test]
fn indexes_missing_not_unique_unused_or_fine() {
    let state = |unique, present| {
        let (stat, finding) = index("people", "{tasks: 1}".into(), unique, present);
        (stat.state, finding.map(|f| f.severity))
    };
    assert_eq!(state(false, Present::Missing), ("missing".into(), Some(Severity::Warning)));
    assert_eq!(state(true, Present::Missing), ("missing".into(), Some(Severity::Error)));
    let plain = Present::Found { unique: false, uses: None };
    assert_eq!(state(true, plain), ("not unique".into(), Some(Severity::Error)));
    assert_eq!(state(false, plain), ("ok".into(), None));
    assert_eq!(state(false, Present::Found { unique: false, uses: Some(0) }), ("unused".into(), Some(Severity::Info)));
    let (used, none) = index("people", "{tasks: 1}".into(), false, Present::Found { unique: false, uses: Some(3) });
    assert_eq!((used.state.as_str(), used.uses, none), ("ok", Some(3), None));
    assert!(index_note(false, true).contains("`accesses.since` is null"));
}

#[test]
fn findings_go_worst_first_then_by_field() {
    let f = |severity, field: &str| Finding {
        severity,
        rule: "r".into(),
        field: field.into(),
        figure: String::new(),
        fix: String::new(),
    };
    let mut findings = vec![f(Severity::Info, "a"), f(Severity::Warning, "b"), f(Severity::Warning, "a")];
    worst_first(&mut findings);
    let order: Vec<(Severity, &str)> = findings.iter().map(|f| (f.severity, f.field.as_str())).collect();
    assert_eq!(order, [(Severity::Warning, "a"), (Severity::Warning, "b"), (Severity::Info, "a")]);
}

/// An embedded array from four fifths of its bound names the move that
/// takes its elements out, with the attribute and the commands: an info
/// until the p99 reaches nine tenths, then a warning.
#[test]
fn an_embedded_array_outgrowing_its_bound_names_the_migration() {
    assert!(array(&array_stat(Pattern::Embed, Some(100), None, 10, 79), None).is_empty(), "79 %: fine");
    let at_80 = array(&array_stat(Pattern::Embed, Some(100), None, 10, 80), None);
    assert_eq!(rules_of(&at_80), [("bound", Severity::Info)]);
    let fix = &at_80[0].fix;
    assert!(fix.contains("moved_from = Host::logmsgs") && fix.contains("#[parent_ref(to = Host)] host"), "{fix}");
    assert!(fix.contains("docrel schema diff --file v2.json") && fix.contains("docrel schema apply --file v2.json"));
    let at_90 = array(&array_stat(Pattern::Embed, Some(100), None, 90, 95), None);
    assert_eq!(rules_of(&at_90), [("bound", Severity::Warning)]);
    assert!(at_90[0].fix.contains("moved_from = Host::logmsgs"));
}
