//! The allocation tier with the counting allocator installed: exact counts per iteration
//! (1,000 pushes onto an empty `Vec<u64>` are one allocation of 32 bytes, eight
//! reallocations up to 1,024 elements, one free, a peak of 8 KiB), threads the case starts
//! counted, and a planted extra allocation `higher` in `alloc.count` against a baseline,
//! named as the cause. The counts come from `Vec`'s growth rule and the code itself, not
//! from the machine.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

mod support;

use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering};

use sparkles_bench::explain::{Cause, MetricVerdict};
use sparkles_bench::Suite;

use support::{run, SERIAL};

#[global_allocator]
static A: sparkles_bench::alloc::Counting = sparkles_bench::alloc::Counting::system();

/// Which build the suite is: 2 plants one more allocation in `planted`.
static BUILD: AtomicU32 = AtomicU32::new(1);

#[inline(never)]
fn planted(extra: bool) -> usize {
    let a = black_box(vec![1u8; 64]);
    let b = extra.then(|| black_box(vec![2u8; 64]));
    a.len() + b.map_or(0, |b| b.len())
}

fn suite() -> Suite {
    let mut s = Suite::new("allocs");
    s.case("push1000", |b| {
        b.iter(|| {
            let mut v: Vec<u64> = Vec::new();
            for i in 0..1000 {
                v.push(black_box(i));
            }
            v.len()
        })
    });
    s.case("in_a_thread", |b| {
        b.iter(|| {
            std::thread::scope(|s| s.spawn(|| black_box(vec![0u8; 4096]).len()).join().unwrap())
        })
    });
    s.case("planted", |b| {
        let extra = BUILD.load(Ordering::Relaxed) == 2;
        b.iter(|| planted(extra))
    });
    s
}

#[test]
fn counts_are_exact_per_iteration_and_a_planted_allocation_is_the_cause() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let flags = |baseline: &'static str| {
        vec![
            "--bench",
            "--metrics",
            "alloc.*",
            "--samples",
            "8",
            "--out-dir",
            out,
            baseline,
            "b",
        ]
    };
    BUILD.store(1, Ordering::Relaxed);
    let first = run(suite(), &flags("--save-baseline"));
    assert!(first.all_ok());
    let metric = |o: &sparkles_bench::Outcome, case: &str, id: &str| {
        o.rows.iter().find(|r| r.case == case).unwrap().metrics[id].unwrap()
    };
    assert_eq!(metric(&first, "push1000", "alloc.count"), 1.0);
    assert_eq!(metric(&first, "push1000", "alloc.bytes"), 32.0);
    assert_eq!(metric(&first, "push1000", "alloc.reallocs"), 8.0);
    assert_eq!(metric(&first, "push1000", "alloc.frees"), 1.0);
    assert_eq!(metric(&first, "push1000", "alloc.peak_bytes"), 8192.0);
    // The spawned thread's 4 KiB are counted (with what spawning it allocates).
    assert!(metric(&first, "in_a_thread", "alloc.bytes") >= 4096.0);
    assert_eq!(metric(&first, "planted", "alloc.count"), 1.0);

    BUILD.store(2, Ordering::Relaxed);
    let second = run(suite(), &flags("--baseline"));
    assert!(second.all_ok());
    let row = second.rows.iter().find(|r| r.case == "planted").unwrap();
    assert_eq!(row.metrics["alloc.count"], Some(2.0));
    let c = row.comparison.as_ref().unwrap();
    let count = c.metrics.iter().find(|m| m.id == "alloc.count").unwrap();
    assert_eq!(count.verdict, MetricVerdict::Higher, "{count:?}");
    let e = c.explanation.as_ref().unwrap();
    // Where the time moved, the extra allocation is named as its cause.
    if c.verdict == sparkles_bench::stats::Verdict::Regression {
        assert!(
            matches!(e.kind, Cause::MoreAllocations | Cause::Mixed),
            "{}",
            e.text
        );
        assert!(
            e.text.contains("alloc.count allocations/iter"),
            "{}",
            e.text
        );
    }
    // The unchanged cases count the same.
    let same = second.rows.iter().find(|r| r.case == "push1000").unwrap();
    let c = same.comparison.as_ref().unwrap();
    let count = c.metrics.iter().find(|m| m.id == "alloc.count").unwrap();
    assert_eq!(count.verdict, MetricVerdict::InsideTheNoise, "{count:?}");
}
