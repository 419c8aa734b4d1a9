//! The harness end to end, as `cargo bench -- …` drives it: JSON rows, baselines, tier 0
//! and the harness's own cost.
//!
//! Tier 0 counts for the whole process, so these tests take a lock: a test allocating on
//! another thread would otherwise show up in this one's fault counts.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

#[path = "../benches/demo_suite/mod.rs"]
mod demo;
mod support;

use sparkles_bench::{run_main, Suite};

use support::{args, read_rows, run, SERIAL};

const FAST_DEMO_CASES: [&str; 3] = ["hashmap/insert", "io/read_file", "compute/sieve"];

#[test]
fn bench_json_has_the_documented_layout_and_baselines_give_verdicts() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().to_str().unwrap();
    let json = dir.path().join("out.jsonl");
    let mut flags = vec![
        "--bench",
        "--bench-min-time",
        "1ms",
        "--samples",
        "6",
        "--out-dir",
        out_dir,
        "--bench-json",
        json.to_str().unwrap(),
        "--save-baseline",
        "b",
    ];
    flags.extend(FAST_DEMO_CASES);
    let first = run(demo::suite(), &flags);
    assert!(first.all_ok());

    let rows = read_rows(&json);
    assert_eq!(rows.len(), FAST_DEMO_CASES.len());
    for row in &rows {
        let keys: Vec<_> = row
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "schema",
                "case",
                "slug",
                "ok",
                "error",
                "iterations",
                "timing",
                "metrics",
                "metric_samples"
            ]
        );
        assert_eq!(row["schema"], "sparkles.bench/1");
        assert_eq!(row["ok"], true);
        assert!(row["error"].is_null());
        assert!(row["iterations"].as_u64().unwrap() >= 1);
        let timing = &row["timing"];
        assert_eq!(timing["unit"], "ns");
        assert_eq!(timing["samples"].as_array().unwrap().len(), 6);
        let (min, median, max) = (
            timing["min"].as_f64().unwrap(),
            timing["median"].as_f64().unwrap(),
            timing["max"].as_f64().unwrap(),
        );
        assert!(0.0 < min && min <= median && median <= max);
        let metrics = row["metrics"].as_object().unwrap();
        assert!(metrics.contains_key("rusage.minor_faults"));
        assert!(metrics.contains_key("throughput.bytes_per_sec"));
    }
    let io = rows
        .iter()
        .find(|r| r["case"] == "io/read_file/1MiB")
        .unwrap();
    assert_eq!(io["slug"], "io_read_file_1MiB");
    let rate = io["metrics"]["throughput.bytes_per_sec"].as_f64().unwrap();
    let median = io["timing"]["median"].as_f64().unwrap();
    assert!((rate - demo::READ_BYTES as f64 * 1e9 / median).abs() / rate < 1e-9);
    // Reading 1 MiB through the page cache: at least the file's bytes through read(2).
    let rchar = io["metrics"]["io.rchar"].as_f64().unwrap();
    assert!(rchar >= demo::READ_BYTES as f64, "rchar {rchar}");

    let saved = first.saved_baseline.unwrap();
    assert!(
        saved.ends_with("baselines/b/demo.jsonl"),
        "{}",
        saved.display()
    );
    assert!(saved.with_file_name("demo.env.json").is_file());

    let mut flags = vec![
        "--bench",
        "--bench-min-time",
        "1ms",
        "--samples",
        "6",
        "--out-dir",
        out_dir,
        "--baseline",
        "b",
    ];
    flags.extend(FAST_DEMO_CASES);
    let second = run(demo::suite(), &flags);
    // A suite run from a test function keeps no executable: the comparison is unpaired,
    // each verdict held to the case's between-run noise (no history here: the default,
    // said as such).
    assert!(!saved.with_file_name("demo.bench").exists());
    for row in &second.rows {
        let c = row.comparison.as_ref().expect("every ok case is compared");
        assert!(c.ci_low_pct.unwrap() <= c.ci_high_pct.unwrap());
        assert!(c.baseline_median_ns > 0.0);
        assert_eq!(
            c.method,
            Some(sparkles_bench::record::Method::Unpaired),
            "{c:?}"
        );
        let noise = c.between_run_noise.as_ref().unwrap();
        assert_eq!(noise.pct, 5.0, "{noise:?}");
        assert!(noise.source.starts_with("default"), "{noise:?}");
        // A verdict only beyond the between-run noise.
        let change = matches!(
            c.verdict,
            sparkles_bench::stats::Verdict::Regression
                | sparkles_bench::stats::Verdict::Improvement
        );
        assert!(!change || c.delta_pct.abs() > noise.pct, "{c:?}");
    }
}

