//! The main job where the checking machines may run it: with perf_event_open refused by a
//! seccomp filter (Docker's default profile), and as an unprivileged user. Each test runs
//! this test binary again, confined, as the child that runs the demo suite with
//! `--profile` (`child_runs_the_main_job`), and checks what it did: every case timed
//! (exit 0), why profiling lacks what it lacks said once, and nothing written half.

#![cfg(target_os = "linux")] // seccomp and setuid are Linux's here
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

#[path = "../../testdata/support/confine.rs"]
mod confine;

#[path = "../benches/demo_suite/mod.rs"]
mod demo;

use std::path::Path;
use std::process::{Command, Output};

/// Set in the child's environment: the folder it writes into.
const CHILD: &str = "SPARKLES_CONFINED_OUT";

const CASES: [&str; 3] = ["hashmap/insert", "io/read_file", "compute/sieve"];

/// The child: the demo suite's fast cases with `--profile`, into the folder the parent
/// names; its exit status is the harness's. Ignored in a plain run (it is the parent
/// tests' child, not a test of its own).
#[test]
#[ignore = "the child the tests below run, confined"]
fn child_runs_the_main_job() {
    let out = std::env::var(CHILD).expect("run by the confined tests, which set the folder");
    let rows = format!("{out}/rows.jsonl");
    let mut args = vec![
        "bench",
        "--bench",
        "--profile",
        "--samples",
        "3",
        "--bench-min-time",
        "1ms",
        "--profile-time",
        "100ms",
        "--out-dir",
        &out,
        "--bench-json",
        &rows,
    ];
    args.extend(CASES);
    std::process::exit(sparkles_bench::run_main(demo::suite(), args));
}

/// Runs the child, made as `confine` says, writing into `out`.
fn run_child(
    out: &Path,
    confine: impl FnOnce(&mut Command) -> Option<&mut Command>,
) -> Option<Output> {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "--ignored",
            "--exact",
            "child_runs_the_main_job",
            "--nocapture",
        ])
        .env(CHILD, out);
    confine(&mut command)?;
    Some(command.output().unwrap())
}

/// Every case has a row with a timing, the rows file is whole, and no case's profile
/// folder holds a capture cut short.
fn assert_timed_and_whole(out: &Path, output: &Output) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{:?}\n{stdout}\n{stderr}",
        output.status
    );
    let text = std::fs::read_to_string(out.join("rows.jsonl")).unwrap();
    let rows: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), CASES.len(), "{text}");
    for row in &rows {
        assert_eq!(row["ok"], true, "{row}");
        assert!(row["timing"]["median"].as_f64().unwrap() > 0.0, "{row}");
    }
    for row in &rows {
        let capture = &row["profile"]["capture"];
        if let Some(path) = capture.as_str() {
            let data = sparkles_perf_data::PerfData::open(path).unwrap();
            assert!(data.data_size() > 0, "{path}");
        }
    }
}

#[test]
fn the_main_job_times_every_case_where_perf_event_open_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let Some(output) = run_child(dir.path(), confine::with_perf_event_refused) else {
        skip::skip("perf_event", "no seccomp filter for this architecture here");
        return;
    };
    assert_timed_and_whole(dir.path(), &output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if portable_said_once(&stderr) {
        return;
    }
    // Said once for the run, as a seccomp refusal, not as the paranoid level's.
    let refusal = said_once(&stderr, "no capture");
    assert!(refusal.contains("every case"), "{stderr}");
    assert!(refusal.contains("seccomp"), "{stderr}");
    assert!(!refusal.contains("perf_event_paranoid"), "{stderr}");
    assert!(!dir.path().join("profile").exists() || no_captures(&dir.path().join("profile")));
}

/// The one line of `stderr` that has `what`: it must be said exactly once.
fn said_once<'a>(stderr: &'a str, what: &str) -> &'a str {
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains(what)).collect();
    assert_eq!(lines.len(), 1, "'{what}' not said once:\n{stderr}");
    lines[0]
}

/// In a build without the kernel edge (`--no-default-features`) nothing is sampled
/// anywhere: the catalog says why, once, and no case has a capture error. True there.
fn portable_said_once(stderr: &str) -> bool {
    let Some(why) = sparkles_sampler::UNAVAILABLE else {
        return false;
    };
    assert!(said_once(stderr, why).contains("unavailable"), "{stderr}");
    assert!(!stderr.contains("no capture"), "{stderr}");
    true
}

/// Whether no file under `dir` is a capture.
fn no_captures(dir: &Path) -> bool {
    walk(dir).iter().all(|p| !p.ends_with("capture.perf.data"))
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn the_main_job_times_every_case_as_an_unprivileged_user() {
    let dir = tempfile::tempdir().unwrap();
    // nobody writes there.
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let Some(output) = run_child(dir.path(), confine::as_nobody) else {
        skip::skip("root", "only root runs a command as another user");
        return;
    };
    if output.status.code() == Some(126) || output.status.code() == Some(127) {
        skip::skip(
            "root",
            format!(
                "nobody cannot run this test binary from where it is ({:?})",
                std::env::current_exe().unwrap()
            ),
        );
        return;
    }
    assert_timed_and_whole(dir.path(), &output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if portable_said_once(&stderr) {
        return;
    }
    let paranoid = sparkles_sampler::system::System::probe().perf_event_paranoid;
    let rows = std::fs::read_to_string(dir.path().join("rows.jsonl")).unwrap();
    if sparkles_sampler::system::seccomp_filtered() {
        // This process's filter is the child's too: refused, said once, as the filter's.
        assert!(
            said_once(&stderr, "no capture").contains("seccomp"),
            "{stderr}"
        );
    } else if paranoid >= 3 {
        // Nothing opens for an unprivileged user: said once, with the setting.
        let refusal = said_once(&stderr, "no capture");
        assert!(refusal.contains("perf_event_paranoid is 3"), "{stderr}");
    } else if paranoid == 2 {
        // User mode only: every case profiled, the restriction said once for all.
        assert!(!rows.contains("\"capture\":null"), "{rows}");
        let said = said_once(&stderr, "user mode only");
        assert!(said.contains("every case"), "{stderr}");
    }
}
