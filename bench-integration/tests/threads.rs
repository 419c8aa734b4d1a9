//! Thread sweeps: a body run on N threads at once for each N of a list, released
//! together each sample. A lock every thread takes for the whole of each call makes the
//! time per call per thread grow with N, and its throughput stay flat; a body of work of
//! each thread's own beside it scales where the machine has the CPUs. The profile pass
//! samples every thread of the sweep, and names the lock.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

#[cfg(feature = "profile")]
#[path = "../../testdata/support/skip.rs"]
mod skip;
mod support;

use std::hint::black_box;
use std::sync::Mutex;

use sparkles_bench::{Suite, Throughput};
use support::{run, SERIAL};

#[inline(never)]
fn spin(n: u64) -> u64 {
    let mut x = 1u64;
    for i in 0..n {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
    }
    x
}

/// Held by every thread for the whole of each call: only one thread runs at a time.
#[inline(never)]
fn under_the_lock(lock: &Mutex<u64>) {
    let mut held = lock.lock().unwrap_or_else(|e| e.into_inner());
    *held = held.wrapping_add(spin(black_box(2_000)));
}

fn suite() -> Suite {
    let mut s = Suite::new("sweeps");
    s.group("sweep", |g| {
        g.case_threads("locked", [1, 2], |b| {
            let lock = Mutex::new(0u64);
            b.iter_threads(|| under_the_lock(&lock));
        });
        g.case_threads("own_work", [1, 2], |b| {
            b.throughput(Throughput::Elements(2_000));
            b.iter_threads(|| spin(black_box(2_000)));
        });
    });
    // A sweep's case calling plain iter: failed with the reason; the case beside it runs.
    s.case_threads("wrong_form", [2], |b| b.iter(|| spin(black_box(10))));
    // The same work as own_work's, on one thread through plain iter.
    s.case("alone", |b| b.iter(|| spin(black_box(2_000))));
    s
}

/// The case's fastest sample, per iteration per thread: what the body costs where
/// nothing else ran beside it (a busy machine only adds time: two CPU hogs moved these
/// cases' medians up to 1.8x against each other).
fn fastest(outcome: &sparkles_bench::Outcome, case: &str) -> f64 {
    let row = outcome.rows.iter().find(|r| r.case == case).unwrap();
    row.timing.as_ref().unwrap().summary.min
}

/// The case's fastest sample less its run-queue wait, where the kernel says it (one
/// thread's: a CPU hog's time slices beside it took half of every sample here), else
/// its fastest.
fn fastest_less_wait(outcome: &sparkles_bench::Outcome, case: &str) -> f64 {
    let timing = outcome
        .rows
        .iter()
        .find(|r| r.case == case)
        .unwrap()
        .timing
        .as_ref()
        .unwrap();
    timing.samples_less_wait().map_or(timing.summary.min, |s| {
        s.into_iter().fold(f64::INFINITY, f64::min)
    })
}

fn median(outcome: &sparkles_bench::Outcome, case: &str) -> f64 {
    let row = outcome.rows.iter().find(|r| r.case == case).unwrap();
    row.timing.as_ref().unwrap().summary.median
}

