//! Report time against the number of samples: captures of 1,000 to 1,000,000 samples
//! made from one real capture (frame-pointer callchains) and of 1,000 to 100,000 (DWARF
//! stack copies: a million 2 KiB copies would be 2 GB of disk), each reported by
//! `sparkles report` and by `perf report --no-children --stdio` in the same run. Printed:
//! the time per sample of each, and the ratio, per size.
//!
//! - `scaling/fp/N/sparkles`, `scaling/fp/N/perf`: the capture of
//!   `perf record -F 20000 -g` of `testdata/unwind/callchains.c`, its samples repeated
//!   to N.
//! - `scaling/dwarf/N/sparkles`, `scaling/dwarf/N/perf`: the same from
//!   `perf record -F 20000 --call-graph dwarf,2048`.
//!
//! The captures are made once into `target/sparkles/bench-data/`. Smoke mode (`cargo
//! test`) runs the smallest size only. Needs gcc and perf; without them it says so.

#[path = "../../testdata/support/skip.rs"]
mod skip;

use std::path::PathBuf;

use clap::Parser;
use sparkles_bench::{HarnessArgs, Suite};

mod support;

const FP_SIZES: [u64; 4] = [1_000, 10_000, 100_000, 1_000_000];
const DWARF_SIZES: [u64; 3] = [1_000, 10_000, 100_000];

fn main() {
    let args = HarnessArgs::parse();
    let mut suite = Suite::new("scaling");
    suite.default_samples(3);
    let measuring = args.bench && !args.list;
    let dir = sparkles_bench::output::out_dir(args.out_dir.as_deref()).join("bench-data");
    let sources = support::callchains_capture(&dir, "scaling", 0, 20000, 2048).and_then(|dwarf| {
        Ok((
            support::callchains_fp_capture(&dir, "scaling", 20000)?,
            dwarf,
        ))
    });
    let mut sizes: Vec<(&str, u64)> = Vec::new();
    match sources {
        Ok((fp, dwarf)) => {
            let mut made: Vec<(&str, u64, PathBuf)> = Vec::new();
            for (kind, source, all) in [
                ("fp", &fp, &FP_SIZES[..]),
                ("dwarf", &dwarf, &DWARF_SIZES[..]),
            ] {
                for &n in if measuring { all } else { &all[..1] } {
                    let out = dir.join(format!("scaling-{kind}-{n}-rounds.perf.data"));
                    match support::synthesized(source, n, &out) {
                        Ok(()) => made.push((kind, n, out)),
                        Err(why) => eprintln!("scaling: {kind} {n}: not made: {why}"),
                    }
                }
            }
            let sparkles = env!("CARGO_BIN_EXE_sparkles").to_string();
            suite.group("scaling", |g| {
                for (kind, n, path) in &made {
                    let f = path.display().to_string();
                    let s = sparkles.clone();
                    let file = f.clone();
                    g.case(format!("{kind}/{n}/sparkles"), move |b| {
                        b.try_iter(|| support::shell(&format!("'{s}' report '{file}'")))
                    });
                    g.case(format!("{kind}/{n}/perf"), move |b| {
                        b.try_iter(|| {
                            support::shell(&format!(
                                "perf report --no-children --stdio -i '{f}' 2>/dev/null"
                            ))
                        })
                    });
                    sizes.push((kind, *n));
                }
            });
        }
        Err(why) => eprintln!("scaling: no source capture, nothing to measure: {why}"),
    }
    let outcome = sparkles_bench::run_or_exit(suite, &args);
    // Per sample: the whole time over the samples, and the time each sample adds past
    // the smallest capture of its kind (the fixed costs left out).
    println!("| capture | samples | sparkles ms | perf ms | sparkles µs/sample | perf µs/sample | µs each sample adds: sparkles | perf | ratio |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let median =
        |kind: &str, n: u64, tool: &str| outcome.median(&format!("scaling/{kind}/{n}/{tool}"));
    let mut base: Option<(&str, u64, f64, f64)> = None;
    for (kind, n) in sizes {
        let (Some(o), Some(t)) = (median(kind, n, "sparkles"), median(kind, n, "perf")) else {
            continue;
        };
        // Medians are in ns.
        let (o, t) = (o / 1e6, t / 1e6);
        let per = |ms: f64, k: u64| ms * 1e3 / k as f64;
        let added = match base {
            Some((k, n0, o0, t0)) if k == kind && n > n0 => {
                let (a, b) = (per(o - o0, n - n0), per(t - t0, n - n0));
                format!("{a:.3} | {b:.3} | {:.2}x", b / a)
            }
            _ => {
                base = Some((kind, n, o, t));
                "| |".to_string()
            }
        };
        println!(
            "| {kind} | {n} | {o:.1} | {t:.1} | {:.3} | {:.3} | {added} |",
            per(o, n),
            per(t, n)
        );
    }
    std::process::exit(if outcome.all_ok() { 0 } else { 1 });
}
