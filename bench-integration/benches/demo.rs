//! The demo suite: `cargo bench -p sparkles-bench --bench demo`.

mod demo_suite;

// Allocations per case (alloc.count, alloc.bytes) in the counting pass; off in timing.
#[global_allocator]
static A: sparkles_bench::alloc::Counting = sparkles_bench::alloc::Counting::system();

fn main() {
    sparkles_bench::main(demo_suite::suite());
}
