//! `schema diff` and `schema apply`: a program's schema (the JSON its
//! `docrel::schema::export()` gives) against the one stored in the
//! database, then published with the backfills its new rules need.

use super::console::{json, Console, Exit, Shutdown};
use crate::admin::change::Progress;
use crate::error::{Error, Misuse, Result};
use crate::schema::stored::{self, read_export, Exported};
use mongodb::Database;
use std::io::Write;
use std::path::Path;

/// A program's exported schema: its types and moves.
fn program(file: &Path) -> Result<Exported> {
    let bad = |message: String| Error::Invalid {
        what: Misuse::File,
        message: format!("{}: {message}; write it with `docrel::schema::export()`", file.display()),
    };
    let text = std::fs::read_to_string(file).map_err(|e| bad(e.to_string()))?;
    read_export(&text).map_err(bad)
}

/// `schema diff --file F`: what publishing would change; exit 1 when
/// anything would (or a rule conflicts).
pub(super) async fn diff(
    db: &Database,
    file: &Path,
    probe: bool,
    console: &mut Console,
    as_json: bool,
) -> Result<Exit> {
    let preview = crate::admin::change_preview::preview_export(db, &program(file)?, probe).await?;
    console.say(&if as_json { json(&preview) } else { preview.to_text() });
    Ok(if preview.has_changes() { Exit::Found } else { Exit::Ok })
}

/// `schema apply --file F [--remove C.F]...`: changes the stored schema
/// online (see [`crate::admin::change`]): publishes the program's rules
/// (refused, with nothing written, when one conflicts) and removes the
/// named ones, waits for every process to follow them, backfills and
/// verifies. Stopped, it resumes when run again. Exit 0 when complete.
pub(super) async fn apply(
    db: &Database,
    args: &Apply<'_>,
    console: &mut Console,
    shutdown: &mut Shutdown<'_>,
    as_json: bool,
) -> Result<Exit> {
    let exported = program(args.file)?;
    if !exported.moves.is_empty() {
        // The moves first, to `switched`; then the change backfills what
        // the new version derives from the moved data, and verifies.
        let lease = args.wait.map_or_else(|| crate::schema::lease_for(db), |w| w / 2);
        let reports = run_moves(db, (&exported, args.offline), lease, console, shutdown, as_json).await?;
        if !reports.iter().all(crate::admin::moves::MoveReport::switched) {
            console.say(&if as_json { json(&reports) } else { "moves stopped: run it again to resume".to_owned() });
            return Ok(Exit::Interrupted);
        }
    }
    let mut change = crate::admin::change::change(db, exported.types);
    for removal in args.remove {
        let Some((collection, field)) = removal.split_once('.') else {
            return Err(Error::Invalid {
                what: Misuse::Schema,
                message: format!("`--remove {removal}`: name the rule as COLLECTION.FIELD (`products.part_name`)"),
            });
        };
        change = change.remove(collection, field);
    }
    if let Some(wait) = args.wait {
        change = change.wait(wait);
    }
    let bar = (console.bar && !as_json).then(super::verify::progress_bar);
    let report = {
        let (err, quiet, drawn) = (&mut console.err, as_json, bar.clone());
        let say = |step: &str| match &drawn {
            _ if quiet => {}
            Some(bar) => bar.println(step),
            None => {
                let _ = writeln!(err, "{step}");
            }
        };
        let draw = |p: &Progress<'_>| draw(bar.as_ref(), p);
        change.run_with(|| shutdown.requested(), say, draw).await
    };
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let report = report?;
    if as_json {
        console.say(&json(&report));
    } else {
        console.say(&format!(
            "change {}: {} ({} value(s) backfilled, {} stale after)",
            report.id, report.state, report.fixed, report.stale
        ));
    }
    Ok(if report.complete() { Exit::Ok } else { Exit::Interrupted })
}

/// Draws how far a long step of the change has come on the bar, when
/// there is one (a terminal, without `--json`); the steps' lines say the
/// rest.
fn draw(bar: Option<&indicatif::ProgressBar>, progress: &Progress<'_>) {
    let Some(bar) = bar else { return };
    match progress {
        Progress::Waiting { waited_ms, total_ms } => {
            if bar.length() != Some(*total_ms) {
                let style = indicatif::ProgressStyle::with_template("{msg:32!} [{bar:30.cyan/blue}] {eta} left")
                    .map(|s| s.progress_chars("=> "));
                bar.set_style(style.unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()));
                bar.set_message("waiting for every process");
                bar.set_length(*total_ms);
            }
            bar.set_position(*waited_ms);
        }
        Progress::Backfill { collection, done, total } => {
            if !bar.message().ends_with(collection) {
                bar.set_style(super::verify::progress_bar().style());
                bar.set_message(format!("backfill {collection}"));
                bar.reset();
            }
            bar.set_length(*total);
            bar.set_position(*done);
        }
    }
}