#[test]
fn a_corrupt_or_missing_baseline_fails_before_measuring_and_is_left_alone() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().to_str().unwrap();
    let bad = dir.path().join("baselines/bad/demo.jsonl");
    std::fs::create_dir_all(bad.parent().unwrap()).unwrap();
    std::fs::write(&bad, "{\"schema\": \"sparkles.bench/1\", \"case\": \n").unwrap();
    let json = dir.path().join("never.jsonl");
    let common = [
        "--bench",
        "--out-dir",
        out_dir,
        "--bench-json",
        json.to_str().unwrap(),
        "compute/sieve",
    ];
    for flags in [
        &["--baseline", "bad"][..],
        &["--save-baseline", "bad"][..],
        &["--baseline", "missing"][..],
    ] {
        let all: Vec<&str> = common.iter().chain(flags).copied().collect();
        assert_eq!(run_main(demo::suite(), args(&all)), 2, "{flags:?}");
    }
    assert_eq!(
        std::fs::read_to_string(&bad).unwrap(),
        "{\"schema\": \"sparkles.bench/1\", \"case\": \n"
    );
    assert!(!json.exists(), "nothing is written by a run that failed");
}

/// A filter that matches no case runs nothing and writes nothing: the last run's report,
/// rows and baseline stay as they were (cargo passes one filter to every bench target,
/// so this is no failure).
#[test]
fn a_filter_that_matches_nothing_writes_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().to_str().unwrap();
    let json = dir.path().join("rows.jsonl");
    let run = |filter: &str| {
        run_main(
            demo::suite(),
            args(&[
                "--bench",
                "--samples",
                "6",
                "--out-dir",
                out_dir,
                "--bench-json",
                json.to_str().unwrap(),
                "--save-baseline",
                "b",
                filter,
            ]),
        )
    };
    assert_eq!(run("compute/sieve"), 0);
    let report = sparkles_bench::run_report::path_in(dir.path());
    let kept = |p: &std::path::Path| std::fs::read(p).unwrap();
    let before = [kept(&json), kept(&report)];
    assert_eq!(run("no/such/case"), 0);
    assert_eq!([kept(&json), kept(&report)], before);
    let saved = dir.path().join("baselines/b/demo.jsonl");
    assert!(std::fs::read_to_string(&saved)
        .unwrap()
        .contains("compute/sieve"));
}

#[test]
#[cfg(unix)] // getrusage's fault counts
fn tier0_reads_zero_faults_for_a_quiet_body_and_one_per_touched_page() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut suite = Suite::new("tier0");
    suite.case("quiet", |b| {
        let mut x = 1u64;
        b.iter(|| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            x
        })
    });
    suite.case("touch", |b| {
        b.try_iter(|| demo::touch_fresh_pages(demo::TOUCH_BYTES))
    });
    let outcome = run(
        suite,
        &[
            "--bench",
            "--bench-min-time",
            "2ms",
            "--samples",
            "3",
            "--metrics",
            "rusage.*,io.*",
        ],
    );
    let metric = |case: &str, id: &str| {
        let row = outcome.rows.iter().find(|r| r.case == case).unwrap();
        row.metrics[id].unwrap()
    };
    for id in [
        "rusage.minor_faults",
        "rusage.major_faults",
        "io.syscr",
        "io.rchar",
    ] {
        let v = metric("quiet", id);
        assert!(
            v < 0.01,
            "{id} = {v} per iteration for a body that does nothing"
        );
    }
    let page = demo::page_size() as f64;
    let pages = demo::TOUCH_BYTES as f64 / page;
    let faults = metric("touch", "rusage.minor_faults");
    assert!(
        (pages * 0.98..=pages * 1.05).contains(&faults),
        "{faults} faults per iteration for {pages} fresh pages"
    );
}

#[test]
fn an_empty_body_costs_a_few_ns() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut suite = Suite::new("empty");
    suite.case("empty", |b| b.iter(|| ()));
    suite.case("batched_empty", |b| b.iter_batched(|| (), |()| (), |()| ()));
    let outcome = run(
        suite,
        &[
            "--bench",
            "--bench-min-time",
            "2ms",
            "--samples",
            "8",
            "--metrics",
            "throughput.*",
        ],
    );
    // What the harness adds to an iteration is the fastest sample's time: a sample the
    // scheduler interrupts (CI's stress round runs this beside a busy loop on every CPU,
    // where batched_empty's median read 5.97 ns and its fastest sample 2.06 ns) reads the
    // time the thread waited, not more work. Eight samples all interrupted would fail.
    for row in &outcome.rows {
        let fastest = row.timing.as_ref().unwrap().summary.min;
        assert!(
            fastest < 5.0,
            "{}: {fastest} ns per empty iteration in the fastest sample",
            row.case
        );
    }
}

