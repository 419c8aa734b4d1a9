//! The harness's own costs, so a user knows what a reported figure includes.
//!
//! `harness/empty` is the loop `iter` wraps around a body: what an empty body reports is
//! the floor of every timing. `harness/batched_empty` is the same for `iter_batched`,
//! `harness/async_empty` for `to_async(…).iter` (an empty `async` block awaited, polled
//! by pollster: the cost of the async loop, not of a runtime).
//! `harness/tier0/bracket` is one counting-pass bracket of tier 0 (getrusage plus a pread
//! of /proc/self/io, twice). `harness/compare/32` is the bootstrap comparison of two
//! 32-sample series that `--baseline` runs per case.
//!
//! `harness/perf/bracket/*` is one bracket of the perf_event counting tier: the group
//! ENABLE and DISABLE ioctls on the case's thread (`ioctl`), the same for every thread
//! of the process with inherit (`ioctl/process`, the default shape), and two
//! self-monitoring reads of each counter with rdpmc inside the mmap page's seqlock
//! (`rdpmc`: no syscall). Where the kernel refuses a shape, its case is left out with
//! the reason.

use sparkles_bench::{stats, tier0::Tier0, Suite};
use sparkles_sampler::counters::{Bracketed, CounterConfig, CounterSet, Coverage, ReadPath};
use sparkles_sampler::system::System;

/// A bracketed counter set of `events`, or why there is none.
fn counting(events: &[&str], coverage: Coverage, rdpmc: bool) -> Result<Bracketed, String> {
    let resolver = sparkles_sampler::EventResolver::live().map_err(|e| e.to_string())?;
    let mut attrs = Vec::new();
    for e in events {
        attrs.extend(resolver.resolve(e).map_err(|e| e.to_string())?);
    }
    let set = CounterSet::open(
        &CounterConfig {
            events: attrs,
            coverage,
            exact: false,
            rdpmc,
        },
        &System::probe(),
    );
    if let Some(left) = set.absent.first() {
        return Err(format!("{}: {}", left.event, left.reason));
    }
    if rdpmc && set.read_path != ReadPath::Rdpmc {
        return Err(set.read_reason.clone().unwrap_or_default());
    }
    Ok(Bracketed::start(set))
}

/// The executor of `harness/async_empty`: a future polled on the calling thread.
struct Pollster;

impl sparkles_bench::AsyncExecutor for Pollster {
    fn block_on<T>(&self, future: impl std::future::Future<Output = T>) -> T {
        pollster::block_on(future)
    }
}

fn main() {
    let mut suite = Suite::new("harness");
    suite.group("harness", |g| {
        g.case("empty", |b| b.iter(|| ()));
        g.case("batched_empty", |b| b.iter_batched(|| (), |()| (), |()| ()));
        g.case("async_empty", |b| b.to_async(Pollster).iter(|| async {}));
        g.case("tier0/bracket", |b| {
            let mut tier = Tier0::open();
            b.iter(|| {
                tier.resume();
                tier.pause();
            })
        });
        let shapes = [
            ("perf/bracket/ioctl", Coverage::CallingThread, false),
            ("perf/bracket/ioctl/process", Coverage::Process, false),
            ("perf/bracket/rdpmc", Coverage::CallingThread, true),
        ];
        for (name, coverage, rdpmc) in shapes {
            // Counters belong to the thread that opens them: probed here, opened again
            // on the case's own thread.
            let events = ["instructions:u", "cycles:u"];
            match counting(&events, coverage, rdpmc) {
                Ok(_) => {
                    g.case(name, move |b| {
                        let mut counting = counting(&events, coverage, rdpmc)
                            .expect("opened on the main thread a moment ago");
                        b.iter(|| {
                            counting.resume();
                            counting.pause();
                        })
                    });
                }
                Err(why) => eprintln!("harness/{name} left out: {why}"),
            }
        }
        g.case("compare/32", |b| {
            let mut rng = fastrand::Rng::with_seed(3);
            let base: Vec<f64> = (0..32).map(|_| 1000.0 + rng.f64() * 30.0).collect();
            let new: Vec<f64> = (0..32).map(|_| 1010.0 + rng.f64() * 30.0).collect();
            b.iter(|| stats::compare(&base, &new))
        });
    });
    sparkles_bench::main(suite);
}
