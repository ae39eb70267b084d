//! The `verify` and `repair` commands: a [`Run`] of every job of derived
//! data, with progress, and its report as text or JSON.

use super::console::{json, Console, Exit, Shutdown};
use crate::admin::checks::{Job, Run, RunReport};
use crate::error::Result;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::Write;
use std::time::{Duration, Instant};

/// `verify`: exit 1 when anything is wrong.
pub(super) async fn verify(
    run: Run<'_>,
    console: &mut Console,
    shutdown: &mut Shutdown<'_>,
    as_json: bool,
) -> Result<Exit> {
    let report = drive(run, console, shutdown, "verify").await?;
    show_run(console, &report, as_json, "verify");
    Ok(if report.interrupted {
        Exit::Interrupted
    } else if report.found() > 0 {
        Exit::Found
    } else {
        Exit::Ok
    })
}

/// `repair`: exit 1 when it leaves a problem (a dry run: when it found one).
pub(super) async fn repair(
    run: Run<'_>,
    dry_run: bool,
    console: &mut Console,
    shutdown: &mut Shutdown<'_>,
    as_json: bool,
) -> Result<Exit> {
    let report = drive(run, console, shutdown, if dry_run { "repair (dry run)" } else { "repair" }).await?;
    show_run(console, &report, as_json, "repair");
    Ok(if report.interrupted {
        Exit::Interrupted
    } else if (dry_run && report.found() > 0) || report.unfixable() > 0 {
        Exit::Found
    } else {
        Exit::Ok
    })
}

/// Runs a verify or repair with progress: a bar that knows its total and
/// ETA on a terminal, a line per batch otherwise.
async fn drive(run: Run<'_>, console: &mut Console, shutdown: &mut Shutdown<'_>, what: &str) -> Result<RunReport> {
    if let Some(saved) = run.saved().await?.filter(|_| what == "repair") {
        console.note(&format!("{what}: resuming the checkpoint saved before ({saved}); `--restart` starts over"));
    }
    let bar = console.bar.then(progress_bar);
    // The rate of this run (a resumed one starts past zero), for the ETA.
    let mut first: Option<(Instant, u64)> = None;
    let mut last_line: Option<(Instant, u64, String)> = None;
    let err = &mut console.err;
    let progress_bar = bar.clone();
    let result = run
        .run(
            || shutdown.requested(),
            move |job: &Job, p: &RunReport| {
                let (t0, done0) = *first.get_or_insert((Instant::now(), p.done));
                if let Some(bar) = &progress_bar {
                    bar.set_length(p.total);
                    bar.set_position(p.done);
                    bar.set_message(job.name.clone());
                } else if last_line.as_ref().is_none_or(|(t, done, last)| {
                    // A line per job, every 2 s, and at the end: enough for a log.
                    *done != p.done && (*last != job.name || t.elapsed() >= Duration::from_secs(2) || p.done >= p.total)
                }) {
                    last_line = Some((Instant::now(), p.done, job.name.clone()));
                    let eta = if p.done > done0 && p.total > p.done {
                        let per = t0.elapsed().as_secs_f64() / (p.done - done0) as f64;
                        format!(", ETA {:.1} s", per * (p.total - p.done) as f64)
                    } else {
                        String::new()
                    };
                    let _ = writeln!(
                        err,
                        "{what}: {}: {}/{} documents, {} found, {} fixed{eta}",
                        job.name,
                        p.done,
                        p.total,
                        p.found(),
                        p.fixed()
                    );
                    let _ = err.flush();
                }
            },
        )
        .await;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    result
}

/// A bar on standard error that knows its total and ETA.
pub(super) fn progress_bar() -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    let style =
        ProgressStyle::with_template("{msg:32!} [{bar:30.cyan/blue}] {pos}/{len} documents · {per_sec} · ETA {eta}")
            .map(|s| s.progress_chars("=> "))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar
}

fn show_run(console: &mut Console, report: &RunReport, as_json: bool, what: &str) {
    if as_json {
        console.say(&json(report));
        return;
    }
    let mut text = String::new();
    if let Some(r) = &report.resumed {
        text.push_str(&format!("resumed: {r}\n"));
    }
    for j in &report.jobs {
        let r = &j.report;
        text.push_str(&format!(
            "{:<8} {:<48} scanned {:>6}  found {:>4}  fixed {:>4}{}\n",
            j.kind,
            j.name,
            r.scanned,
            r.found(),
            r.fixed,
            if r.unfixable > 0 { format!("  cannot fix {}", r.unfixable) } else { String::new() }
        ));
        for p in &r.problems {
            text.push_str(&format!("         - {p}\n"));
        }
    }
    text.push_str(&format!(
        "{what}: {}/{} documents read, {} problems found, {} fixed{}{}\n",
        report.done,
        report.total,
        report.found(),
        report.fixed(),
        // Each check counts what it sees; a repair runs them in order, and
        // one fix (a stale copy rewritten, with the summaries carrying it)
        // clears what several checks found, so it may count fewer.
        if report.dry_run {
            " (dry run: nothing written). Each check counts what it found; a repair may fix fewer, since one fix \
             clears what several checks found (a stale copy rewritten rebuilds the summaries carrying it)"
        } else {
            ""
        },
        if report.interrupted {
            ". Interrupted: the checkpoint is saved; run the same command again to resume"
        } else {
            ""
        }
    ));
    console.say(&text);
}
