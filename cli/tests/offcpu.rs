//! Off-CPU profiles as a user takes them: `sparkles record --off-cpu` of programs whose
//! waits are known (testdata/report/waits.c), then `sparkles report`. What the capture
//! can say depends on the machine: with `sched:sched_switch` (root, tracefs) each wait
//! has its blocking stack and state, and the tests check the function and line it is
//! charged to; with switch records only they check the shares.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::{recorded, sparkles};

/// waits.c built into `dir`, or `None`, saying why.
fn waits_program(dir: &Path) -> Option<PathBuf> {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/report/waits.c");
    let out = dir.join("waits");
    match Command::new("gcc")
        .args(["-O1", "-g", "-fno-omit-frame-pointer", "-pthread", "-o"])
        .arg(&out)
        .arg(&src)
        .output()
    {
        Ok(o) if o.status.success() => Some(out),
        other => {
            skip::skip("gcc", format!("gcc could not build waits.c: {other:?}"));
            None
        }
    }
}

/// `sparkles record --off-cpu` of `waits MODE`, then its profile's JSON and what the
/// program printed; `None` where the kernel refuses sampling (said).
fn record(dir: &Path, program: &Path, mode: &str) -> Option<(PathBuf, Value, String)> {
    let capture = dir.join(format!("{mode}.perf.data"));
    let out = recorded(&[
        "record",
        "--off-cpu",
        "-o",
        capture.to_str().unwrap(),
        "--",
        program.to_str().unwrap(),
        mode,
    ])?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("off-CPU:"), "the source is said: {err}");
    let report = sparkles(&["report", "--format", "json", capture.to_str().unwrap()]);
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    Some((
        capture,
        serde_json::from_slice(&report.stdout).unwrap(),
        said,
    ))
}

/// `(slept, total)` seconds from `waits split`'s last line, `split: slept N us of M us`.
fn program_times(said: &str) -> (f64, f64) {
    let line = said
        .lines()
        .find(|l| l.starts_with("split: slept "))
        .unwrap_or_else(|| panic!("waits printed no times: {said}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let us = |i: usize| words[i].parse::<f64>().unwrap() / 1e6;
    (us(2), us(5))
}

fn share_of(section: &Value, reason: &str) -> f64 {
    section["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["reason"] == reason)
        .map_or(0.0, |r| r["share"].as_f64().unwrap())
}

#[test]
fn a_known_split_of_spinning_and_sleeping_is_measured() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = waits_program(dir.path()) else {
        return;
    };
    let Some((capture, p, said)) = record(dir.path(), &program, "split") else {
        return;
    };
    let o = &p["offcpu"];
    for key in [
        "source",
        "on_cpu_seconds",
        "off_cpu_seconds",
        "reasons",
        "functions",
    ] {
        assert!(!o[key].is_null(), "offcpu.{key} missing: {o}");
    }
    let on = o["on_cpu_seconds"].as_f64().unwrap();
    let off = o["off_cpu_seconds"].as_f64().unwrap();
    // The program timed its rounds and its sleeps itself (100 rounds of 10 ms, 40%
    // asleep on an idle machine; a busy one stretches both).
    let (slept, total) = program_times(&said);
    assert!(
        (on + off - total).abs() < 0.1 * total + 0.05,
        "{on} + {off} s against the program's {total} s"
    );
    let slept_share = slept / (on + off);
    // Time preempted is off-CPU too, but not the program's choice: it is what a busy
    // machine adds, and is told apart.
    let waiting = off / (on + off) - share_of(o, "preempted");
    eprintln!(
        "off-CPU {off:.3} s of {:.3} s; waiting {waiting:.3}; the program slept {slept_share:.3}; {o}",
        on + off
    );
    assert!(
        (waiting - slept_share).abs() < 0.03,
        "waiting share {waiting}, slept {slept_share}: {o}"
    );
    if o["source"] == "sched_switch" {
        assert!((share_of(o, "sleep") - slept_share).abs() < 0.03, "{o}");
        let functions = o["functions"].as_array().unwrap();
        let sleep = functions.iter().find(|f| f["name"] == "sleep_ms").unwrap();
        assert!(
            (sleep["seconds"].as_f64().unwrap() - slept).abs() < 0.03 * (on + off),
            "{o}"
        );
        assert!(
            sleep["file"].as_str().unwrap().ends_with("waits.c"),
            "{sleep}"
        );
        // The top function is where the thread spent most time off the CPU: the sleep,
        // unless the machine preempted the spinning for longer.
        let top = &functions[0];
        if share_of(o, "sleep") > share_of(o, "preempted") {
            assert_eq!(top["name"], "sleep_ms", "{o}");
        }
        let call = &o["syscalls"][0]["syscall"];
        assert!(
            call == "nanosleep" || call == "clock_nanosleep",
            "{call}: {o}"
        );
    } else {
        assert_eq!(o["source"], "switch_records");
        assert!((share_of(o, "blocked") - 0.40).abs() < 0.03, "{o}");
    }
    // The on-CPU profile is the spinning: the switch samples are not in it.
    assert_eq!(p["functions"][0]["name"], "spin_us", "{p}");
    assert!(!p["event"].as_str().unwrap().contains("sched_switch"));

    // The wall-clock flamegraph hangs the sleep under its own frame.
    let svg = dir.path().join("wall.svg");
    let out = sparkles(&[
        "report",
        "--wall",
        "--format",
        "svg",
        "-o",
        svg.to_str().unwrap(),
        capture.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&svg).unwrap();
    let reason = if o["source"] == "sched_switch" {
        "sleep"
    } else {
        "blocked"
    };
    assert!(
        text.contains(&format!("[off-cpu: {reason}]")),
        "no wait frame"
    );
    assert!(text.contains("wall clock"));
    // And the table says the shares.
    let out = sparkles(&["report", capture.to_str().unwrap()]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("off-CPU")
            && (table.contains("waiting in") || table.contains("waiting after")),
        "{table}"
    );

    // perf 6.1 reads the capture, the tracepoint's fields included.
    if let Ok(out) = Command::new("perf")
        .args(["script", "--show-switch-events", "-i"])
        .arg(&capture)
        .output()
    {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("PERF_RECORD_SWITCH"), "no switch records");
        if o["source"] == "sched_switch" {
            assert!(text.contains("prev_state=S"), "no decoded sched_switch");
        }
    }
}

#[test]
fn threads_waiting_for_a_lock_are_charged_to_its_call_site() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = waits_program(dir.path()) else {
        return;
    };
    let Some((_, p, _)) = record(dir.path(), &program, "lock") else {
        return;
    };
    let o = &p["offcpu"];
    let on = o["on_cpu_seconds"].as_f64().unwrap();
    let off = o["off_cpu_seconds"].as_f64().unwrap();
    // Four threads on one lock held 1 ms at a time: each waits most of its time.
    assert!(off / (on + off) > 0.5, "{o}");
    if o["source"] != "sched_switch" {
        skip::skip(
            "tracefs",
            "sched:sched_switch is not sampled here: blocking stacks not checked",
        );
        return;
    }
    let source = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/report/waits.c"),
    )
    .unwrap();
    let line = source
        .lines()
        .position(|l| l.contains("the lock's call site"))
        .unwrap()
        + 1;
    let top = &o["functions"][0];
    assert_eq!(top["name"], "take_lock", "{o}");
    assert_eq!(top["line"], line, "{top}");
    assert!(
        o["syscalls"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["syscall"] == "futex"),
        "{o}"
    );
}

