//! Settings per group and case: a case's own over its group's, its group's over the
//! suite's, the command line's over them all, in either sample order; a warm-up runs the
//! body before its iterations are calibrated.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

mod support;

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sparkles_bench::{Settings, Suite};
use support::{run, SERIAL};

#[inline(never)]
fn spin(n: u64) -> u64 {
    let mut x = 1u64;
    for i in 0..n {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
    }
    x
}

fn suite() -> Suite {
    let mut s = Suite::new("settings");
    s.default_samples(9);
    s.case("plain", |b| b.iter(|| spin(100)));
    s.group("g", |g| {
        g.samples(7);
        g.case("grouped", |b| b.iter(|| spin(100)));
        g.case_with("own", Settings::new().samples(5), |b| b.iter(|| spin(100)));
        g.group("inner", |g| {
            g.case("nested", |b| b.iter(|| spin(100)));
        });
    });
    s
}

fn samples_of(outcome: &sparkles_bench::Outcome) -> Vec<(String, usize)> {
    outcome
        .rows
        .iter()
        .map(|r| (r.case.clone(), r.timing.as_ref().unwrap().samples.len()))
        .collect()
}

#[test]
fn a_groups_setting_wins_over_the_suites_and_loses_to_the_flag() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let quick = ["--bench-min-time", "200us", "--metrics", "throughput.*"];
    for order in ["round-robin", "blocked"] {
        let mut flags = vec!["--bench", "--sample-order", order];
        flags.extend(quick);
        let outcome = run(suite(), &flags);
        let want = [
            ("plain", 9),
            ("g/grouped", 7),
            ("g/own", 5),
            ("g/inner/nested", 7),
        ];
        assert_eq!(
            samples_of(&outcome),
            want.map(|(c, n)| (c.to_string(), n)),
            "{order}"
        );
        // The flag wins over every setting.
        flags.extend(["--samples", "4"]);
        let outcome = run(suite(), &flags);
        assert!(
            samples_of(&outcome).iter().all(|(_, n)| *n == 4),
            "{order}: {:?}",
            samples_of(&outcome)
        );
    }
}

#[test]
fn a_warm_up_runs_the_body_before_it_is_calibrated() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let calls = Arc::new(AtomicU64::new(0));
    let counted = calls.clone();
    let mut s = Suite::new("warmed");
    s.case_with(
        "warmed",
        Settings::new()
            .samples(6)
            .warm_up(Duration::from_millis(500))
            .sample_time(Duration::from_micros(100)),
        move |b| {
            b.iter(|| {
                counted.fetch_add(1, Ordering::Relaxed);
                spin(100)
            })
        },
    );
    let start = std::time::Instant::now();
    let outcome = run(s, &["--bench", "--metrics", "throughput.*"]);
    assert!(start.elapsed() >= Duration::from_millis(500));
    let row = &outcome.rows[0];
    let timed = row.iterations * (6 + 2);
    // The timed samples and the calibration (fewer than twice the iterations) call the
    // body fewer than 8 times the iterations; half a second of warm-up of a body of
    // about 100 ns calls it tens of times more, on any machine that keeps the
    // calibrated sample near 100 µs.
    let n = calls.load(Ordering::Relaxed);
    assert!(
        n > 20 * timed,
        "{n} calls, {} iterations a sample",
        row.iterations
    );
}
