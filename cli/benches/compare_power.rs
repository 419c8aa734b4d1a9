//! How often a planted change is found, and an unchanged case misjudged: `sparkles
//! compare` (three processes, interleaved rounds, the null) against the harness's own
//! `--save-baseline` then `--baseline` (two runs one after the other), at equal time per
//! case, on a repository whose second commit plants +1%, +2% and +5% more work in three
//! cases and leaves two alone (testdata/support/planted_repo.rs).
//!
//! `cargo bench -p sparkles-cli --bench compare_power [-- --runs N --time SECS]`: N runs
//! (10) of each way; SECS of measurement per case (2), which compare spends over its
//! rounds and the baseline way splits between its two runs. Prints, per case, how many
//! runs called it a regression, an improvement, or inside the noise, and the wall time.

#[path = "../../testdata/support/planted_repo.rs"]
mod planted_repo;
#[path = "../../testdata/support/skip.rs"]
mod skip;
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const CASES: [(&str, u64, u64); 4] = [
    ("spin/unchanged", 40_000, 40_000),
    ("spin/plus1pct", 40_000, 40_400),
    ("spin/plus2pct", 40_000, 40_800),
    ("spin/plus5pct", 40_000, 42_000),
];

/// Verdicts per case over the runs.
type Tally = BTreeMap<String, BTreeMap<String, u32>>;

fn count(tally: &mut Tally, case: &str, verdict: &str) {
    *tally
        .entry(case.to_string())
        .or_default()
        .entry(verdict.to_string())
        .or_default() += 1;
}

fn json_lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn main() {
    let runs = support::number_arg("--runs", 10.0) as u32;
    let seconds = support::number_arg("--time", 2.0);
    let repo = tempfile::tempdir().expect("a scratch folder");
    let harness = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench-integration");
    planted_repo::repository(repo.path(), &harness, &CASES, false);
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_sparkles"));
    let target = exe
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .expect("the target folder");
    let time = format!("{seconds}s");
    let json = repo.path().join("compare.jsonl");
    let mut paired = Tally::new();
    let mut paired_wall = 0.0;
    for run in 0..runs {
        let start = Instant::now();
        let out = Command::new(&exe)
            .args(["compare", "--base", "HEAD~1", "--time", &time, "--json"])
            .arg(&json)
            .current_dir(repo.path())
            .env("CARGO_TARGET_DIR", &target)
            .output()
            .expect("sparkles compare runs");
        if !out.status.success() {
            eprintln!("{}", String::from_utf8_lossy(&out.stderr));
            panic!("sparkles compare failed on run {run}");
        }
        paired_wall += start.elapsed().as_secs_f64();
        for row in json_lines(&json) {
            count(
                &mut paired,
                row["case"].as_str().unwrap_or("?"),
                row["verdict"].as_str().unwrap_or("?"),
            );
        }
    }
    // The executables compare built, one per side.
    let base_rev = planted_repo::git(repo.path(), &["rev-parse", "HEAD~1"]);
    let variant_rev = planted_repo::git(repo.path(), &["rev-parse", "HEAD"]);
    let bin = |rev: &str| {
        target
            .join("sparkles/compare/bin")
            .join(rev)
            .join("planted")
    };
    // Equal time: each of the two runs gets half a case's time, in 5 ms samples.
    let samples = ((seconds / 2.0) / 0.005).max(6.0) as u32;
    let mut saved = Tally::new();
    let mut saved_wall = 0.0;
    let out_dir = repo.path().join("baseline-runs");
    std::fs::create_dir_all(&out_dir).expect("the baseline runs' folder");
    eprintln!("compare_power: compare's verdicts: {paired:?}");
    for run in 0..runs {
        let start = Instant::now();
        let rows = out_dir.join("rows.jsonl");
        for (exe, flags) in [
            (bin(&base_rev), ["--save-baseline", "power"]),
            (bin(&variant_rev), ["--baseline", "power"]),
        ] {
            let out = Command::new(&exe)
                .args(["--bench", "--samples", &samples.to_string(), "--no-report"])
                .args(flags)
                .arg("--out-dir")
                .arg(&out_dir)
                .arg("--bench-json")
                .arg(&rows)
                .current_dir(repo.path())
                .output()
                .expect("the bench runs");
            assert!(
                out.status.success(),
                "run {run}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        saved_wall += start.elapsed().as_secs_f64();
        for row in json_lines(&rows) {
            let verdict = row["comparison"]["verdict"].as_str().unwrap_or("?");
            count(&mut saved, row["case"].as_str().unwrap_or("?"), verdict);
        }
    }
    println!(
        "{runs} runs each, {seconds} s of measurement per case (compare: {:.1} s a run; save-then-compare: {:.1} s a run)",
        paired_wall / f64::from(runs),
        saved_wall / f64::from(runs)
    );
    println!(
        "{:<16} {:<22} {:>10} {:>11} {:>16}",
        "case", "way", "regression", "improvement", "inside the noise"
    );
    for (case, _, _) in CASES.iter().chain([("spin/same", 0, 0)].iter()) {
        for (way, tally) in [("compare", &paired), ("save, then compare", &saved)] {
            let t = tally.get(*case).cloned().unwrap_or_default();
            let n = |k: &str| t.get(k).copied().unwrap_or(0);
            println!(
                "{case:<16} {way:<22} {:>10} {:>11} {:>16}",
                n("regression"),
                n("improvement"),
                n("inside_the_noise")
            );
        }
    }
    for rev in [&base_rev, &variant_rev] {
        let _ = std::fs::remove_dir_all(target.join("sparkles/revs").join(rev));
    }
}
