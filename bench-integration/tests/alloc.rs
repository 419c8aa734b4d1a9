//! The allocation tier with the counting allocator installed: exact counts per iteration
//! (1,000 pushes onto an empty `Vec<u64>` are one allocation of 32 bytes, eight
//! reallocations up to 1,024 elements, one free, a peak of 8 KiB), threads the case starts
//! counted, and a planted extra allocation `higher` in `alloc.count` against a baseline,
//! named as the cause. The counts come from `Vec`'s growth rule and the code itself, not
//! from the machine. With `--profile=alloc`, the sampled bytes per function: the
//! function that allocates more is the allocation diff's top mover, and the block kept past
//! its iteration is the live site.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

mod support;

use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering};

use sparkles_bench::explain::{Cause, MetricVerdict};
use sparkles_bench::Suite;

use support::{run, SERIAL};

#[global_allocator]
static A: sparkles_bench::alloc::Counting = sparkles_bench::alloc::Counting::system();

/// Which build the suite is: 2 plants 32 more allocations in `planted`.
static BUILD: AtomicU32 = AtomicU32::new(1);

/// Allocations build 2 adds to `planted`: enough that its time certainly moves (each
/// costs what the one before did, on any machine's noise).
const PLANTED: usize = 32;

#[inline(never)]
fn planted(extra: bool) -> usize {
    let a = black_box(vec![1u8; 64]);
    let more = if extra { PLANTED } else { 0 };
    a.len()
        + (0..more)
            .map(|i| black_box(vec![i as u8; 64]).len())
            .sum::<usize>()
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
    assert_eq!(row.metrics["alloc.count"], Some(1.0 + PLANTED as f64));
    let c = row.comparison.as_ref().unwrap();
    let count = c.metrics.iter().find(|m| m.id == "alloc.count").unwrap();
    assert_eq!(count.verdict, MetricVerdict::Higher, "{count:?}");
    let e = c.explanation.as_ref().unwrap();
    // The time moved (33 allocations where there was one), and the extra allocations are
    // named as its cause.
    assert_eq!(
        c.verdict,
        sparkles_bench::stats::Verdict::Regression,
        "{:+.1}% {}",
        c.delta_pct,
        e.text
    );
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
    // The unchanged cases count the same.
    let same = second.rows.iter().find(|r| r.case == "push1000").unwrap();
    let c = same.comparison.as_ref().unwrap();
    let count = c.metrics.iter().find(|m| m.id == "alloc.count").unwrap();
    assert_eq!(count.verdict, MetricVerdict::InsideTheNoise, "{count:?}");
}

