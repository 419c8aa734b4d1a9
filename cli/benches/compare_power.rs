//! How often a planted change is found, and an unchanged case misjudged: `sparkles
//! compare` (two processes a side, interleaved rounds, the nulls), the harness's
//! `--save-baseline` then `--baseline` paired (the saved executable run again beside the
//! new one) and unpaired (`--baseline-unpaired`: two runs one after the other, held to the
//! between-run noise the suite's history teaches), and criterion 0.8's save-then-compare
//! (a criterion bench with the same cases and work), on a repository whose second commit
//! plants +1%, +2% and +5% more work in three cases and leaves four alone, two of them
//! cases whose speed depends on the process they run in (a std `HashMap`'s seed, and a
//! model of layout luck: testdata/support/planted_repo.rs), beside `--hog N` busy loops (1).
//!
//! `cargo bench -p sparkles-cli --bench compare_power [-- --runs N --time SECS --hog N
//! --ways compare,paired,unpaired,criterion]`:
//! N runs (10) of each way; SECS of measurement per case (2), which compare and the paired
//! `--baseline` spend over their rounds (the paired run after its own timing pass of half
//! that) and the unpaired ways split between their two runs (criterion with a 0.2 s
//! warm-up on top). Prints, per case, how many runs called it a regression, an
//! improvement, or inside the noise, and each way's wall time a run.

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

/// The unchanged cases besides `CASES`' unchanged one (planted_repo's `spin/same` and its
/// luck cases).
const ALSO: [&str; 3] = ["spin/same", "luck/hashmap_insert_5k", "luck/layout_model"];

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

/// The criterion bench `crit` of commit `rev`, built by `cargo bench --no-run` in a worktree
/// of `repo` into `target`, copied to `kept` (each commit's build has the same file name).
fn criterion_exe(repo: &Path, rev: &str, trees: &Path, target: &Path, kept: &Path) -> PathBuf {
    let tree = trees.join(rev);
    planted_repo::git(
        repo,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            &tree.to_string_lossy(),
            rev,
        ],
    );
    let out = Command::new("cargo")
        .args([
            "bench",
            "--no-run",
            "--bench",
            "crit",
            "--message-format=json-render-diagnostics",
        ])
        .current_dir(&tree)
        .env("CARGO_TARGET_DIR", target)
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "the criterion bench at {rev} does not build: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let built = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "crit")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .expect("cargo names the criterion bench's executable");
    std::fs::copy(&built, kept).expect("the criterion bench is copied");
    kept.to_path_buf()
}

/// Criterion's verdict per case in a `--baseline` run's output: the case from the line
/// that starts with its name (`spin/plus1pct   time: [...]`), the verdict from the
/// explanation below it.
fn criterion_verdicts(stdout: &str) -> Vec<(String, &'static str)> {
    let names: Vec<&str> = CASES.iter().map(|c| c.0).chain(ALSO).collect();
    let mut case = None;
    let mut verdicts = Vec::new();
    for line in stdout.lines() {
        if let Some(first) = line.split_whitespace().next() {
            if !line.starts_with(char::is_whitespace) && names.contains(&first) {
                case = Some(first.to_string());
            }
        }
        let verdict = if line.contains("Performance has regressed.") {
            "regression"
        } else if line.contains("Performance has improved.") {
            "improvement"
        } else if line.contains("No change in performance detected.")
            || line.contains("Change within noise threshold.")
        {
            "inside_the_noise"
        } else {
            continue;
        };
        if let Some(c) = case.take() {
            verdicts.push((c, verdict));
        }
    }
    verdicts
}