#[test]
fn failing_cases_fail_the_run_but_not_the_others() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let suite = || {
        let mut s = Suite::new("f");
        s.case("good", |b| b.iter(|| 1));
        s.case("bad", |b| b.iter(|| -> u8 { panic!("deliberate") }));
        s
    };
    assert_eq!(run_main(suite(), args(&["--quiet"])), 1);
    assert_eq!(run_main(suite(), args(&["good"])), 0);
    let outcome = run(
        suite(),
        &["--bench", "--bench-min-time", "1ms", "--samples", "2"],
    );
    let good = outcome.rows.iter().find(|r| r.case == "good").unwrap();
    let bad = outcome.rows.iter().find(|r| r.case == "bad").unwrap();
    assert!(good.ok && good.timing.is_some());
    assert!(!bad.ok && bad.timing.is_none());
    assert!(bad.error.as_deref().unwrap().contains("deliberate"));
    assert!(bad.metrics.values().all(Option::is_none));
}

#[test]
fn flags_that_cargo_and_nextest_pass_are_accepted() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut s = Suite::new("n");
    s.case("one", |b| b.iter(|| 1));
    assert_eq!(run_main(s, args(&["--list", "--format", "terse"])), 0);
    let mut s = Suite::new("n");
    s.case("one", |b| b.iter(|| 1));
    assert_eq!(
        run_main(
            s,
            args(&["--exact", "one", "--nocapture", "--test-threads", "1", "-q"])
        ),
        0
    );
    let mut s = Suite::new("n");
    s.case("one", |b| b.iter(|| 1));
    assert_eq!(run_main(s, args(&["--bench", "--metrics", "nosuch"])), 2);
}

#[test]
fn the_demo_chase_is_one_cycle() {
    let next = demo::chase_cycle(1000);
    assert_eq!(demo::chase(&next, 0, 1000), 0);
    assert!((1..1000).all(|k| demo::chase(&next, 0, k) != 0));
}

#[test]
fn the_demo_inputs_are_what_the_cases_claim() {
    let doc = demo::json_document(1500);
    assert!((200_000..600_000).contains(&doc.len()), "{}", doc.len());
    let parsed: Vec<demo::Record> = serde_json::from_slice(&doc).unwrap();
    assert_eq!(parsed.len(), 1500);
    assert_eq!(demo::sieve(100), 25);
    let page = demo::page_size();
    assert_eq!(demo::touch_fresh_pages(64 * page).unwrap(), 64);
}

/// Where this build cannot sample (off Linux, or `--no-default-features`): `--profile`
/// still times every case and writes valid rows, no case has a profile or a capture, and
/// the reason is the catalog's, said once for the run (one unavailable-metrics note).
#[test]
fn profile_where_nothing_can_be_sampled_times_every_case_and_says_why_once() {
    let Some(why) = sparkles_sampler::UNAVAILABLE else {
        skip::skip(
            "portable",
            "this build samples (the kernel edge is compiled in)",
        );
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("rows.jsonl");
    let out_dir = dir.path().join("out");
    let mut flags = vec![
        "--bench",
        "--profile",
        "--samples",
        "4",
        "--out-dir",
        out_dir.to_str().unwrap(),
        "--bench-json",
        json.to_str().unwrap(),
    ];
    flags.extend(FAST_DEMO_CASES);
    let outcome = run(demo::suite(), &flags);
    assert!(outcome.all_ok());
    assert_eq!(outcome.rows.len(), FAST_DEMO_CASES.len());
    for row in &outcome.rows {
        assert!(
            row.timing.as_ref().is_some_and(|t| t.summary.median > 0.0),
            "{row:?}"
        );
        assert!(row.profile.is_none(), "{row:?}");
        assert_eq!(row.metrics.get("profile.samples").copied().flatten(), None);
    }
    for row in read_rows(&json) {
        assert_eq!(row["schema"], "sparkles.bench/1");
        assert!(row["timing"]["median"].as_f64().unwrap() > 0.0, "{row}");
        assert!(row["profile"].is_null(), "{row}");
    }
    assert!(!out_dir.join("profile").exists());
    let profile = sparkles_bench::profile::descriptors(sparkles_sampler::UNAVAILABLE);
    let notes = sparkles_bench::catalog::unavailable_notes(&profile, |_| true);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains(why), "{}", notes[0]);
}
