//! Async bodies (`b.to_async(executor).iter(|| async { … })`): the executor's own cost of
//! entering and leaving `block_on` is outside every sample, the batched and fallible
//! forms behave as their plain ones do, and tokio's runtimes run them with the `tokio`
//! feature. The expectations hold on a busy machine: each compares fastest samples (a busy
//! machine only adds time to a sample), against a margin of ten times.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

mod support;

use std::future::Future;
use std::hint::black_box;
use std::time::Duration;

use sparkles_bench::{AsyncExecutor, Suite};
use support::{run, SERIAL};

/// An executor that takes 20 ms to start each `block_on` (a runtime whose entry costs
/// what building one does), then polls the future on this thread.
struct SlowStart;

impl AsyncExecutor for SlowStart {
    fn block_on<T>(&self, future: impl Future<Output = T>) -> T {
        std::thread::sleep(Duration::from_millis(20));
        pollster::block_on(future)
    }
}

#[inline(never)]
fn spin(n: u64) -> u64 {
    let mut x = 1u64;
    for i in 0..n {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
    }
    x
}

/// An async function the way a user writes one: awaits another future before its work.
async fn hash_after_yield(n: u64) -> u64 {
    std::future::ready(()).await;
    spin(n)
}

fn fastest(outcome: &sparkles_bench::Outcome, case: &str) -> f64 {
    let row = outcome.rows.iter().find(|r| r.case == case).unwrap();
    let t = row.timing.as_ref().unwrap();
    t.samples.iter().copied().fold(f64::INFINITY, f64::min)
}

#[test]
fn the_executors_start_is_outside_every_sample() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut suite = Suite::new("async");
    suite.case("sync", |b| b.iter(|| spin(2_000)));
    suite.case("async", |b| {
        b.to_async(SlowStart).iter(|| hash_after_yield(2_000))
    });
    suite.case("async/batched", |b| {
        b.to_async(&SlowStart)
            .iter_batched(|| 2_000u64, hash_after_yield, drop)
    });
    // The executor entered inside the body: its start in every iteration.
    suite.case("block_on_in_the_body", |b| {
        b.iter(|| SlowStart.block_on(hash_after_yield(2_000)))
    });
    suite.case("async/fails", |b| {
        let mut calls = 0;
        b.to_async(SlowStart).try_iter(move || {
            calls += 1;
            let n = calls;
            async move {
                if n > 3 {
                    Err(format!("call {n} failed"))
                } else {
                    Ok(spin(10))
                }
            }
        })
    });
    let outcome = run(
        suite,
        &["--bench", "--samples", "6", "--no-report", "--no-history"],
    );
    let sync = fastest(&outcome, "sync");
    for case in ["async", "async/batched"] {
        let t = fastest(&outcome, case);
        // 20 ms a sample of about 1 ms would be at least 20 times the body's time.
        assert!(t < sync * 10.0, "{case}: {t} ns against {sync} ns");
        assert!(outcome.rows.iter().any(|r| r.case == case && r.ok));
    }
    // The way the trait exists to replace: 20 ms in every iteration.
    assert!(fastest(&outcome, "block_on_in_the_body") > 20e6);
    let failed = outcome
        .rows
        .iter()
        .find(|r| r.case == "async/fails")
        .unwrap();
    assert!(!failed.ok);
    assert!(
        failed
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("failed"),
        "{:?}",
        failed.error
    );
}

/// tokio's runtimes, built once by the case: the current-thread runtime and the
/// multi-thread one (whose `block_on` runs the body's future on the case's thread), a
/// body that awaits a task it spawns on the runtime's workers.
#[cfg(feature = "tokio")]
#[test]
fn tokio_runtimes_run_async_bodies() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut suite = Suite::new("tokio");
    suite.case("sync", |b| b.iter(|| spin(2_000)));
    suite.case("tokio/current_thread", |b| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        b.to_async(&rt).iter(|| hash_after_yield(2_000))
    });
    suite.case("tokio/multi_thread/spawned", |b| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        b.to_async(&rt)
            .iter(|| async { tokio::spawn(hash_after_yield(2_000)).await.unwrap() })
    });
    let outcome = run(
        suite,
        &["--bench", "--samples", "6", "--no-report", "--no-history"],
    );
    let sync = fastest(&outcome, "sync");
    for row in &outcome.rows {
        assert!(row.ok, "{}: {:?}", row.case, row.error);
    }
    let t = fastest(&outcome, "tokio/current_thread");
    assert!(t < sync * 10.0, "{t} ns against {sync} ns");
    // A spawned task's hand-off to a worker and back costs something, never 10 times a
    // body of a few microseconds plus a runtime's start.
    let spawned = fastest(&outcome, "tokio/multi_thread/spawned");
    assert!(
        spawned < sync * 10.0 + 100_000.0,
        "{spawned} ns against {sync} ns"
    );
}
