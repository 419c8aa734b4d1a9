//! The history over commits end to end: a git repository of 12 commits, the 7th of which
//! makes one case 30% slower; a `--bench` run at each commit (this test binary run again
//! in the repository, as `cargo bench` runs a suite there) appends to the history, and
//! `sparkles history` names that commit as the case's one change point and finds none in
//! the case that did not change; the last run's report draws the trend. And the
//! `--bench-format` exports, each checked by the reader it is for: BMF against Bencher's
//! published JSON schema (by ajv), github-action-benchmark's custom JSON by the action's
//! own zod schema and its cargo tool's regex run under node.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/browser.rs"]
mod browser;
#[path = "../../testdata/support/planted_repo.rs"]
mod planted_repo;
#[path = "../../testdata/support/skip.rs"]
mod skip;
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::sparkles;

/// Where the child run reads its repository's work (rounds of the hash).
const WORK_FILE: &str = "work.txt";
/// The child's harness arguments, tab-separated.
const ARGS_ENV: &str = "SPARKLES_HISTORY_TEST_ARGS";

/// One test's bench runs at a time: two at once on a 2-core machine make each other's
/// noise.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// An ordinary body: `n` rounds of FNV-1a over 256 bytes (what a user's case might be;
/// not the machine probe's loop).
fn hash_rounds(n: u64) -> u64 {
    let data: Vec<u8> = (0..=255u8).collect();
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for _ in 0..n {
        for &b in std::hint::black_box(&data) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// Threads that keep every CPU busy until dropped: a shared machine's other work.
struct Hogs {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Hogs {
    fn start(n: usize) -> Hogs {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let threads = (0..n)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 1u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        for _ in 0..10_000 {
                            x = std::hint::black_box(x.rotate_left(5) ^ 0x9e37_79b9);
                        }
                    }
                })
            })
            .collect();
        Hogs { stop, threads }
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Whether this kernel says a thread's run-queue wait (what the timing pass takes out of
/// each sample).
fn schedstat() -> bool {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .is_ok_and(|s| s.split_whitespace().count() == 3)
}

/// The suite a run at a commit measures: `steady` the same work at every commit,
/// `regressed` the work the checkout's work.txt says (read in the repository: the
/// current directory).
#[test]
#[ignore = "the child of the history tests: a bench run in their repository"]
fn history_child() {
    let Ok(args) = std::env::var(ARGS_ENV) else {
        return;
    };
    let work: u64 = std::fs::read_to_string(WORK_FILE)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let mut suite = sparkles_bench::Suite::new("history");
    suite.case("steady", |b| b.iter(|| hash_rounds(20)));
    suite.case("regressed", move |b| b.iter(move || hash_rounds(work)));
    let mut argv = vec!["bench".to_string()];
    argv.extend(args.split('\t').map(str::to_string));
    let status = sparkles_bench::run_main(suite, argv);
    assert_eq!(status, 0);
}

