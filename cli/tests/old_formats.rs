//! Captures of perf's oldest and newest formats (testdata/perf-data/: a perf 3.3
//! `PERFFILE` capture and a perf 6.16 pipe capture of COMPRESSED2 records) profiled and
//! diffed by the command, with perf 6.1's sample counts (its `perf script` lines, kept
//! beside each file).

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;
mod support;

use std::path::PathBuf;

use support::sparkles;

fn testdata(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/perf-data")
        .join(name)
}

/// perf 6.1's samples of a capture: the lines of its `perf script`, kept beside it.
fn perf_samples(golden: &str) -> u64 {
    let text = std::fs::read_to_string(testdata(golden)).unwrap();
    text.lines().filter(|l| !l.trim().is_empty()).count() as u64
}

fn report_json(file: &str) -> serde_json::Value {
    let path = testdata(file);
    let out = sparkles(&["report", path.to_str().unwrap(), "--format", "json"]);
    assert!(
        out.status.success(),
        "{file}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_perf_3_capture_is_profiled_with_perfs_sample_count() {
    let json = report_json("perffile-v1.perf3.3-cycles.perf.data");
    assert_eq!(
        json["samples"].as_u64(),
        Some(perf_samples("perffile-v1.perf3.3-cycles.perf61-script.txt"))
    );
}

#[test]
fn a_compressed2_pipe_capture_is_profiled_with_perfs_sample_count() {
    let json = report_json("fibo.compressed2.pipe.data");
    assert_eq!(
        json["samples"].as_u64(),
        Some(perf_samples("fibo.compressed2.pipe.perf61-script.txt"))
    );
}

#[test]
fn old_captures_diff_as_any_other() {
    // `sparkles diff` tells a capture from a profile.json by its magic: PERFFILE too.
    let a = testdata("perffile-v1.perf3.3-cycles.perf.data");
    let out = sparkles(&[
        "diff",
        a.to_str().unwrap(),
        a.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let diff: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(diff.is_object(), "{diff}");
}