/// `--profile=alloc`: read back only with the harness's `profile` feature, and taken
/// where the allocator can capture registers (Linux on x86_64 and aarch64; elsewhere the
/// profile's error says why, as the harness's unit test of the sampling facade checks).
#[cfg(all(
    feature = "profile",
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod profiled {
    use super::*;

    /// Which build the allocation-profile suite is: 2 makes `planted_bytes` allocate twice.
    static PROFILED_BUILD: AtomicU32 = AtomicU32::new(1);

    /// 16 blocks of 1 KiB an iteration, freed in it.
    #[inline(never)]
    fn steady_bytes() -> usize {
        let mut n = 0;
        for i in 0..16 {
            n += black_box(vec![i as u8; 1024]).len();
        }
        n
    }

    /// 16 blocks of 1 KiB an iteration in build 1, 48 in build 2: the function that
    /// allocates more.
    #[inline(never)]
    fn planted_bytes(extra: bool) -> usize {
        let mut n = 0;
        for i in 0..if extra { 48 } else { 16 } {
            n += black_box(vec![i as u8; 1024]).len();
        }
        n
    }

    /// 4 KiB an iteration kept past it (dropped a hundred iterations later).
    #[inline(never)]
    fn retained_bytes(kept: &mut Vec<Vec<u8>>) -> usize {
        if kept.len() == 100 {
            kept.clear();
        }
        kept.push(black_box(vec![7u8; 4096]));
        kept.len()
    }

    /// Work between the allocations, so that a short pass has few samples.
    #[inline(never)]
    fn spin() -> u64 {
        (0..20_000u64).fold(0, |a, i| black_box(a.wrapping_mul(31) ^ i))
    }

    fn profiled_suite() -> Suite {
        let mut s = Suite::new("allocprof");
        s.case("mixed", |b| {
            let extra = PROFILED_BUILD.load(Ordering::Relaxed) == 2;
            let mut kept: Vec<Vec<u8>> = Vec::with_capacity(100);
            b.iter(|| {
                spin() as usize + steady_bytes() + planted_bytes(extra) + retained_bytes(&mut kept)
            })
        });
        s
    }

    #[test]
    fn an_allocation_profile_names_the_function_that_allocates_more() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().to_str().unwrap();
        let flags = |baseline: &'static str| {
            vec![
                "--bench",
                "--profile=alloc",
                "--profile-alloc-mean",
                "16KiB",
                "--profile-time",
                "400ms",
                "--metrics",
                "alloc.*",
                "--samples",
                "3",
                "--out-dir",
                out,
                baseline,
                "a",
            ]
        };
        PROFILED_BUILD.store(1, Ordering::Relaxed);
        let first = run(profiled_suite(), &flags("--save-baseline"));
        assert!(first.all_ok());
        let row = &first.rows[0];
        let p = row.profile.as_ref().unwrap();
        assert_eq!(p.error, None, "{p:?}");
        let case_dir = dir.path().join("profile").join("mixed");
        for file in [
            "capture-alloc.perf.data",
            "profile-alloc.json",
            "folded-alloc.txt",
            "flamegraph-alloc.svg",
            "profile-alloc-live.json",
        ] {
            assert!(case_dir.join(file).is_file(), "{file} missing");
        }
        // The stacks start at the code asking for the bytes, not inside the allocator.
        let names: Vec<&str> = p.top.iter().map(|t| t.name.as_str()).collect();
        assert!(
            names.iter().take(2).any(|n| n.contains("planted_bytes"))
                && names.iter().take(2).any(|n| n.contains("steady_bytes")),
            "{names:?}"
        );
        assert!(
            !names.iter().any(|n| n.contains("sparkles_bench::alloc")
                || n.contains("sparkles_bench::tiers::alloc")),
            "{names:?}"
        );
        // What the samples stand for: 36 KiB an iteration (16 + 16 + 4 KiB, and the 100
        // pointers' holder never grows); the estimate of some hundreds of samples is within a
        // fifth of it.
        let a = p.alloc.as_ref().unwrap();
        let counted = row.metrics["alloc.bytes"].unwrap();
        assert_eq!(counted, 36.0 * 1024.0);
        assert!(
            (a.bytes_per_iteration / counted - 1.0).abs() < 0.2,
            "{} sampled against {counted} counted ({} samples)",
            a.bytes_per_iteration,
            p.samples
        );
        // The block kept past its iteration is the live site.
        assert!(
            a.live_top
                .first()
                .is_some_and(|t| t.name.contains("retained_bytes")),
            "{:?}",
            a.live_top
        );
        assert!(a.live_bytes_per_iteration > 0.0);
        // `sparkles report` on the capture, as any perf.data: by default the allocation
        // samples alone (the live event repeats some of them), the allocator folded away.
        let read = sparkles_report::capture::profiles_of_capture(
            &case_dir.join("capture-alloc.perf.data"),
            "mixed",
            &Default::default(),
            |_| {},
        )
        .unwrap();
        assert_eq!(read.profile.samples, p.samples);
        assert_eq!(read.profile.event, "sparkles:alloc");
        assert!(read.profile.functions[0].name.contains("_bytes"));

        PROFILED_BUILD.store(2, Ordering::Relaxed);
        let second = run(profiled_suite(), &flags("--baseline"));
        assert!(second.all_ok());
        let p = second.rows[0].profile.as_ref().unwrap();
        assert!(case_dir.join("diff-alloc.json").is_file());
        let top = p
            .movers
            .first()
            .unwrap_or_else(|| panic!("no movers: {:?}", p.notes));
        assert!(top.name.contains("planted_bytes"), "{:?}", p.movers);
    }
}