/// A capture perf recorded of `sched:sched_switch` alone (no switch records) is profiled as
/// any other: its samples are its profile, not switch-outs; and perf's TRACING_DATA is
/// read (the tracepoint's format, with `prev_state` where the kernel put it).
#[test]
fn perfs_own_sched_switch_capture_is_a_plain_profile() {
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("perf-switch.data");
    let recorded = Command::new("perf")
        .args(["record", "-q", "-e", "sched:sched_switch", "-o"])
        .arg(&capture)
        .args(["--", "sleep", "0.05"])
        .output();
    match recorded {
        Ok(o) if o.status.success() && capture.exists() => {}
        other => {
            // No perf at all, or a perf refused the tracepoint (tracefs not readable).
            let has_perf = Command::new("perf")
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success());
            skip::skip(
                if has_perf { "tracefs" } else { "perf" },
                format!("perf record -e sched:sched_switch: {other:?}"),
            );
            return;
        }
    }
    let header = sparkles(&["script", "--header", capture.to_str().unwrap()]);
    let h: Value = serde_json::from_slice(&header.stdout).unwrap();
    assert_eq!(h["feature_problems"], serde_json::json!([]), "{h}");
    let format = &h["features"]["tracing_data"]["events"][0];
    assert_eq!(format["name"], "sched_switch", "{h}");
    assert_eq!(format["id"], h["attrs"][0]["attr"]["config"], "{h}");
    assert!(format["fields"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["name"] == "prev_state"));
    let report = sparkles(&["report", "--format", "json", capture.to_str().unwrap()]);
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let p: Value = serde_json::from_slice(&report.stdout).unwrap();
    assert!(p["samples"].as_u64().unwrap() > 0, "{p}");
    assert!(
        p["offcpu"].is_null(),
        "no switch records: no off-CPU section"
    );
}
