//! The rules of thumb as pure functions: from what was measured and what
//! the schema declares to findings. Nothing here reads the database, so
//! each rule is tested on figures alone (`rules/tests.rs`).

use super::declared::BalanceSide;
use super::report::{ArrayStat, BalanceStat, CopyUse, Finding, IndexStat, Missing, RefStat, Severity, SizeStat};
use super::text::group;
use crate::error::MAX_DOCUMENT_BYTES;
use crate::schema::pattern::Pattern;

#[cfg(test)]
mod tests;

/// Rule 5 says nothing below this many writes of a source: too little to judge.
pub const MIN_WRITES: u64 = 10;

/// The bound and rule 3 on one measured array. `acknowledged` is the
/// `allow_..` key that silenced rule 3 at compile time: the data may still
/// pass the threshold, and the finding says the key was given.
pub(super) fn array(stat: &ArrayStat, acknowledged: Option<&str>) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(bound(stat));
    out.extend(rule_3(stat, acknowledged));
    out
}

/// An array over its declared bound (an error), or with a p99 within 10% of it.
fn bound(a: &ArrayStat) -> Option<Finding> {
    let max = a.declared_max?;
    let (lengths, coverage) = (&a.lengths, a.coverage.describe());
    let field = format!("{}.{}", a.collection, a.field);
    if lengths.max > max {
        return Some(Finding {
            severity: Severity::Error,
            rule: "bound".into(),
            field,
            figure: format!(
                "{} elements in the longest array, over its declared max of {max} (p99 {}; {coverage})",
                lengths.max, lengths.p99
            ),
            fix: format!(
                "something wrote past the bound outside docrel: trim those arrays, and call `ensure_validator` so \
                 the server refuses such writes ({} {})",
                a.kind.array_word(),
                a.field
            ),
        });
    }
    // A subset is full by design: it keeps the newest `max`.
    if a.kind == Pattern::Subset || max <= 1 {
        return None;
    }
    let near = lengths.p99 * 10 >= max * 9;
    let movable = matches!(a.kind, Pattern::Embed | Pattern::ChildReferences);
    let outgrowing = movable && lengths.max * 10 >= max * 8;
    if !near && !outgrowing {
        return None;
    }
    let fix = if a.kind == Pattern::Embed {
        migration(a)
    } else if a.kind == Pattern::ChildReferences {
        migration_of_ids(a)
    } else {
        "the arrays are close to their bound, where writes start to fail with EmbedFull: raise `max` if they really \
         grow so (export the new version's schema, then `docrel schema apply --file v2.json` publishes the new \
         bound online), or move the elements out (a child collection with a `#[parent_ref]`, a subset of the \
         newest, or buckets)"
            .to_owned()
    };
    Some(Finding {
        severity: if near { Severity::Warning } else { Severity::Info },
        rule: "bound".into(),
        field,
        figure: format!("p99 {} of a declared max of {max} (max {}; {coverage})", lengths.p99, lengths.max),
        fix,
    })
}

/// The move of an embedded array that outgrows its bound into a collection
/// of its own, as attributes and commands.
fn migration(a: &ArrayStat) -> String {
    let (ty, field) = (&a.rust.0, &a.rust.1);
    let parent = ty.to_lowercase();
    format!(
        "the arrays grow toward their bound, where writes fail with EmbedFull: move the elements into a \
         collection of their own, online. Declare the element as a document, `#[document(collection = \
         \"{field}\", moved_from = {ty}::{field})] struct ..` with `#[parent_ref(to = {ty})] {parent}: ..`, \
         remove `{field}` from `{ty}` (or keep the newest as `#[embed(max = 10, subset_of = ..)]` under another \
         name), export the new version's schema, then `docrel schema diff --file v2.json` and `docrel schema \
         apply --file v2.json`. If they only grow a little past it, raise `max` instead: the same two commands \
         publish the new bound online"
    )
}

/// The move of an array of child ids that outgrows its bound into a
/// parent reference on the children, as attributes and commands.
fn migration_of_ids(a: &ArrayStat) -> String {
    let (ty, field) = (&a.rust.0, &a.rust.1);
    let parent = ty.to_lowercase();
    format!(
        "the arrays of ids grow toward their bound, where writes fail with EmbedFull: let each child refer to its \
         parent instead (one-to-squillions), online. On the children's type declare `#[document(.., moved_from = \
         {ty}::{field})]` with `#[parent_ref(to = {ty})] {parent}: Option<..>`, remove `{field}` from `{ty}`, export \
         the new version's schema, then `docrel schema diff --file v2.json` and `docrel schema apply --file \
         v2.json`. If they only grow a little past it, raise `max` instead: the same two commands publish the new \
         bound online"
    )
}

