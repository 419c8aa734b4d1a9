//! The `--instructions` tier: each case counted by callgrind in a child under valgrind.
//! A body whose work is planted +1% at the second build is `higher` in
//! `valgrind.instructions` with an interval narrower than 0.2%; an unchanged body counts
//! the same instructions in every bracket of both runs (spread 0); a case that fails or
//! aborts under valgrind alone passes, its valgrind metrics absent with the reason, and
//! the cases after it are counted; the instruction profiles' exact diff ranks the
//! function the work was planted in first; without valgrind the tier is absent with its
//! reason. Expectations come from the counts themselves: none
//! depends on the machine's speed or load.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;
mod support;

use std::hint::black_box;
use std::process::Command;

use sparkles_bench::explain::MetricVerdict;
use sparkles_bench::Suite;

use support::{run, SERIAL};

/// Set in a rerun's environment: which build of the suite it counts.
const BUILD: &str = "SPARKLES_VALGRIND_TEST_BUILD";

/// Set in the environment of the rerun that sees no valgrind.
const ABSENT: &str = "SPARKLES_VALGRIND_TEST_ABSENT";

/// A function of its own (callgrind names ELF symbols: a function inlined into its caller
/// is its caller's row, its lines in the line view).
#[inline(never)]
fn spin(n: u64) -> u64 {
    let mut x = 1u64;
    for i in 0..n {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
    }
    x
}

/// Build 2 plants 1% more iterations of the loop in `planted`.
fn suite(build: u32) -> Suite {
    let mut s = Suite::new("counted");
    let planted = if build == 2 { 20_200 } else { 20_000 };
    s.case("planted", move |b| b.iter(|| spin(planted)));
    // Kills the child counting it: the cases after it are counted by another.
    s.case("aborts_under_valgrind", |b| {
        b.iter(|| {
            if sparkles_bench::valgrind::running_on_valgrind() {
                std::process::abort();
            }
            spin(1_000)
        })
    });
    s.case("same", |b| b.iter(|| spin(10_000)));
    // Work that grows from call to call: each bracket counts more an iteration than the
    // one before, so it takes them all.
    s.case("varies", |b| {
        let calls = std::sync::atomic::AtomicU64::new(0);
        b.iter(|| {
            let k = calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            spin(10_000 + k % 5_000)
        })
    });
    s.case("fails_under_valgrind", |b| {
        b.try_iter(|| {
            if sparkles_bench::valgrind::running_on_valgrind() {
                Err("this body refuses to run under valgrind")
            } else {
                Ok(spin(1_000))
            }
        })
    });
    // A thread sweep: every thread of it counted, each collecting while it runs the body.
    s.case_threads("sweep", [1, 2], |b| {
        b.iter_threads(|| spin(black_box(5_000)))
    });
    // The reruns under valgrind enter through `rerun` below, with the same build.
    s.reexec_with(
        ["rerun", "--exact", "--nocapture"],
        [(BUILD, build.to_string())],
    );
    s
}

/// Where the parent's reruns under valgrind enter: builds the suite the parent runs and
/// hands it to the harness, which counts the one case asked for and exits. Outside a
/// rerun it does nothing.
#[test]
fn rerun() {
    let Some(build) = std::env::var_os(BUILD) else {
        return;
    };
    let build = build.to_string_lossy().parse().unwrap();
    run(suite(build), &["--bench"]);
    unreachable!("the harness exits in a rerun under valgrind");
}

