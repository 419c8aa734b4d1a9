//! The code both harnesses count the instructions of (`.ci/peers/gungraun-counts`: gungraun's
//! `#[library_benchmark]` and the harness's `--instructions`): the figures docs/guide.md
//! compares.

use std::hint::black_box;

/// bench-integration/tests/valgrind.rs's loop: `n` dependent multiply-adds.
#[inline(never)]
pub fn spin(n: u64) -> u64 {
    let mut x = 1u64;
    for i in 0..n {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
    }
    x
}

/// 10,000 u64 in a fixed scrambled order, the sort's input (made outside what is counted).
pub fn unsorted() -> Vec<u64> {
    (0..10_000u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 17)
        .collect()
}

/// `sort_unstable` of `v`, its length returned.
#[inline(never)]
pub fn sort(mut v: Vec<u64>) -> usize {
    v.sort_unstable();
    black_box(&v);
    v.len()
}