/// Rule 3: an array longer than its threshold (the field's `warn_above`,
/// or the default of its kind).
fn rule_3(a: &ArrayStat, acknowledged: Option<&str>) -> Option<Finding> {
    let threshold = a.threshold?;
    if a.lengths.max <= threshold {
        return None;
    }
    let (what, fix) = if a.kind.holds_references() {
        (
            "references: a few thousand at most",
            "reference the parent from the children instead (`#[parent_ref]`, one-to-squillions) and read them with \
             `children_of`: `moved_from = Parent::field` on the children's type moves the ids online (`docrel \
             schema diff` / `apply`)",
        )
    } else {
        (
            "embedded: a couple of hundred at most",
            "move the elements into their own collection with a `#[parent_ref]` to this one, and keep only the \
             newest here as a subset (`#[embed(max = N, subset_of = ..)]`), or bucket them",
        )
    };
    let acknowledged = acknowledged.map(|key| format!(", acknowledged with `{key}`")).unwrap_or_default();
    Some(Finding {
        severity: Severity::Warning,
        rule: "rule 3".into(),
        field: format!("{}.{}", a.collection, a.field),
        figure: format!(
            "max {} elements, p99 {}, p50 {}; rule 3 for {what} ({threshold}){acknowledged}; {}",
            a.lengths.max,
            a.lengths.p99,
            a.lengths.p50,
            a.coverage.describe()
        ),
        fix: fix.into(),
    })
}

/// 16 MiB: the largest document at a quarter of the limit (a warning) or half (an error).
pub(super) fn size(s: &SizeStat) -> Option<Finding> {
    let fraction = s.bytes.max as f64 / MAX_DOCUMENT_BYTES as f64;
    if fraction < 0.25 {
        return None;
    }
    let field = s.largest_field.as_ref().map_or_else(|| "?".to_owned(), |(f, _)| f.clone());
    Some(Finding {
        severity: if fraction >= 0.5 { Severity::Error } else { Severity::Warning },
        rule: "16 MiB".into(),
        field: format!("{}.{field}", s.collection),
        figure: format!(
            "largest document {} bytes ({:.0}% of 16 MiB), p99 {} bytes; its largest field is `{field}` ({})",
            group(s.bytes.max),
            fraction * 100.0,
            group(s.bytes.p99),
            s.coverage.describe()
        ),
        fix: format!(
            "move `{field}` out of the document: children with a `#[parent_ref]` (one-to-squillions), a subset of \
             the newest kept in the parent, or buckets; or bound it with `max = N`"
        ),
    })
}

/// Rule 5: a copy whose source is written more often than its holders are
/// read. From the profiler it is a warning; `top` counts writes of any
/// field, so from there it is a hint.
pub(super) fn copy(c: &CopyUse) -> Option<Finding> {
    let (w, r) = (c.writes?, c.reads?);
    if w < MIN_WRITES || w <= r {
        return None;
    }
    let exact = c.measured_from == "profiler";
    let (source, holder, copy, from) = (&c.source, &c.holder, &c.copy, c.writes_from());
    Some(Finding {
        severity: if exact { Severity::Warning } else { Severity::Info },
        rule: "rule 5".into(),
        field: c.copy.clone(),
        figure: format!(
            "`{source}` written {w} times{}, the copies' collection `{holder}` read {r} times (from {from}): the \
             copy costs more writes than it saves reads",
            if exact { format!(" in `{}`", c.fields.join("`, `")) } else { " (any field)".to_owned() }
        ),
        fix: format!(
            "rule 5 denormalizes only what is read much more than written: drop the copy `{copy}` and load \
             `{source}.{}` with the relation's loader, or mark the source field `#[document(write_heavy)]` so the \
             compiler warns about copying it",
            c.fields.join(", ")
        ),
    })
}

/// N:M balance: each side of a two-way pair against its threshold, from
/// the measured lengths; `None` when neither side was measured.
pub(super) fn balance(
    pair: &str,
    sides: &[BalanceSide; 2],
    arrays: &[ArrayStat],
) -> Option<(BalanceStat, Vec<Finding>)> {
    let stat = |s: &BalanceSide| arrays.iter().find(|a| a.collection == s.collection && a.field == s.field);
    if sides.iter().all(|s| stat(s).is_none()) {
        return None;
    }
    let mut findings = Vec::new();
    let mut measured = Vec::new();
    for side in sides {
        let (p99, max) = stat(side).map_or((0, 0), |s| (s.lengths.p99, s.lengths.max));
        if max >= side.threshold {
            let acknowledged = if side.acknowledged { ", acknowledged with `allow_two_way`" } else { "" };
            findings.push(Finding {
                severity: Severity::Warning,
                rule: "balance".into(),
                field: side.label.clone(),
                figure: format!(
                    "up to {max} ids (p99 {p99}) on this side of the two-way N:M `{pair}`; balance: {}{acknowledged}",
                    side.threshold
                ),
                fix: format!(
                    "stop keeping `{}`, online: in the new version declare the other side's array without \
                     `inverse` and remove this field from its type, export its schema and deploy it (its writes \
                     keep both sides until the retirement), then `docrel schema retire --file v2.json --drop-old` \
                     once no process of the old version runs; find these documents from the other side with \
                     `referrers` (through the multikey index)",
                    side.label
                ),
            });
        }
        measured.push((side.label.clone(), side.declared, p99, max));
    }
    Some((BalanceStat { pair: pair.to_owned(), sides: measured }, findings))
}