/// Runs the moves of `exported` to `switched`, with each step said on
/// standard error and the copy drawn as a bar on a terminal (a line per
/// page otherwise); quiet with `--json`.
async fn run_moves(
    db: &Database,
    (exported, offline): (&Exported, bool),
    lease: std::time::Duration,
    console: &mut Console,
    shutdown: &mut Shutdown<'_>,
    quiet: bool,
) -> Result<Vec<crate::admin::moves::MoveReport>> {
    use crate::admin::moves::Step;
    let bar = (console.bar && !quiet).then(super::verify::progress_bar);
    let (err, drawn) = (&mut console.err, bar.clone());
    let say = |step: &Step| match (step, &drawn) {
        _ if quiet => {}
        (Step::Copied(c), Some(bar)) => {
            bar.set_length(c.total_elements);
            bar.set_position(c.elements);
            bar.set_message(c.label.clone());
        }
        (_, Some(bar)) => bar.println(step.to_string()),
        (_, None) => {
            let _ = writeln!(err, "{step}");
        }
    };
    let (types, moves, stop) = (&exported.types, &exported.moves, || shutdown.requested());
    let ran = match offline {
        true => crate::admin::moves::run_offline(db, types, moves, lease, stop, say).await,
        false => crate::admin::moves::run(db, types, moves, lease, stop, say).await,
    };
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    ran
}

/// `schema status`: the moves in progress and the lease holders. Exit 0.
pub(super) async fn status(
    db: &Database,
    lease: std::time::Duration,
    console: &mut Console,
    as_json: bool,
) -> Result<Exit> {
    let status = crate::admin::moves::status(db, lease).await?;
    console.say(&if as_json { json(&status) } else { status.to_text() });
    Ok(Exit::Ok)
}

/// `schema retire --file F [--drop-old]`: retires the old shape of every
/// switched move the program declares. Exit 0 when all are complete.
pub(super) async fn retire(
    db: &Database,
    file: &Path,
    drop_old: bool,
    lease: std::time::Duration,
    console: &mut Console,
    shutdown: &mut Shutdown<'_>,
    as_json: bool,
) -> Result<Exit> {
    let exported = program(file)?;
    let one_way = !crate::schema::stored::inverses::retirements(&stored::load(db).await?, &exported.types).is_empty()
        || !stored::load_retiring(db).await?.is_empty();
    if exported.moves.is_empty() && !one_way {
        return Err(Error::Invalid {
            what: Misuse::Schema,
            message: format!(
                "{}: the program declares no move (`moved_from`) and makes no two-way array one-way; nothing to retire",
                file.display()
            ),
        });
    }
    let reports = {
        let (err, quiet) = (&mut console.err, as_json);
        let mut say = |step: &str| {
            if !quiet {
                let _ = writeln!(err, "{step}");
            }
        };
        let mut reports =
            crate::admin::moves::retire(db, &exported.moves, drop_old, lease, || shutdown.requested(), &mut say)
                .await?;
        let types = &exported.types;
        let stop = || shutdown.requested();
        reports.extend(crate::admin::moves::make_one_way(db, types, drop_old, lease, stop, &mut say).await?);
        reports
    };
    let complete = reports.iter().all(|r| r.complete);
    if as_json {
        console.say(&json(&reports));
    } else {
        for r in &reports {
            let state = if r.complete { "complete" } else { "stopped: run it again to resume" };
            console.say(&format!("{}: {state} ({} parent(s) without the old array)", r.label, r.dropped));
        }
    }
    Ok(if complete { Exit::Ok } else { Exit::Interrupted })
}

/// The arguments of `schema apply`.
pub(super) struct Apply<'a> {
    pub(super) file: &'a Path,
    pub(super) remove: &'a [String],
    pub(super) wait: Option<std::time::Duration>,
    /// `--offline`: the moves run as [`crate::admin::moves::run_offline`].
    pub(super) offline: bool,
}