#[test]
fn a_contended_lock_takes_longer_per_thread_with_more_threads() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let outcome = run(suite(), &["--bench", "--samples", "30"]);
    let names: Vec<&str> = outcome.rows.iter().map(|r| r.case.as_str()).collect();
    assert_eq!(
        names,
        [
            "sweep/locked/threads=1",
            "sweep/locked/threads=2",
            "sweep/own_work/threads=1",
            "sweep/own_work/threads=2",
            "wrong_form/threads=2",
            "alone"
        ]
    );
    let row = |case: &str| outcome.rows.iter().find(|r| r.case == case).unwrap();
    assert_eq!(row("sweep/locked/threads=2").threads, Some(2));
    assert_eq!(row("sweep/locked/threads=1").threads, Some(1));
    assert_eq!(row("alone").threads, None);
    let json = serde_json::to_value(row("sweep/own_work/threads=2")).unwrap();
    assert_eq!(json["threads"], 2, "{json}");

    // Two threads through one lock: each call waits for the other's, so a call per thread
    // takes about twice as long (wake-ups on top): the two together run no faster than
    // one did.
    let locked = fastest(&outcome, "sweep/locked/threads=2")
        / fastest_less_wait(&outcome, "sweep/locked/threads=1");
    let own = fastest(&outcome, "sweep/own_work/threads=2")
        / fastest_less_wait(&outcome, "sweep/own_work/threads=1");
    eprintln!("per thread at 2 threads: locked {locked:.2}x, own work {own:.2}x");
    assert!(locked > 1.6, "locked: {locked:.2}x per thread at 2 threads");
    // One thread of a sweep is the plain case: its gate and its helpers' start cost it
    // nothing a sample can see (how two threads of work of their own scale is the
    // machine's: a VM's two vCPUs run them up to 2x slower each).
    let alone = fastest_less_wait(&outcome, "sweep/own_work/threads=1")
        / fastest_less_wait(&outcome, "alone");
    assert!(
        (0.9..1.1).contains(&alone),
        "one thread of a sweep: {alone:.2}x the plain case"
    );
    // The rate counts the calls of all threads: the declared elements times the threads.
    let rate = |case: &str| row(case).metrics["throughput.elements_per_sec"].unwrap();
    let per_call = |case: &str| 2_000.0 / (median(&outcome, case) * 1e-9);
    assert!(
        (rate("sweep/own_work/threads=2") / per_call("sweep/own_work/threads=2") - 2.0).abs()
            < 0.01
    );
    assert!(
        (rate("sweep/own_work/threads=1") / per_call("sweep/own_work/threads=1") - 1.0).abs()
            < 0.01
    );
    // With none declared, calls.
    assert!(row("sweep/locked/threads=2").metrics["throughput.elements_per_sec"].is_some());

    let wrong = row("wrong_form/threads=2");
    assert!(!wrong.ok);
    assert!(
        wrong.error.as_deref().unwrap().contains("iter_threads"),
        "{wrong:?}"
    );
    assert!(row("alone").ok);
}

/// Builds without the `profile` feature (`--no-default-features`) have no profile pass.
#[cfg(feature = "profile")]
#[test]
fn the_profile_samples_every_thread_of_a_sweep_and_names_the_lock() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut s = Suite::new("sweep_profile");
    s.case_threads("locked", [2], |b| {
        let lock = Mutex::new(0u64);
        b.iter_threads(|| under_the_lock(&lock));
    });
    let outcome = run(
        s,
        &[
            "--bench",
            "--samples",
            "3",
            "--profile",
            "--profile-time",
            "500ms",
            "--profile-event",
            "cpu-clock",
            "--out-dir",
            dir.path().to_str().unwrap(),
        ],
    );
    let row = &outcome.rows[0];
    let profile = row.profile.as_ref().expect("a profile summary");
    if let Some(error) = &profile.error {
        skip::skip(
            "perf_event",
            format!("the sampler could not start here: {error}"),
        );
        return;
    }
    let json: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("profile/locked_threads_2/profile.json")).unwrap(),
    )
    .unwrap();
    let total = |name: &str| -> f64 {
        json["symbols"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["name"].as_str().unwrap().contains(name))
            .map(|s| s["total_pct"].as_f64().unwrap())
            .fold(0.0, f64::max)
    };
    let (body, leader, mutex) = (
        total("under_the_lock"),
        total("std::thread::scoped::scope"),
        total("lock_contended"),
    );
    eprintln!(
        "under_the_lock {body:.1}%, on the case's thread {leader:.1}%, lock_contended {mutex:.1}%"
    );
    // The function that takes the lock is named, with the whole of the body under it; the
    // waiting inside std's mutex (lock_contended: 11-15% here idle) shows only where the
    // two threads ran at once: beside two CPU hogs it read 0.0% to 14% (a CPU clock
    // samples no sleeper: `--profile=wall` charges the waits to this call site).
    assert!(body >= 80.0, "{body:.1}%");
    // Both threads are sampled: the body's time is the case thread's (under `scope`)
    // and the helper's beside it, each about half.
    assert!(
        body - leader >= 20.0 && leader >= 20.0,
        "body {body:.1}%, case thread {leader:.1}%"
    );
}