/// Dangling references, or orphan children of missing parents.
pub(super) fn reference(r: &RefStat) -> Option<Finding> {
    if r.missing_ids == 0 {
        return None;
    }
    let (examples, coverage, target, documents) =
        (r.examples.join(", "), r.coverage.describe(), &r.target, r.documents);
    let (figure, fix) = if r.kind == Missing::Orphans {
        (
            format!(
                "{documents} children of {} missing `{target}` parents (e.g. {examples}; {coverage})",
                r.missing_ids
            ),
            format!(
                "delete the orphans or restore their parents; delete parents through docrel with `on_delete = \
                 cascade` on `{}` so their children go with them",
                r.field
            ),
        )
    } else {
        (
            format!(
                "{} of {} referenced ids do not exist in `{target}`, held by {documents} documents (e.g. {examples}; \
                 {coverage})",
                r.missing_ids, r.ids_checked
            ),
            format!(
                "remove them (`repair` pulls dangling ids from two-way arrays), and declare `on_delete = pull` (or \
                 `cascade`) on `{}` so deletes through docrel clean up",
                r.field
            ),
        )
    };
    Some(Finding {
        severity: Severity::Warning,
        rule: r.kind.to_string(),
        field: format!("{}.{}", r.collection, r.field),
        figure,
        fix,
    })
}

/// What the server has of an index the relationships need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Present {
    /// No index with these keys.
    Missing,
    /// One, unique or not, with its uses where `$indexStats` counts them.
    Found { unique: bool, uses: Option<u64> },
}

/// One needed index: missing (an error when it must be unique), not
/// unique when it must be, never used, or fine.
pub(super) fn index(collection: &str, keys: String, unique: bool, present: Present) -> (IndexStat, Option<Finding>) {
    let finding = |severity, figure: String, fix: String| Finding {
        severity,
        rule: "index".into(),
        field: collection.to_owned(),
        figure,
        fix,
    };
    let (state, uses, found) = match present {
        Present::Missing => {
            let (what, why) = if unique {
                (" (unique)", "; without it concurrent bucket appends or unique fields are not safe")
            } else {
                ("", "")
            };
            let f = finding(
                if unique { Severity::Error } else { Severity::Warning },
                format!("`{keys}`{what} is needed by the declared relationships and missing"),
                format!("create it: `admin indexes apply`, or `ensure_indexes()` on the repository{why}"),
            );
            ("missing", None, Some(f))
        }
        Present::Found { unique: false, .. } if unique => {
            let f = finding(
                Severity::Error,
                format!("`{keys}` exists but is not unique, and must be"),
                "drop it and create it unique (`admin indexes plan` shows the change)".into(),
            );
            ("not unique", None, Some(f))
        }
        Present::Found { uses: Some(0), .. } => {
            let f = finding(
                Severity::Info,
                format!("`{keys}` has not been used since `$indexStats` started counting"),
                "check again after a representative period; if it stays unused, the relationship it serves is not \
                 queried: drop the index (or the relationship)"
                    .into(),
            );
            ("unused", Some(0), Some(f))
        }
        Present::Found { uses, .. } => ("ok", uses, None),
    };
    let stat = IndexStat { collection: collection.to_owned(), keys, unique, state: state.to_owned(), uses };
    (stat, found)
}

/// What `$indexStats` could tell, in words: `tracked` where it counted
/// uses of some index, `untracked` where it did not.
pub(super) fn index_note(tracked: bool, untracked: bool) -> String {
    match (tracked, untracked) {
        (true, false) => "`$indexStats` counts index uses on this server: unused indexes are reported".into(),
        (true, true) => "`$indexStats` counts uses of some indexes only: unused ones are reported where it does".into(),
        (false, true) => "`$indexStats` answers but counts no uses on this server (`accesses.since` is null): unused \
                          indexes cannot be told and are not reported"
            .into(),
        (false, false) => "no index to check with `$indexStats`".into(),
    }
}

/// Worst first, then by field; findings of one field keep their order.
pub(super) fn worst_first(findings: &mut [Finding]) {
    findings.sort_by(|a, b| b.severity.cmp(&a.severity).then_with(|| a.field.cmp(&b.field)));
}
