//! The harness's own costs, so a user knows what a reported figure includes.
//!
//! `harness/empty` is the loop `iter` wraps around a body: what an empty body reports is
//! the floor of every timing. `harness/batched_empty` is the same for `iter_batched`.
//! `harness/tier0/bracket` is one counting-pass bracket of tier 0 (getrusage plus a pread
//! of /proc/self/io, twice). `harness/compare/32` is the bootstrap comparison of two
//! 32-sample series that `--baseline` runs per case.

use sparkles_bench::{stats, tier0::Tier0, Suite};

fn main() {
    let mut suite = Suite::new("harness");
    suite.group("harness", |g| {
        g.case("empty", |b| b.iter(|| ()));
        g.case("batched_empty", |b| b.iter_batched(|| (), |()| (), |()| ()));
        g.case("tier0/bracket", |b| {
            let mut tier = Tier0::open();
            b.iter(|| {
                tier.resume();
                tier.pause();
            })
        });
        g.case("compare/32", |b| {
            let mut rng = fastrand::Rng::with_seed(3);
            let base: Vec<f64> = (0..32).map(|_| 1000.0 + rng.f64() * 30.0).collect();
            let new: Vec<f64> = (0..32).map(|_| 1010.0 + rng.f64() * 30.0).collect();
            b.iter(|| stats::compare(&base, &new))
        });
    });
    sparkles_bench::main(suite);
}
