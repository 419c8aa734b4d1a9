//! A saved baseline knows the machine moved: every run times the machine probe (a fixed
//! reference loop) beside its cases and `--save-baseline` stores its samples in
//! `SUITE.env.json`; `--baseline` compares the probe first and, where it moved, marks
//! every verdict with `comparison.machine_shift_pct`, warns on standard error, stars the
//! table's verdicts and puts the warning in the run report.
//!
//! The machine is not made to change speed: the stored probe samples are rewritten (as
//! though the baseline's machine had been 20 times slower), so the shift this run sees is
//! about −95%, and still beyond −50% where the load beside the test slows this run's probe
//! tenfold. (A planted −30% was cancelled once by a busy CI round: the saving run had the
//! machine to itself and the comparing run ran 1.4 times slower.) Each run is
//! this test binary again as the child (`child_runs_the_suite`), so its standard error
//! can be read.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use std::path::Path;
use std::process::Command;

/// Set in the child's environment: its harness flags, separated by newlines.
const CHILD: &str = "SPARKLES_MACHINE_PROBE_ARGS";

/// The child: a suite of two small cases, run with the flags the parent gives.
#[test]
#[ignore = "the child the test below runs"]
fn child_runs_the_suite() {
    let Ok(flags) = std::env::var(CHILD) else {
        return; // run by hand, not by the test below: nothing to do
    };
    let mut suite = sparkles_bench::Suite::new("probe");
    suite.case("sum/4k", |b| {
        let data: Vec<u64> = (0..4096).collect();
        b.iter(|| data.iter().sum::<u64>())
    });
    suite.case("sort/1k", |b| {
        let data: Vec<u32> = (0..1024u32)
            .map(|i| i.wrapping_mul(2_654_435_761))
            .collect();
        b.iter(|| {
            let mut v = data.clone();
            v.sort_unstable();
            v
        })
    });
    let args = std::iter::once("bench").chain(flags.lines());
    std::process::exit(sparkles_bench::run_main(suite, args));
}

/// What one child run left: its status, its standard output and error, its rows.
struct Ran {
    stdout: String,
    stderr: String,
    rows: Vec<serde_json::Value>,
}

/// Runs the child measuring into `out` with `extra` flags; the run must succeed.
fn run(out: &Path, extra: &[&str]) -> Ran {
    let json = out.join("rows.jsonl");
    let mut flags = vec![
        "--bench",
        "--bench-min-time",
        "1ms",
        "--samples",
        "10",
        "--count-brackets",
        "1",
        "--out-dir",
        out.to_str().unwrap(),
        "--bench-json",
        json.to_str().unwrap(),
    ];
    flags.extend(extra);
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "child_runs_the_suite",
            "--nocapture",
        ])
        .env(CHILD, flags.join("\n"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let rows = std::fs::read_to_string(&json)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    Ran {
        stdout,
        stderr,
        rows,
    }
}

/// Every row's `comparison.machine_shift_pct`, in order (`None` where absent).
fn shifts(ran: &Ran) -> Vec<Option<f64>> {
    ran.rows
        .iter()
        .map(|r| {
            assert!(r["comparison"].is_object(), "not compared: {r}");
            r["comparison"]["machine_shift_pct"].as_f64()
        })
        .collect()
}

#[test]
fn a_baseline_whose_machine_moved_marks_every_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    run(out, &["--save-baseline", "b"]);
    let env_path = out.join("baselines/b/probe.env.json");
    let saved = std::fs::read_to_string(&env_path).unwrap();
    let env: serde_json::Value = serde_json::from_str(&saved).unwrap();
    let probe = &env["machine_probe"];
    let samples: Vec<f64> = probe["samples_ns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(samples.len(), 10, "{probe}");
    assert!(samples.iter().all(|&v| v > 0.0));
    let median = probe["median_ns"].as_f64().unwrap();
    assert!(samples.iter().any(|&v| v <= median) && samples.iter().any(|&v| v >= median));

    // The baseline's machine as though it had run the probe in a twentieth of the time:
    // this run's machine is then about 1,900% slower, whatever the load does to this
    // run. (Not the other way round: a probe 20 times slower made this run at most 100%
    // faster, and beside two CPU hogs this run's probe spread wider than that, its
    // interquartile range over its median, so the move was within its own spread and no
    // verdict was marked.)
    const FASTER: f64 = 20.0;
    let mut faster = env.clone();
    faster["machine_probe"]["samples_ns"] = samples.iter().map(|v| v / FASTER).collect();
    faster["machine_probe"]["median_ns"] = (median / FASTER).into();
    std::fs::write(&env_path, serde_json::to_string_pretty(&faster).unwrap()).unwrap();
    let moved = run(out, &["--baseline", "b"]);
    for shift in shifts(&moved) {
        let shift = shift.expect("every compared row is marked");
        assert!(shift >= 100.0, "shift {shift}");
    }
    let warnings: Vec<&str> = moved
        .stderr
        .lines()
        .filter(|l| l.starts_with("warning: the machine ran"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", moved.stderr);
    assert!(
        warnings[0].contains("slower than when baseline b was saved")
            && warnings[0].contains("sparkles compare --base REV"),
        "{}",
        warnings[0]
    );
    // The table stars each verdict and says why under it.
    let starred = moved.stdout.lines().filter(|l| l.ends_with(" *")).count();
    assert_eq!(starred, 2, "{}", moved.stdout);
    assert!(
        moved.stdout.contains("* the machine ran"),
        "{}",
        moved.stdout
    );
    let page = std::fs::read_to_string(out.join("report/index.html")).unwrap();
    assert!(page.contains("slower than when baseline b was saved"));

    // The baseline as saved, compared at once: whatever the load, a row is marked exactly
    // when the warning is given, and then every row is.
    std::fs::write(&env_path, &saved).unwrap();
    let again = run(out, &["--baseline", "b"]);
    let marked = shifts(&again);
    let warned = again.stderr.contains("warning: the machine ran");
    assert!(
        marked.iter().all(|s| s.is_some() == warned),
        "{marked:?}\n{}",
        again.stderr
    );

    // A baseline saved before the probe: said once, no mark, no error.
    let mut old = env.clone();
    old.as_object_mut().unwrap().remove("machine_probe");
    std::fs::write(&env_path, serde_json::to_string_pretty(&old).unwrap()).unwrap();
    let unknown = run(out, &["--baseline", "b"]);
    assert!(shifts(&unknown).iter().all(Option::is_none));
    let notes = unknown
        .stderr
        .matches("note: the machine's speed could not be checked against baseline b")
        .count();
    assert_eq!(notes, 1, "{}", unknown.stderr);
    assert!(!unknown.stderr.contains("warning: the machine ran"));
}
