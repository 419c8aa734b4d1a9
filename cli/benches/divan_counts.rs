//! The peer's side of docs/guide.md's allocation counts: divan's `AllocProfiler` counting
//! the allocations of `peers/alloc_work.rs`, printed in divan's table (alloc, grow,
//! dealloc, max alloc). `.ci/peers/alloc-counts` runs it beside `sparkles_counts`.

#[path = "peers/alloc_work.rs"]
mod alloc_work;

#[global_allocator]
static ALLOC: divan::AllocProfiler = divan::AllocProfiler::system();

#[divan::bench]
fn push1000() -> usize {
    alloc_work::push1000()
}

#[divan::bench]
fn format100() -> usize {
    alloc_work::format100()
}

fn main() {
    divan::main();
}
