//! The demo suite: `cargo bench -p sparkles-bench --bench demo`.

fn main() {
    sparkles_bench::main(sparkles_bench::demo::suite());
}
