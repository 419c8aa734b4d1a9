//! `sparkles compare` on a repository of its own: a package whose bench has an unchanged
//! case and two cases whose work the second commit plants 25% and 2% more of, compared
//! against the first commit. The planted cases are found (the 2% one wherever the
//! machine's own null resolves it), the unchanged one is within a few percent, the null
//! is printed beside each verdict; the variant's `sparkles.bench/1` rows carry the
//! comparison, both counting passes' metrics and the explanation; the run report shows
//! both sides; a case on one side only is listed; a revision that does not resolve and
//! one whose bench does not build are clear errors.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/planted_repo.rs"]
mod planted_repo;
#[path = "../../testdata/support/skip.rs"]
mod skip;

use planted_repo::repository;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace's target folder, which the test package shares (its dependencies are
/// built once).
fn target_dir() -> PathBuf {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_sparkles"));
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

fn compare(dir: &Path, target: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sparkles"))
        .arg("compare")
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .output()
        .unwrap()
}

#[test]
fn compare_finds_the_planted_change_with_the_null_beside_it() {
    if Command::new("git").arg("--version").output().is_err() {
        skip::skip(
            "git",
            "git is not installed: compare builds revisions with it",
        );
        return;
    }
    let repo = tempfile::tempdir().unwrap();
    let bench = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench-integration");
    repository(
        repo.path(),
        &bench,
        &[
            ("spin/planted", 40_000, 50_000),
            ("spin/plus2pct", 50_000, 51_000),
        ],
        true,
    );
    let target = target_dir();
    let json = repo.path().join("compare.jsonl");
    let bench_json = repo.path().join("rows.jsonl");

    // A file to write in a folder that does not exist: said before anything is built.
    let out = compare(
        repo.path(),
        &target,
        &[
            "--base",
            "HEAD~1",
            "--bench-json",
            "/no/such/folder/rows.jsonl",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--bench-json") && err.contains("/no/such/folder"),
        "{err}"
    );

    // A revision that does not resolve.
    let out = compare(repo.path(), &target, &["--base", "no-such-rev"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--base") && err.contains("'no-such-rev' does not name a commit"),
        "{err}"
    );

    // A base whose bench does not build.
    let out = compare(
        repo.path(),
        &target,
        &["--base", "HEAD~2", "--time", "100ms"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("do not build"), "{err}");

    let out = compare(
        repo.path(),
        &target,
        &[
            "--base",
            "HEAD~1",
            "--time",
            "2s",
            "--profile",
            "--profile-time",
            "300ms",
            "--json",
            json.to_str().unwrap(),
            "--bench-json",
            bench_json.to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{err}\n{table}");
    eprintln!("{err}\n{table}");
    assert!(
        err.contains("spin/new: only in the variant: not compared"),
        "{err}"
    );
    assert!(table.contains("null"), "{table}");
    let rows: Vec<serde_json::Value> = std::fs::read_to_string(&json)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 3, "{rows:?}");
    let row = |case: &str| rows.iter().find(|r| r["case"] == case).unwrap();
    for r in &rows {
        assert_eq!(r["schema"], "sparkles.compare/1");
        assert!(r["paired"]["rounds"].as_u64().unwrap() >= 6, "{r}");
        assert!(r["paired"]["null_ci_low_pct"].is_number(), "{r}");
        assert_eq!(r["base_rev"].as_str().unwrap().len(), 40, "{r}");
    }
    // 25% more work, measured through the load of a busy machine.
    let planted = row("spin/planted");
    let change = planted["delta_pct"].as_f64().unwrap();
    assert!((12.0..40.0).contains(&change), "{planted}");
    assert_eq!(planted["verdict"], "regression", "{planted}");
    // The same code on both sides: near zero (its verdict is the statistics' to make:
    // the unit tests of `paired` hold its error rates).
    let same = row("spin/same");
    assert!(same["delta_pct"].as_f64().unwrap().abs() < 8.0, "{same}");
    // 2% more work: found wherever this machine's null (base against base) is narrow
    // enough to resolve it; on a machine too noisy for that, at least never an
    // improvement, and the reason said.
    let small = row("spin/plus2pct");
    let null = &small["paired"];
    let null_width =
        null["null_ci_high_pct"].as_f64().unwrap() - null["null_ci_low_pct"].as_f64().unwrap();
    if null_width <= 1.2 {
        assert_eq!(small["verdict"], "regression", "{small}");
        assert!(
            (0.5..4.0).contains(&small["delta_pct"].as_f64().unwrap()),
            "{small}"
        );
    } else {
        skip::skip(
            "quiet_machine",
            format!("the null's interval is {null_width:.1} points wide here: a 2% change is not resolvable, only checked not to read as an improvement"),
        );
        assert_ne!(small["verdict"], "improvement", "{small}");
    }

    // The variant's rows, as the harness writes them, with the side-by-side comparison.
    let bench_rows: Vec<serde_json::Value> = std::fs::read_to_string(&bench_json)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(bench_rows.len(), 3, "{bench_rows:?}");
    for r in &bench_rows {
        assert_eq!(r["schema"], "sparkles.bench/1", "{r}");
        let c = &r["comparison"];
        let line = row(r["case"].as_str().unwrap());
        assert_eq!(c["verdict"], line["verdict"], "{r}");
        assert_eq!(c["paired"]["rounds"], line["paired"]["rounds"], "{r}");
        assert_eq!(c["base_rev"], line["base_rev"], "{r}");
        assert_eq!(c["variant_rev"], line["variant_rev"], "{r}");
        assert_eq!(
            r["timing"]["samples"].as_array().unwrap().len() as u64,
            c["paired"]["rounds"].as_u64().unwrap(),
            "{r}"
        );
        // Both sides counted: the metrics compared, the explanation quotes the null.
        assert!(!r["metrics"].as_object().unwrap().is_empty(), "{r}");
        assert!(!c["metrics"].as_array().unwrap().is_empty(), "{r}");
        let why = c["explanation"]["text"].as_str().unwrap();
        assert!(why.contains("(null "), "{why}");
    }
    let planted_row = bench_rows
        .iter()
        .find(|r| r["case"] == "spin/planted")
        .unwrap();
    let why = planted_row["comparison"]["explanation"]["text"]
        .as_str()
        .unwrap();
    assert!(why.starts_with("regression +"), "{why}");
    assert!(
        table.contains(&format!("spin/planted: why: {why}")),
        "{table}"
    );

    // The run report: both sides of every case, the null beside each verdict.
    let report = target.join("sparkles/compare/planted/report/index.html");
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(
        err.contains(&format!("report: {}", report.display())),
        "{err}"
    );
    assert!(html.contains("measured side by side"), "{html}");
    for case in ["spin/planted", "spin/plus2pct", "spin/same"] {
        let anchor = format!("id=\"{}\"", sparkles_bench::slug(case));
        assert!(
            html.contains(&anchor),
            "{anchor} not in {}",
            report.display()
        );
    }
    assert!(html.contains("null (base against base)"), "report");

    // With --profile both sides of each case are profiled and their hot functions diffed.
    for r in &rows {
        let p = &r["profile"];
        if let Some(why) = p["error"].as_str() {
            skip::skip(
                "perf_event",
                format!("compare --profile sampled nothing: {why}"),
            );
            continue;
        }
        for side in ["base_capture", "variant_capture"] {
            let capture = PathBuf::from(p[side].as_str().unwrap());
            assert!(capture.is_file(), "{r}");
            assert!(capture.with_file_name("profile.json").is_file(), "{r}");
        }
        // The variant's process diffed its profile against the base's: the differential
        // flamegraph beside it, on the report page.
        let variant = PathBuf::from(p["variant_capture"].as_str().unwrap());
        assert!(variant.with_file_name("diff.svg").is_file(), "{r}");
        assert!(html.contains("differential flamegraph of"), "report");
        let diff: serde_json::Value =
            serde_json::from_slice(&std::fs::read(p["diff"].as_str().unwrap()).unwrap()).unwrap();
        assert_eq!(diff["schema"], "sparkles.diff/1", "{diff}");
        assert!(diff["base_samples"].as_u64().unwrap() > 0, "{diff}");
        assert!(
            table.contains(&format!(
                "{}: hot functions, base against variant",
                r["case"].as_str().unwrap()
            )),
            "{table}"
        );
    }

    // The worktrees the comparison made are the repository's; they go with it.
    let revs = target.join("sparkles/revs");
    for rev in ["HEAD~1", "HEAD~2"] {
        let commit = planted_repo::git(repo.path(), &["rev-parse", rev]);
        let _ = std::fs::remove_dir_all(revs.join(commit));
    }
}
