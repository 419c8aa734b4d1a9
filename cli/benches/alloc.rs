//! What the counting allocator costs per allocation, against divan's `AllocProfiler` on
//! the same loop in the same run, reported as ratios.
//!
//! Each case allocates and frees 64 bytes 1,000 times through one allocator, called
//! directly (a process has one global allocator; these are called as values):
//!
//! - `alloc/system`: the system allocator alone, the floor.
//! - `alloc/counting_idle`: `sparkles_bench::alloc::Counting` outside a counting bracket
//!   (what every call pays in the timing pass: a relaxed load and a branch).
//! - `alloc/counting`: the same, counting (inside a bracket: the slot's four counters).
//! - `alloc/sampling`: the same, sampling by bytes as `--profile=alloc` does at its
//!   default mean (512 KiB: a sample every 8,192 of these calls, its stack copied).
//! - `alloc/divan`: divan's `AllocProfiler` (the peer), which always counts.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;

use clap::Parser;
use sparkles_bench::alloc::{arm_for_benchmark, sample_for_benchmark, Counting};
use sparkles_bench::{HarnessArgs, Suite, Throughput};

const CALLS: u64 = 1000;

fn churn(a: &impl GlobalAlloc) {
    let layout = Layout::from_size_align(64, 8).unwrap_or(Layout::new::<u64>());
    for _ in 0..CALLS {
        // SAFETY: a non-zero layout, freed with the same layout by the same allocator.
        unsafe {
            let p = a.alloc(black_box(layout));
            if !p.is_null() {
                a.dealloc(black_box(p), layout);
            }
        }
    }
}

fn main() {
    let args = HarnessArgs::parse();
    let mut suite = Suite::new("alloc");
    suite.group("alloc", |g| {
        g.case("system", |b| {
            b.throughput(Throughput::Elements(CALLS));
            b.iter(|| churn(&System))
        });
        g.case("counting_idle", |b| {
            static COUNTING: Counting = Counting::system();
            b.throughput(Throughput::Elements(CALLS));
            arm_for_benchmark(false);
            b.iter(|| churn(&COUNTING))
        });
        g.case("counting", |b| {
            static COUNTING: Counting = Counting::system();
            b.throughput(Throughput::Elements(CALLS));
            b.iter(|| {
                arm_for_benchmark(true);
                churn(&COUNTING);
                arm_for_benchmark(false);
            })
        });
        g.case("sampling", |b| {
            static COUNTING: Counting = Counting::system();
            b.throughput(Throughput::Elements(CALLS));
            // A call through it first: sampling starts only with the allocator in use.
            churn(&COUNTING);
            if let Err(e) = sample_for_benchmark(Some(512 * 1024)) {
                eprintln!("alloc/sampling: {e}");
            }
            b.iter(|| churn(&COUNTING));
            let _ = sample_for_benchmark(None);
        });
        g.case("divan", |b| {
            static DIVAN: divan::AllocProfiler = divan::AllocProfiler::system();
            b.throughput(Throughput::Elements(CALLS));
            b.iter(|| churn(&DIVAN))
        });
    });
    let outcome = sparkles_bench::run_or_exit(suite, &args);
    let median = |case: &str| outcome.median(case);
    if let (Some(system), Some(divan)) = (median("alloc/system"), median("alloc/divan")) {
        for ours in ["alloc/counting", "alloc/counting_idle", "alloc/sampling"] {
            if let Some(m) = median(ours) {
                println!(
                    "{ours}: {:.2}x divan's AllocProfiler's time; {:+.1} ns a call over the system allocator (divan {:+.1} ns)",
                    m / divan,
                    (m - system) / (2 * CALLS) as f64,
                    (divan - system) / (2 * CALLS) as f64
                );
            }
        }
    }
    std::process::exit(if outcome.all_ok() { 0 } else { 1 });
}
