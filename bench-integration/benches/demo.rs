//! The demo suite: `cargo bench -p sparkles-bench --bench demo`.

mod demo_suite;

fn main() {
    sparkles_bench::main(demo_suite::suite());
}