fn main() {
    let runs = support::number_arg("--runs", 10.0) as u32;
    let seconds = support::number_arg("--time", 2.0);
    let hogs = support::number_arg("--hog", 1.0) as usize;
    // Which ways run (all by default); compare runs once regardless, to build both sides.
    let args: Vec<String> = std::env::args().collect();
    let ways: Vec<String> = args
        .iter()
        .position(|a| a == "--ways")
        .and_then(|i| args.get(i + 1))
        .map_or("compare,paired,unpaired,criterion", String::as_str)
        .split(',')
        .map(String::from)
        .collect();
    let way = |name: &str| ways.iter().any(|w| w == name);
    // Busy loops beside every way, for the whole bench: a CI runner's neighbours.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let hog_threads: Vec<_> = (0..hogs)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut x = 1u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    for i in 0..100_000u64 {
                        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
                    }
                }
                x
            })
        })
        .collect();
    let repo = tempfile::tempdir().expect("a scratch folder");
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let harness = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench-integration");
    planted_repo::repository_with_criterion(repo.path(), &harness, &CASES, false);
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
    let compare_runs = if way("compare") { runs } else { 1 };
    for run in 0..compare_runs {
        let start = Instant::now();
        // Only the sparkles bench: the criterion one does not serve.
        let out = Command::new(&exe)
            .args(["compare", "--base", "HEAD~1", "--bench", "planted"])
            .args(["--time", &time, "--json"])
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
        if !way("compare") {
            break;
        }
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
    // Equal time: each of the two runs gets half a case's time, in 5 ms samples; the paired
    // `--baseline` then measures both executables side by side for a case's time.
    let samples = ((seconds / 2.0) / 0.005).max(6.0) as u32;
    eprintln!("compare_power: compare's verdicts: {paired:?}");
    let baseline_way = |extra: &[&str], folder: &str| -> (Tally, f64) {
        let mut tally = Tally::new();
        let mut wall = 0.0;
        // One folder for all runs: the history the unpaired way learns its noise from.
        let out_dir = repo.path().join(folder);
        std::fs::create_dir_all(&out_dir).expect("the baseline runs' folder");
        for run in 0..runs {
            let start = Instant::now();
            let rows = out_dir.join("rows.jsonl");
            for (exe, flags) in [
                (bin(&base_rev), vec!["--save-baseline", "power"]),
                (
                    bin(&variant_rev),
                    [&["--baseline", "power"][..], extra].concat(),
                ),
            ] {
                let out = Command::new(&exe)
                    .args(["--bench", "--samples", &samples.to_string(), "--no-report"])
                    .args(["--paired-time", &time])
                    .args(&flags)
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
            wall += start.elapsed().as_secs_f64();
            for row in json_lines(&rows) {
                let verdict = row["comparison"]["verdict"].as_str().unwrap_or("?");
                count(&mut tally, row["case"].as_str().unwrap_or("?"), verdict);
            }
        }
        (tally, wall)
    };
    let (saved_paired, saved_paired_wall) = if way("paired") {
        baseline_way(&[], "paired-runs")
    } else {
        Default::default()
    };
    eprintln!("compare_power: paired --baseline's verdicts: {saved_paired:?}");
    let (saved, saved_wall) = if way("unpaired") {
        baseline_way(&["--baseline-unpaired"], "unpaired-runs")
    } else {
        Default::default()
    };
    eprintln!("compare_power: unpaired --baseline's verdicts: {saved:?}");
    // Criterion: the base saves baseline `power`, the variant compares with it, each given
    // half a case's time; a fresh criterion folder a run, read and written by both.
    let crit: Vec<PathBuf> = if !way("criterion") {
        Vec::new()
    } else {
        vec![
            criterion_exe(
                repo.path(),
                &base_rev,
                scratch.path(),
                &target,
                &scratch.path().join("crit-base"),
            ),
            criterion_exe(
                repo.path(),
                &variant_rev,
                scratch.path(),
                &target,
                &scratch.path().join("crit-variant"),
            ),
        ]
    };
    let home = scratch.path().join("criterion");
    let half = format!("{}", seconds / 2.0);
    let mut criterion = Tally::new();
    let mut criterion_wall = 0.0;
    for run in 0..if way("criterion") { runs } else { 0 } {
        let _ = std::fs::remove_dir_all(&home);
        let start = Instant::now();
        let mut said = String::new();
        for (exe, flags) in crit
            .iter()
            .zip([["--save-baseline", "power"], ["--baseline", "power"]])
        {
            let out = Command::new(exe)
                .args(["--bench", "--noplot", "--color", "never"])
                .args(["--measurement-time", &half, "--warm-up-time", "0.2"])
                .args(flags)
                .env("CRITERION_HOME", &home)
                .current_dir(repo.path())
                .output()
                .expect("the criterion bench runs");
            assert!(
                out.status.success(),
                "run {run}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            said = String::from_utf8_lossy(&out.stdout).into_owned();
        }
        criterion_wall += start.elapsed().as_secs_f64();
        let verdicts = criterion_verdicts(&said);
        if verdicts.len() != CASES.len() + 1 {
            eprintln!("compare_power: run {run}: criterion gave {verdicts:?} in:\n{said}");
        }
        for (case, verdict) in verdicts {
            count(&mut criterion, &case, verdict);
        }
    }
    eprintln!("compare_power: criterion's verdicts: {criterion:?}");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for h in hog_threads {
        let _ = h.join();
    }
    println!(
        "{runs} runs each, {seconds} s of measurement per case, beside {hogs} busy loop(s) (compare: {:.1} s a run; paired --baseline: {:.1} s; unpaired --baseline: {:.1} s; criterion: {:.1} s)",
        paired_wall / f64::from(runs),
        saved_paired_wall / f64::from(runs),
        saved_wall / f64::from(runs),
        criterion_wall / f64::from(runs)
    );
    println!(
        "{:<24} {:<22} {:>10} {:>11} {:>16}",
        "case", "way", "regression", "improvement", "inside the noise"
    );
    for case in CASES.iter().map(|c| c.0).chain(ALSO) {
        for (way, tally) in [
            ("compare", &paired),
            ("paired --baseline", &saved_paired),
            ("unpaired --baseline", &saved),
            ("criterion", &criterion),
        ] {
            let t = tally.get(case).cloned().unwrap_or_default();
            let n = |k: &str| t.get(k).copied().unwrap_or(0);
            println!(
                "{case:<24} {way:<22} {:>10} {:>11} {:>16}",
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
