//! The code both harnesses count the allocations of (`divan_counts`, `sparkles_counts`):
//! the figures docs/guide.md compares.

use std::hint::black_box;

/// 1,000 pushes onto an empty `Vec<u64>`: one allocation, eight reallocations as it grows,
/// one free.
pub fn push1000() -> usize {
    let mut v: Vec<u64> = Vec::new();
    for i in 0..1000 {
        v.push(black_box(i));
    }
    v.len()
}

/// A hundred `format!` strings collected into a `Vec` made to size: 101 allocations, and
/// 200 reallocations as the strings grow.
pub fn format100() -> usize {
    let mut v = Vec::with_capacity(100);
    for i in 0..100u32 {
        v.push(format!("item {:>24}", black_box(i)));
    }
    v.iter().map(String::len).sum()
}