#[test]
fn a_one_percent_change_is_higher_exactly_and_the_same_code_counts_the_same() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if let Err(why) = sparkles_bench::valgrind::program() {
        skip::skip("valgrind", why.to_string());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let flags = |baseline: &'static str| {
        vec![
            "--bench",
            // The valgrind pass and each case's instruction profile, no sampling.
            "--profile=instructions",
            "--metrics",
            "valgrind.*",
            "--samples",
            "6",
            "--out-dir",
            out,
            baseline,
            "b",
        ]
    };
    let first = run(suite(1), &flags("--save-baseline"));
    assert!(first.all_ok());
    let second = run(suite(2), &flags("--baseline"));
    assert!(second.all_ok());
    let row = |outcome: &sparkles_bench::Outcome, case: &str| {
        outcome
            .rows
            .iter()
            .find(|r| r.case == case)
            .unwrap()
            .clone()
    };

    // A sweep's two threads count twice the instructions of its one (the threads'
    // start and meeting are outside what is counted), and the row says it counted both.
    let sweep = |n: usize| {
        let r = row(&second, &format!("sweep/threads={n}"));
        let v = r.counting.as_ref().unwrap().valgrind.clone().unwrap();
        assert_eq!(v.threads, Some(n), "{v:?}");
        r.metrics["valgrind.instructions"].unwrap()
    };
    let (one, two) = (sweep(1), sweep(2));
    assert!(
        (two / one - 2.0).abs() < 0.01,
        "1 thread {one}, 2 threads {two}"
    );
    assert_eq!(
        row(&second, "same")
            .counting
            .unwrap()
            .valgrind
            .unwrap()
            .threads,
        None
    );

    // The same body: the same count in every bracket of both runs, shown exact in the
    // first two brackets, so no more were taken.
    let (a, b) = (row(&first, "same"), row(&second, "same"));
    let counts: Vec<f64> = a.metric_samples["valgrind.instructions"]
        .iter()
        .chain(&b.metric_samples["valgrind.instructions"])
        .copied()
        .collect();
    assert_eq!(counts.len(), 4, "{counts:?}");
    assert!(counts.iter().all(|c| *c == counts[0]), "{counts:?}");
    let account = b.counting.as_ref().unwrap().valgrind.clone().unwrap();
    assert_eq!(account.brackets, 2, "{account:?}");
    // Without the cache and branch simulation (`--valgrind-sim none`): the same count,
    // and the simulated metrics absent, where the default run beside it has them.
    for id in ["valgrind.l1_misses", "valgrind.branch_misses"] {
        assert!(b.metrics[id].is_some(), "{id}: {:?}", b.metrics);
    }
    let plain = run(
        suite(2),
        &[
            "--bench",
            "--instructions",
            "--valgrind-sim",
            "none",
            "--metrics",
            "valgrind.*",
            "--samples",
            "3",
            "--out-dir",
            out,
            "same",
        ],
    );
    let plain = row(&plain, "same");
    assert_eq!(plain.metrics["valgrind.instructions"], Some(counts[0]));
    for id in [
        "valgrind.l1_misses",
        "valgrind.ll_misses",
        "valgrind.branch_misses",
        "valgrind.estimated_cycles",
    ] {
        assert_eq!(plain.metrics.get(id).copied().flatten(), None, "{id}");
    }
    // Beside it, a count that is not the same from bracket to bracket takes every bracket
    // (eight), and keeps its spread.
    let varies = row(&second, "varies");
    let account = varies.counting.as_ref().unwrap().valgrind.clone().unwrap();
    assert_eq!(account.brackets, 8, "{account:?}");
    let counts = &varies.metric_samples["valgrind.instructions"];
    assert_eq!(counts.len(), 8, "{counts:?}");
    assert!(counts.iter().any(|c| *c != counts[0]), "{counts:?}");
    // About the loop's 10 000 steps of a few instructions each.
    assert!((20_000.0..200_000.0).contains(&counts[0]), "{}", counts[0]);
    let c = b.comparison.as_ref().unwrap();
    let same = c
        .metrics
        .iter()
        .find(|m| m.id == "valgrind.instructions")
        .unwrap();
    assert_eq!(same.verdict, MetricVerdict::InsideTheNoise, "{same:?}");
    assert_eq!(same.change_pct, Some(0.0), "{same:?}");

    // 1% more steps: higher, by 1% less the loop's fixed cost, inside 0.2%.
    let c = row(&second, "planted").comparison.unwrap();
    let planted = c
        .metrics
        .iter()
        .find(|m| m.id == "valgrind.instructions")
        .unwrap();
    eprintln!("planted: {planted:?}");
    assert_eq!(planted.verdict, MetricVerdict::Higher, "{planted:?}");
    let pct = planted.change_pct.unwrap();
    assert!((0.9..=1.0).contains(&pct), "{planted:?}");
    let width = planted.ci_high_pct.unwrap() - planted.ci_low_pct.unwrap();
    assert!(width < 0.2, "{planted:?}");

    // The instruction profiles (read back with the harness's `profile` feature alone).
    #[cfg(feature = "profile")]
    {
        // The instruction profiles' exact diff ranks the function the work was planted in
        // first: 200 more steps of its loop an iteration.
        let account = row(&second, "planted").counting.unwrap().valgrind.unwrap();
        let first = account
            .movers
            .first()
            .unwrap_or_else(|| panic!("{account:?}"));
        assert!(first.name.ends_with("spin"), "{account:?}");
        assert!(first.new > first.base, "{account:?}");
        let pct = first.delta_pct.unwrap();
        assert!((0.99..=1.01).contains(&pct), "{account:?}");
        assert!(
            account.top.iter().any(|h| h.name.ends_with("spin")),
            "{account:?}"
        );
        let case_dir = dir.path().join("profile").join("planted");
        for file in [
            "profile-instructions.json",
            "flamegraph-instructions.svg",
            "diff-instructions.json",
            "callgraph-instructions.json",
        ] {
            assert!(case_dir.join(file).is_file(), "{file}");
        }
        let svg = std::fs::read_to_string(case_dir.join("flamegraph-instructions.svg")).unwrap();
        assert!(svg.contains("spin"));
        // The call graph has the edge into the planted function, its cost per iteration.
        let calls: Vec<serde_json::Value> = serde_json::from_str(
            &std::fs::read_to_string(case_dir.join("callgraph-instructions.json")).unwrap(),
        )
        .unwrap();
        let into = calls
            .iter()
            .find(|e| e["callee"].as_str().unwrap().ends_with("spin"))
            .unwrap_or_else(|| panic!("{calls:?}"));
        let per = into["instructions"].as_f64().unwrap();
        assert!(
            (first.new..first.new * 1.01).contains(&per),
            "{into} {first:?}"
        );
        // The unchanged case: no function moved.
        let same = row(&second, "same").counting.unwrap().valgrind.unwrap();
        assert!(same.movers.is_empty(), "{same:?}");
    }

    // A case that kills its child: absent with why; the next case was counted.
    let aborts = row(&second, "aborts_under_valgrind");
    assert!(aborts.ok);
    assert_eq!(aborts.metrics["valgrind.instructions"], None);
    let why = aborts.counting.unwrap().valgrind.unwrap().error.unwrap();
    assert!(
        why.contains("the child under valgrind ended") && why.contains("while counting the case"),
        "{why}"
    );

    // Natively the case passes; under valgrind it fails, and its counts are absent with
    // the reason.
    let fails = row(&second, "fails_under_valgrind");
    assert!(fails.ok);
    assert_eq!(fails.metrics["valgrind.instructions"], None);
    let account = fails.counting.unwrap().valgrind.unwrap();
    let why = account.error.unwrap();
    assert!(
        why.contains("this body refuses to run under valgrind"),
        "{why}"
    );
}

