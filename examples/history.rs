//! The randomized history checker of issue 12 as a runner, for big runs:
//!
//! ```sh
//! MONGODB_URI=mongodb://... cargo run --example history -- --seeds 20 --ops 2000 --faults
//! ```
//!
//! Flags (each also read from its `DOCREL_HISTORY_*` variable, see
//! `tests/history/mod.rs`): `--seeds 20 | 7,42 | 10..20`, `--ops N`,
//! `--workers N`, `--faults` / `--no-faults`, `--sync` / `--no-sync`,
//! `--skip KindA,KindB`, `--serial-txn` (transactions alone; concurrent is the
//! default), `--processes 1|2`, `--skew-ms N`, `--include-gaps` (the kinds
//! of `KNOWN_GAPS` too: defects of issue 27 not fixed yet), `--shrink N`,
//! `--shrink-secs N`, `--trace`, `--list` (the operation kinds, the gaps
//! and the ones known to break an invariant today), `--strict-records` (a
//! copy without a version record breaks the contract), `--rule-change` /
//! `--no-rule-change` (a copy rule that only the stored schema declares is
//! added online while the workers write, and in some histories removed;
//! on by default). Exits 1 when a history breaks the contract.

#[path = "../tests/history/mod.rs"]
mod history;

use history::plan::OpKind;
use std::time::Duration;

fn usage() -> ! {
    eprintln!(
        "usage: cargo run --example history -- [--seeds 20|7,42|10..20] [--ops N] [--workers N] [--faults|--no-faults] \
         [--sync|--no-sync] [--skip KindA,KindB] [--serial-txn] [--processes 1|2] [--skew-ms N] [--include-gaps] [--strict-records] [--rule-change|--no-rule-change] [--shrink N] [--shrink-secs N] [--trace] [--list]"
    );
    std::process::exit(2)
}

fn settings() -> Result<history::Settings, String> {
    let mut s = history::Settings::from_env()?;
    // A big run shrinks longer than CI by default.
    if std::env::var("DOCREL_HISTORY_SHRINK_SECS").is_err() {
        s.shrink_time = Duration::from_secs(300);
    }
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        let number = |name: &str, v: String| v.parse::<usize>().map_err(|e| format!("{name} {v}: {e}"));
        match arg.as_str() {
            "--seeds" => s.seeds = history::parse_seeds(&value("--seeds")?)?,
            "--ops" => s.ops = number("--ops", value("--ops")?)?,
            "--workers" => s.workers = number("--workers", value("--workers")?)?,
            "--faults" => s.faults = Some(true),
            "--no-faults" => s.faults = Some(false),
            "--sync" => s.deferred = Some(true),
            "--no-sync" => s.deferred = Some(false),
            "--skip" => s.skip = history::parse_skip(&value("--skip")?)?,
            "--concurrent-txn" => s.serial_transactions = false,
            "--serial-txn" => s.serial_transactions = true,
            "--processes" => s.processes = number("--processes", value("--processes")?)?,
            "--skew-ms" => {
                let v = value("--skew-ms")?;
                s.skew_ms = v.parse().map_err(|e| format!("--skew-ms {v}: {e}"))?
            }
            "--include-gaps" => s.include_gaps = true,
            "--strict-records" => s.strict_records = true,
            "--rule-change" => s.rule_change = true,
            "--no-rule-change" => s.rule_change = false,
            "--shrink" => s.shrink_attempts = number("--shrink", value("--shrink")?)?,
            "--shrink-secs" => {
                s.shrink_time = Duration::from_secs(number("--shrink-secs", value("--shrink-secs")?)? as u64)
            }
            "--trace" => std::env::set_var("DOCREL_HISTORY_TRACE", "1"),
            "--list" => {
                for k in OpKind::ALL {
                    let known = match (k.is_gap(), k.known_issue()) {
                        (true, Some(w)) => format!("  [gap, left out unless --include-gaps: {w}]"),
                        (false, Some(w)) => format!("  [known: {w}]"),
                        _ => String::new(),
                    };
                    println!("{:<20} {}{known}", format!("{k:?}"), k.about());
                }
                std::process::exit(0)
            }
            "-h" | "--help" => usage(),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(s)
}

fn main() {
    if history::process::is_child() {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime");
        if let Err(e) = rt.block_on(history::process::child_main()) {
            eprintln!("error in the second process: {e}");
            std::process::exit(2)
        }
        return;
    }
    let s = match settings() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            usage()
        }
    };
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a tokio runtime");
    let reports = match rt.block_on(history::run_all(&s)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2)
        }
    };
    let failures = history::failures(&reports);
    println!("\n{} of {} histories broke the contract", failures.len(), reports.len());
    for f in &failures {
        println!("{f}");
    }
    if !failures.is_empty() {
        std::process::exit(1)
    }
}
