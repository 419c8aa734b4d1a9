//! The `sparkles` command line.

fn main() {
    std::process::exit(sparkles_bench::cli::run(std::env::args_os()));
}
