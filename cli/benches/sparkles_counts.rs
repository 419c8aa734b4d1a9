//! Our side of docs/guide.md's allocation counts: the harness's counting allocator over
//! the code `divan_counts` gives divan (`peers/alloc_work.rs`), its `alloc.*` metrics per
//! iteration. `.ci/peers/alloc-counts` runs both.

#[path = "peers/alloc_work.rs"]
mod alloc_work;

use clap::Parser;
use sparkles_bench::{HarnessArgs, Suite};

#[global_allocator]
static ALLOC: sparkles_bench::alloc::Counting = sparkles_bench::alloc::Counting::system();

fn main() {
    let mut suite = Suite::new("alloc_counts");
    suite.case("push1000", |b| b.iter(alloc_work::push1000));
    suite.case("format100", |b| b.iter(alloc_work::format100));
    sparkles_bench::run_or_exit(suite, &HarnessArgs::parse());
}