/// This test binary's child run in `repo` with harness arguments `args`.
fn bench_run(repo: &Path, args: &[&str]) -> std::process::Output {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "history_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(ARGS_ENV, args.join("\t"))
        .current_dir(repo)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "bench run failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A repository at its first commit, or `None` (said) where git is absent.
fn repository(dir: &Path) -> Option<()> {
    if Command::new("git").arg("--version").output().is_err() {
        skip::skip(
            "git",
            "git is not installed: no repository to take a history in",
        );
        return None;
    }
    planted_repo::git(dir, &["init", "-q", "-b", "main"]);
    planted_repo::git(dir, &["config", "user.email", "test@sparkles"]);
    planted_repo::git(dir, &["config", "user.name", "sparkles test"]);
    planted_repo::git(dir, &["config", "commit.gpgsign", "false"]);
    Some(())
}

fn commit(dir: &Path, work: u64, message: &str) -> String {
    std::fs::write(dir.join(WORK_FILE), format!("{work}\n")).unwrap();
    std::fs::write(dir.join("notes.txt"), format!("{message}\n")).unwrap();
    planted_repo::git(dir, &["add", "-A"]);
    planted_repo::git(dir, &["commit", "-q", "-m", message]);
    planted_repo::git(dir, &["rev-parse", "HEAD"])
}

/// Ignored until the run statistic copes with a machine that slows whole runs unseen:
/// on the 2-CPU VM the project is built on, this failed 2 of 5 clean-clone CI runs of
/// 2026-12-06 (never where it was the code). Beside the busy loops, whole runs read 1.4x
/// slower with no run-queue wait to subtract and the machine probe unmoved: once a
/// second change point after the planted one, once a scatter that hid the planted step;
/// without the busy loops the runs scattered by a third. Run it by name with
/// `--ignored` on a quiet machine.
#[test]
#[ignore = "flaky where the machine slows whole runs unseen by the probe (2 of 5 CI runs on the 2-CPU VM, 2026-12-06): run with --ignored on a quiet machine"]
fn twelve_commits_and_the_one_that_made_a_case_slower_is_its_change_point() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let repo = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    if repository(repo.path()).is_none() {
        return;
    }
    let out_dir = out.path().to_str().unwrap();
    // Beside a busy loop on every CPU, where the kernel says how long the runs' threads
    // waited for one (what each run's median leaves out).
    let waits_known = schedstat();
    if !waits_known {
        skip::skip(
            "schedstat",
            "no /proc/thread-self/schedstat: the history is taken without the CPU hogs, its times as measured",
        );
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let hogs = Hogs::start(if waits_known { cpus } else { 0 });
    let mut commits = Vec::new();
    for i in 0..12 {
        // The 7th commit hashes 30% more rounds in `regressed`; the others change nothing
        // it measures. Two runs at each, of the harness's default options but a shorter
        // pass.
        let work = if i >= 6 { 26 } else { 20 };
        commits.push(commit(repo.path(), work, &format!("commit {i}")));
        for _ in 0..2 {
            bench_run(
                repo.path(),
                &["--bench", "--samples", "16", "--out-dir", out_dir],
            );
        }
    }
    drop(hogs);
    let history_file = out.path().join("history/history.jsonl");
    let lines = std::fs::read_to_string(&history_file).unwrap();
    assert_eq!(lines.lines().count(), 24);
    let per_run = lines.len() / 24;
    eprintln!("history: {per_run} bytes a run of 2 cases");
    // Read as a user runs it, where the bench ran: the target folder's history.
    let json = Command::new(env!("CARGO_BIN_EXE_sparkles"))
        .args(["history", "--format", "json"])
        .env(
            "CARGO_TARGET_DIR",
            out.path().parent().unwrap().join("none"),
        )
        .current_dir(repo.path())
        .output()
        .unwrap();
    // No target folder there: said, naming the flag that points at one.
    assert_eq!(json.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&json.stderr).contains("--history-dir"));
    let history_dir = out.path().join("history");
    let json = sparkles(&[
        "history",
        "--history-dir",
        history_dir.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(
        json.status.success(),
        "{}",
        String::from_utf8_lossy(&json.stderr)
    );
    let doc: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["schema"], "sparkles.history/1");
    let case = |name: &str| {
        doc["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["case"] == name)
            .unwrap()
            .clone()
    };
    let regressed = case("regressed");
    let statistic = if waits_known {
        "10th percentile less run-queue wait"
    } else {
        "median"
    };
    assert_eq!(regressed["statistic"], statistic);
    let runs = regressed["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 24);
    for (run, commit) in runs.iter().zip(commits.iter().flat_map(|c| [c, c])) {
        assert_eq!(run["commit"].as_str(), Some(commit.as_str()));
        assert_eq!(run["dirty"], false);
        let value = run["median"].as_f64().unwrap();
        assert!(value > 0.0);
        if waits_known {
            // The fastest tenth less the waits: under the median as measured beside the
            // hogs; of 16 samples, without a distribution-free interval (it needs 36).
            assert!(run["as_measured"].as_f64().unwrap() > value);
            assert!(run["ci_low"].is_null() && run["ci_high"].is_null());
        } else {
            let (lo, hi) = (
                run["ci_low"].as_f64().unwrap(),
                run["ci_high"].as_f64().unwrap(),
            );
            assert!(lo <= value && value <= hi);
        }
        assert!(run["time"].as_u64().unwrap() > 1_700_000_000);
    }
    let points = regressed["change_points"].as_array().unwrap();
    assert_eq!(points.len(), 1, "{points:?}\n{runs:?}");
    assert_eq!(
        points[0]["commit"].as_str(),
        Some(commits[6].as_str()),
        "{points:?}\n{:?}",
        runs.iter()
            .map(|r| r["median"].as_f64().unwrap())
            .collect::<Vec<_>>()
    );
    let step = points[0]["change_pct"].as_f64().unwrap();
    assert!(
        (20.0..=40.0).contains(&step),
        "{step}: {:?}",
        runs.iter()
            .map(|r| r["median"].as_f64().unwrap() as u64)
            .collect::<Vec<_>>()
    );
    assert!(points[0]["p_value"].as_f64().unwrap() <= 0.005);
    let steady = case("steady");
    assert!(
        steady["change_points"].as_array().unwrap().is_empty(),
        "{}",
        steady["change_points"]
    );
    // The table names the commit too; a filter keeps one case.
    let table = sparkles(&[
        "history",
        "--history-dir",
        history_dir.to_str().unwrap(),
        "regressed",
    ]);
    let text = String::from_utf8_lossy(&table.stdout);
    eprintln!("{text}");
    assert!(text.contains(&commits[6][..10]), "{text}");
    assert!(!text.lines().any(|l| l.starts_with("steady")), "{text}");
    assert_eq!(
        text.contains("times: each run's fastest tenth (10th percentile) of its samples, each less its run-queue wait"),
        waits_known,
        "{text}"
    );
    // The last run's report draws each case's trend, its change point said.
    let page = std::fs::read_to_string(out.path().join("report/index.html")).unwrap();
    assert!(
        page.contains(&format!("{statistic} per run, the last 24")),
        "no trend plot"
    );
    assert!(page.contains("History: 24 runs"));
    // Drawn in a browser: each case's trend plot.
    match browser::chromium() {
        Some(chromium) => {
            let rendered = browser::rendered(chromium, &out.path().join("report/index.html"));
            assert_eq!(
                rendered
                    .matches(&format!("{statistic} per run, the last 24"))
                    .count(),
                2,
                "two trends"
            );
            // Each case's runs (and its change points, as measured: whether this
            // machine's bursts made one is not this test's to say) said beside it.
            assert_eq!(rendered.matches("History: 24 runs").count(), 2);
        }
        None => skip::skip(
            "chromium",
            "no chromium here: the trend was checked as text only",
        ),
    }
    // A damaged line is skipped with its number, never fatal.
    let mut damaged = lines.clone();
    damaged.insert_str(lines.find('\n').unwrap() + 1, "{not json\n");
    std::fs::write(&history_file, damaged).unwrap();
    let again = sparkles(&["history", "--history-dir", history_dir.to_str().unwrap()]);
    assert!(again.status.success());
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(err.contains("history.jsonl, line 2: not a run"), "{err}");
}

/// Where the run that wrote export `path` wrote its rows.
fn rows_of(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".rows.jsonl");
    PathBuf::from(name)
}

/// `npm install` of `packages` into `dir`, or `None` (said) where npm cannot.
fn npm(dir: &Path, packages: &[&str]) -> Option<()> {
    let out = Command::new("timeout")
        .args(["180", "npm", "install", "--no-save", "--silent"])
        .args(packages)
        .current_dir(dir)
        .output();
    match out {
        Ok(o) if o.status.success() => Some(()),
        other => {
            skip::skip("npm", format!("npm install {packages:?}: {other:?}"));
            None
        }
    }
}

/// github-action-benchmark v1.22.0's reading of its two inputs (src/extract.ts): the
/// custom JSON through its zod schema, `BenchmarkResult`, and the `cargo` tool's regex
/// over libtest lines; what each gives, as JSON on stdout.
const ACTION_JS: &str = r#"
const fs = require('fs');
const { z } = require('zod');
const BenchmarkResult = z.object({
    name: z.coerce.string(),
    value: z.coerce.number(),
    range: z.coerce.string().optional(),
    unit: z.coerce.string(),
    extra: z.coerce.string().optional(),
});
const custom = z.array(BenchmarkResult).parse(JSON.parse(fs.readFileSync(process.argv[2], 'utf8')));
const reExtract = /^test (.+)\s+\.\.\. bench:\s+([0-9,.]+) (\w+\/\w+) \(\+\/- ([0-9,.]+)\)$/;
const cargo = [];
for (const line of fs.readFileSync(process.argv[3], 'utf8').split(/\r?\n/g)) {
    const m = line.match(reExtract);
    if (m === null) continue;
    cargo.push({ name: m[1].trim(), value: parseFloat(m[2].split(',').join('')), range: `± ${m[4].split(',').join('')}`, unit: m[3] });
}
console.log(JSON.stringify({ custom, cargo }));
"#;

#[test]
fn the_exports_are_read_by_the_tools_they_are_for() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(WORK_FILE), "30\n").unwrap();
    let files: Vec<(&str, PathBuf)> = ["bmf", "github-action", "libtest"]
        .iter()
        .map(|f| (*f, dir.path().join(format!("out.{f}"))))
        .collect();
    let out_dir = dir.path().join("out");
    for (format, path) in &files {
        bench_run(
            dir.path(),
            &[
                "--bench",
                "--samples",
                "8",
                "--bench-min-time",
                "1ms",
                "--no-history",
                "--no-report",
                "--out-dir",
                out_dir.to_str().unwrap(),
                "--bench-format",
                format,
                "--bench-out",
                path.to_str().unwrap(),
                "--bench-json",
                rows_of(path).to_str().unwrap(),
            ],
        );
    }
    // Each export's run's own medians, from its rows.
    let medians = |i: usize| -> Vec<f64> {
        std::fs::read_to_string(rows_of(&files[i].1))
            .unwrap()
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["timing"]["median"]
                    .as_f64()
                    .unwrap()
            })
            .collect()
    };
    assert!(
        !out_dir.join("history").exists(),
        "--no-history wrote a history"
    );
    let read = |i: usize| std::fs::read_to_string(&files[i].1).unwrap();
    // BMF: each case's latency in ns with its interval around it; each metric its own
    // measure (Bencher's rules: a name of at most 64 bytes, no padding; finite numbers).
    let bmf: Value = serde_json::from_str(&read(0)).unwrap();
    // The testbed beside it: this machine's, a slug Bencher takes (`--testbed`), the
    // same for every run here; none beside the other formats.
    let mut beside = files[0].1.clone().into_os_string();
    beside.push(".testbed");
    let testbed = std::fs::read_to_string(&beside).unwrap();
    let testbed = testbed.trim_end();
    assert!(
        !testbed.is_empty()
            && testbed
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
        "{testbed}"
    );
    assert!(testbed.contains(&format!(
        "-{}c-",
        std::thread::available_parallelism().unwrap()
    )));
    for (_, path) in &files[1..] {
        let mut other = path.clone().into_os_string();
        other.push(".testbed");
        assert!(!PathBuf::from(other).exists());
    }
    for (case, median) in ["steady", "regressed"].into_iter().zip(medians(0)) {
        let latency = &bmf[case]["latency"];
        assert_eq!(latency["value"].as_f64(), Some(median));
        let (v, lo, hi) = (
            latency["value"].as_f64().unwrap(),
            latency["lower_value"].as_f64().unwrap(),
            latency["upper_value"].as_f64().unwrap(),
        );
        assert!(lo <= v && v <= hi && v > 0.0, "{latency}");
        for (measure, m) in bmf[case].as_object().unwrap() {
            assert!(!measure.is_empty() && measure.len() <= 64 && measure.trim() == measure);
            assert!(
                m["value"].as_f64().is_some_and(f64::is_finite),
                "{measure}: {m}"
            );
        }
    }
    // The same cases in the other two, at the same medians as the rows.
    let custom: Value = serde_json::from_str(&read(1)).unwrap();
    let names: Vec<&str> = custom
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["steady", "regressed"]);
    for (e, median) in custom.as_array().unwrap().iter().zip(medians(1)) {
        assert_eq!(e["unit"], "ns");
        assert_eq!(e["value"].as_f64(), Some(median));
        assert!(e["range"].as_str().unwrap().starts_with("± "), "{e}");
    }
    let libtest = read(2);
    assert!(libtest.contains("test steady    ... bench: "), "{libtest}");
    // The readers themselves.
    let Ok(node) = Command::new("node").arg("--version").output() else {
        skip::skip(
            "npm",
            "node is not installed: the exports were checked by shape only",
        );
        return;
    };
    assert!(node.status.success());
    let js = tempfile::tempdir().unwrap();
    if npm(js.path(), &["ajv@8", "zod@4.1.5"]).is_none() {
        return;
    }
    std::fs::write(js.path().join("validate.js"), support::AJV_VALIDATE_JS).unwrap();
    std::fs::write(js.path().join("action.js"), ACTION_JS).unwrap();
    let schema =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/export/bmf.schema.json");
    let valid = Command::new("node")
        .arg("validate.js")
        .arg(&schema)
        .arg(&files[0].1)
        .current_dir(js.path())
        .output()
        .unwrap();
    assert!(
        valid.status.success(),
        "BMF against its schema: {}",
        String::from_utf8_lossy(&valid.stderr)
    );
    let action = Command::new("node")
        .arg("action.js")
        .arg(&files[1].1)
        .arg(&files[2].1)
        .current_dir(js.path())
        .output()
        .unwrap();
    assert!(
        action.status.success(),
        "{}",
        String::from_utf8_lossy(&action.stderr)
    );
    let read_back: Value = serde_json::from_slice(&action.stdout).unwrap();
    // The custom JSON comes back as written; each libtest line is read, its name and
    // unit as libtest's.
    // (Numbers by value: JavaScript writes 134443.0 as 134443.)
    let as_read = read_back["custom"].as_array().unwrap();
    assert_eq!(as_read.len(), custom.as_array().unwrap().len());
    for (a, b) in as_read.iter().zip(custom.as_array().unwrap()) {
        for key in ["name", "unit", "range", "extra"] {
            assert_eq!(a[key], b[key], "{key}");
        }
        assert_eq!(a["value"].as_f64(), b["value"].as_f64());
    }
    let cargo = read_back["cargo"].as_array().unwrap();
    let cargo_names: Vec<&str> = cargo.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(cargo_names, ["steady", "regressed"]);
    for (c, median) in cargo.iter().zip(medians(2)) {
        assert_eq!(c["unit"], "ns/iter");
        // libtest's two decimals of its run's median.
        assert!(
            (c["value"].as_f64().unwrap() - median).abs() <= 0.006,
            "{c} {median}"
        );
    }
}

