//! `sparkles history` over a long history: 10,000 runs of a 50-case suite (smoke mode,
//! `cargo test`: 100 runs), each run's line as the harness writes it (its environment
//! record with the machine probe, each case's median, interval and six metrics), the
//! medians stepping 20% at one run in ten cases so that change points are found. Goal:
//! under 1 s for the JSON of every case. Printed: the file's size and its growth per run.
//!
//! - `history/json`: `sparkles history --history-dir DIR --format json`, output discarded.
//! - `history/table`: the same as the table.

#[path = "../../testdata/support/skip.rs"]
mod skip;

use std::collections::BTreeMap;

use clap::Parser;
use sparkles_bench::history::{self, CaseRun, Run};
use sparkles_bench::{HarnessArgs, Suite};

mod support;

const CASES: usize = 50;

fn main() {
    let args = HarnessArgs::parse();
    let measuring = args.bench && !args.list;
    let runs = if measuring { 10_000 } else { 100 };
    let dir = sparkles_bench::output::out_dir(args.out_dir.as_deref())
        .join("bench-data")
        .join(format!("history-{runs}x{CASES}"));
    let path = history::path(&dir, "big");
    if !path.is_file() {
        let _ = std::fs::remove_dir_all(&dir);
        let mut environment = sparkles_bench::environment::Environment::current("big");
        environment.machine_probe =
            sparkles_bench::machine_probe::MachineProbe::of(vec![2000.0; 32]);
        let mut text = Vec::new();
        let mut x = 1u64;
        for r in 0..runs {
            environment.unix_time = 1_700_000_000 + r as u64 * 600;
            let id = (r as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            environment.git_commit = Some(format!(
                "{id:016x}{:016x}{:08x}",
                id.rotate_left(17),
                id >> 32
            ));
            let cases = (0..CASES)
                .map(|c| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let noise = 1.0 + ((x >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 0.04;
                    let step = if c % 5 == 0 && r >= runs / 2 {
                        1.2
                    } else {
                        1.0
                    };
                    let median = (1000.0 + 37.0 * c as f64) * noise * step;
                    let metrics: BTreeMap<String, f64> = [
                        "rusage.user_ns",
                        "rusage.system_ns",
                        "rusage.max_rss_bytes",
                        "rusage.minor_faults",
                        "io.read_bytes",
                        "io.syscalls",
                    ]
                    .iter()
                    .enumerate()
                    .map(|(i, m)| (m.to_string(), median * (i + 1) as f64))
                    .collect();
                    CaseRun {
                        case: format!("group{}/case_{c}", c / 10),
                        median,
                        ci_low: Some(median * 0.98),
                        ci_high: Some(median * 1.02),
                        samples: 32,
                        less_wait: Some(history::LessWait {
                            p10: median * 0.98,
                            ci_low: None,
                            ci_high: None,
                            median: median * 0.99,
                        }),
                        null_pct: None,
                        side_by_side: None,
                        metrics,
                    }
                })
                .collect();
            let run = Run {
                schema: history::RUN_SCHEMA.to_string(),
                suite: "big".to_string(),
                commit: environment.git_commit.clone(),
                dirty: Some(false),
                branch: Some("main".to_string()),
                time: environment.unix_time,
                environment: environment.clone(),
                cases,
                source: None,
            };
            text.extend(serde_json::to_vec(&run).unwrap_or_default());
            text.push(b'\n');
        }
        std::fs::create_dir_all(&dir).unwrap_or_default();
        if let Err(e) = std::fs::write(&path, &text) {
            eprintln!("history: {}: {e}", path.display());
        }
    }
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    println!(
        "history: {} ({runs} runs of {CASES} cases): {:.1} MB, {:.1} KB a run ({} bytes a case a run)",
        path.display(),
        size as f64 / 1e6,
        size as f64 / runs as f64 / 1e3,
        size / (runs * CASES) as u64
    );
    let mut suite = Suite::new("history");
    suite.default_samples(3);
    let sparkles = env!("CARGO_BIN_EXE_sparkles").to_string();
    let d = dir.display().to_string();
    suite.group("history", |g| {
        for format in ["json", "table"] {
            let (s, d) = (sparkles.clone(), d.clone());
            g.case(format, move |b| {
                b.try_iter(|| {
                    support::shell(&format!(
                        "'{s}' history --history-dir '{d}' --format {format}"
                    ))
                })
            });
        }
    });
    let outcome = sparkles_bench::run_or_exit(suite, &args);
    if let Some(ns) = outcome.median("history/json") {
        println!(
            "history/json: {:.0} ms for {runs} runs of {CASES} cases (goal: under 1 s)",
            ns / 1e6
        );
    }
    std::process::exit(if outcome.all_ok() { 0 } else { 1 });
}
