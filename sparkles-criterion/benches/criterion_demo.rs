//! A criterion bench profiled by sparkles: `cargo bench -p sparkles-criterion --bench
//! criterion_demo -- --profile-time 2` writes each benchmark's capture, flamegraph,
//! folded stacks and profile.json under `target/criterion/<id>/profile/`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use sparkles_criterion::SparklesProfiler;

/// Naive Fibonacci: deep recursion, one hot function.
#[inline(never)]
pub fn fib(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib(n - 1) + fib(n - 2)
    }
}

/// Sorting a fresh vector: allocation, copying and comparisons.
#[inline(never)]
pub fn sort_fresh(n: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 7)
        .collect();
    v.sort_unstable();
    v
}

fn benches(c: &mut Criterion) {
    c.bench_function("fib/20", |b| b.iter(|| fib(black_box(20))));
    c.bench_function("sort/10k", |b| b.iter(|| sort_fresh(black_box(10_000))));
}

criterion_group! {
    name = demo;
    config = Criterion::default().with_profiler(SparklesProfiler::default());
    targets = benches
}
criterion_main!(demo);