/// A history of twelve runs written as the harness writes it, one a commit, whose times
/// do not move while the 7th commit adds 1% to the instructions callgrind counted: the
/// table shows the count's change point beside the times' none; `--metric` follows it
/// (and says which metrics there are where asked for one no run stored); `--branch` reads
/// one branch's runs and says which branches there are where it has none.
#[test]
fn an_exact_count_has_change_points_of_its_own_beside_the_times() {
    use sparkles_results::history::{self, CaseRun, Run};
    let dir = tempfile::tempdir().unwrap();
    let path = history::path(dir.path(), "counts");
    let commit = |i: u64| format!("{:040x}", 0xc0ffee_u64 + i);
    for i in 0..12u64 {
        let mut environment = sparkles_results::environment::Environment::current("counts");
        environment.unix_time = 1_800_000_000 + i * 60;
        let metrics = [
            (
                "valgrind.instructions".to_string(),
                if i >= 6 { 1_010_000.0 } else { 1_000_000.0 } + (i % 3) as f64,
            ),
            ("rusage.minflt".to_string(), 3.0),
        ]
        .into_iter()
        .collect();
        let median = 1000.0 * (1.0 + 0.01 * ((i * 7) % 5) as f64);
        let run = Run {
            schema: "sparkles.history-run/1".to_string(),
            suite: "counts".to_string(),
            commit: Some(commit(i)),
            dirty: Some(false),
            branch: Some("main".to_string()),
            time: environment.unix_time,
            environment,
            cases: vec![CaseRun {
                case: "work".to_string(),
                median,
                ci_low: Some(median * 0.99),
                ci_high: Some(median * 1.01),
                samples: 32,
                less_wait: None,
                null_pct: None,
                side_by_side: None,
                metrics,
            }],
            source: None,
        };
        history::append(&path, &run).unwrap();
    }
    let d = dir.path().to_str().unwrap();
    let out = sparkles(&["history", "--history-dir", d]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{table}");
    let line = |start: &str| {
        table
            .lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no {start} line: {table}"))
            .to_string()
    };
    // The times: nothing. The exact count: its step, at the 7th commit.
    assert!(line("work ").ends_with("none"), "{table}");
    let exact = line("  valgrind.instructions");
    assert!(exact.contains(&commit(6)[..10]), "{table}");
    assert!(exact.contains("+1.0%"), "{table}");
    assert!(!table.contains("rusage.minflt"), "{table}");

    let out = sparkles(&[
        "history",
        "--history-dir",
        d,
        "--metric",
        "valgrind.instructions",
        "--format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let case = &doc["cases"][0];
    assert_eq!(case["metric"], "valgrind.instructions");
    assert_eq!(case["runs"].as_array().unwrap().len(), 12);
    let points = case["change_points"].as_array().unwrap();
    assert_eq!(points.len(), 1, "{points:?}");
    assert_eq!(points[0]["commit"].as_str(), Some(commit(6).as_str()));

    let out = sparkles(&["history", "--history-dir", d, "--metric", "no.such"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--metric no.such") && err.contains("rusage.minflt, valgrind.instructions"),
        "{err}"
    );

    let out = sparkles(&["history", "--history-dir", d, "--branch", "main"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("work "));
    let out = sparkles(&["history", "--history-dir", d, "--branch", "other"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no run on branch other (its runs' branches: main 12)"),
        "{err}"
    );
}

/// The figures of docs/design.md's "History under load", for anyone to rerun: for 0 to 3
/// busy loops, ten 12-commit histories (one run a commit, `--samples 16`, the 7th commit
/// 30% slower in `regressed`), each read with the defaults but each run's value another
/// statistic of its samples (as measured, or each less its run-queue wait): how many of
/// the ten find the step at its commit and no other, and how many find nothing in
/// `steady`.
/// `cargo test -p sparkles-cli --test history -- --ignored --nocapture per_run_statistic`
#[test]
#[ignore = "an experiment of about five minutes: docs/design.md's figures"]
fn per_run_statistic_under_load() {
    use sparkles_results::history::{self, Run};
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !schedstat() {
        skip::skip("schedstat", "no run-queue waits here: nothing to compare");
        return;
    }
    // (name, less the waits, quantile)
    let statistics = [
        ("less waits, 10th percentile (the default)", true, 0.1),
        ("less waits, median", true, 0.5),
        ("less waits, 25th percentile", true, 0.25),
        ("less waits, fastest sample", true, 0.0),
        ("as measured, median", false, 0.5),
        ("as measured, 10th percentile", false, 0.1),
        ("as measured, fastest sample", false, 0.0),
    ];
    const TRIALS: usize = 10;
    println!("hogs  statistic                                   step found at its commit  none in steady");
    for hogs in 0..=3 {
        let _hogs = Hogs::start(hogs);
        let mut found = [0usize; 7];
        let mut none = [0usize; 7];
        for _ in 0..TRIALS {
            let repo = tempfile::tempdir().unwrap();
            let out = tempfile::tempdir().unwrap();
            if repository(repo.path()).is_none() {
                return;
            }
            let mut commits = Vec::new();
            // Each run's samples, as measured and less their waits, by case.
            type Samples = std::collections::BTreeMap<String, [Vec<f64>; 2]>;
            let mut samples: Vec<Samples> = Vec::new();
            for i in 0..12 {
                commits.push(commit(
                    repo.path(),
                    if i >= 6 { 26 } else { 20 },
                    &format!("commit {i}"),
                ));
                let out_dir = out.path().to_str().unwrap();
                bench_run(
                    repo.path(),
                    &["--bench", "--samples", "16", "--out-dir", out_dir],
                );
                let rows: Value = serde_json::from_slice(
                    &std::fs::read(out.path().join("report/cases.json")).unwrap(),
                )
                .unwrap();
                let numbers = |v: &Value| -> Vec<f64> {
                    v.as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_f64().unwrap())
                        .collect()
                };
                samples.push(
                    rows.as_array()
                        .unwrap()
                        .iter()
                        .map(|r| {
                            let timing = &r["row"]["timing"];
                            let measured = numbers(&timing["samples"]);
                            let less = measured
                                .iter()
                                .zip(numbers(&timing["run_queue_wait"]))
                                .map(|(s, w)| s - w)
                                .collect();
                            (
                                r["row"]["case"].as_str().unwrap().to_string(),
                                [measured, less],
                            )
                        })
                        .collect(),
                );
            }
            let runs: Vec<Run> = history::read(&out.path().join("history/history.jsonl"))
                .unwrap()
                .runs;
            for (k, (_, less, q)) in statistics.iter().enumerate() {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("history.jsonl");
                for (run, samples) in runs.iter().zip(&samples) {
                    let mut run = run.clone();
                    for c in &mut run.cases {
                        let mut values = samples[&c.case][usize::from(*less)].clone();
                        values.sort_by(f64::total_cmp);
                        c.median = sparkles_results::stats::quantile_sorted(&values, *q);
                        c.less_wait = None;
                    }
                    history::append(&path, &run).unwrap();
                }
                let json = sparkles(&[
                    "history",
                    "--history-dir",
                    dir.path().to_str().unwrap(),
                    "--format",
                    "json",
                ]);
                let doc: Value = serde_json::from_slice(&json.stdout).unwrap();
                for c in doc["cases"].as_array().unwrap() {
                    let points = c["change_points"].as_array().unwrap();
                    if c["case"] == "steady" {
                        none[k] += usize::from(points.is_empty());
                    } else {
                        found[k] += usize::from(
                            points.len() == 1
                                && points[0]["commit"].as_str() == Some(commits[6].as_str()),
                        );
                    }
                }
            }
        }
        for (k, (name, _, _)) in statistics.iter().enumerate() {
            println!(
                "{hogs:>4}  {name:<43} {:>2}/{TRIALS}                    {:>2}/{TRIALS}",
                found[k], none[k]
            );
        }
    }
}