#[test]
fn without_valgrind_the_tier_is_absent_with_its_reason() {
    if std::env::var_os(ABSENT).is_some() {
        // The rerun: valgrind named where there is none.
        let out = run(
            suite(1),
            &["--bench", "--instructions", "--samples", "3", "same"],
        );
        let row = &out.rows[0];
        assert!(row.ok);
        assert_eq!(row.metrics.get("valgrind.instructions"), Some(&None));
        assert!(row
            .counting
            .as_ref()
            .and_then(|c| c.valgrind.as_ref())
            .is_none());
        run(suite(1), &["--list-metrics"]);
        run(suite(1), &["--capabilities"]);
        return;
    }
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "without_valgrind_the_tier_is_absent_with_its_reason",
            "--exact",
            "--nocapture",
        ])
        .env(ABSENT, "1")
        .env("SPARKLES_VALGRIND", "/nonexistent/valgrind")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let why = if cfg!(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )) {
        "/nonexistent/valgrind (from SPARKLES_VALGRIND) is not an executable file"
    } else {
        "x86_64 and aarch64 Linux only"
    };
    // The run says so once, naming every metric of the tier.
    assert!(
        stderr.contains("note: metrics valgrind.instructions, valgrind.l1_misses")
            && stderr.contains(&format!("unavailable: {why}")),
        "{stderr}"
    );
    // --list-metrics and --capabilities show the tier and why it is absent.
    let listed = stdout
        .lines()
        .find(|l| l.starts_with("valgrind.instructions"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(listed.contains("unavailable"), "{listed}");
    assert!(stdout.contains(why), "{stdout}");
    assert!(
        stdout.contains(&format!("valgrind (--instructions): absent: {why}")),
        "{stdout}"
    );
}
