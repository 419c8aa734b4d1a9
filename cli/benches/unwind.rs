//! Unwinding cost, and `sparkles script --stacks` against `perf script` on the same DWARF
//! capture in the same run, reported as a ratio.
//!
//! - `unwind/sample_8k`: one sample's user stack (8 KiB copy, DWARF CFI through
//!   framehop) unwound by a warm unwinder (modules added, rule cache filled): the
//!   per-sample cost a profile pays, samples taken in turn.
//! - `unwind/sample_8k_hot`: the deepest sample unwound over and over, its bytes in
//!   cache: the walk alone, without the memory traffic of fresh samples.
//! - `unwind/script_stacks`: `sparkles script --stacks` on the capture, output discarded.
//! - `unwind/perf_script`: `perf script` on the same capture (it unwinds DWARF call graphs
//!   and names every frame), output discarded.
//!
//! The capture: `testdata/unwind/callchains.c` built with `gcc -O2 -g` and recorded with
//! `perf record --call-graph dwarf,8192` into `target/sparkles/bench-data/` (needs gcc and
//! perf; without them the bench says so and measures nothing).

#[path = "../../testdata/support/skip.rs"]
mod skip;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use clap::Parser;
use sparkles_bench::{HarnessArgs, Suite};
use sparkles_perf_data::bytes::U64s;
use sparkles_perf_data::sample::{Regs, StackUser};
use sparkles_perf_data::{PerfData, Record, Sample};
use sparkles_report::stacks::{StackNamer, StackOptions};
use sparkles_unwind::Mode;

mod support;

/// A sample's unwinding inputs, owned.
struct Owned {
    pid: u32,
    ip: u64,
    mask: u64,
    regs: Vec<u8>,
    stack: Vec<u8>,
}

/// The capture's user samples with stacks, and a stack namer (the composer that owns the
/// address space and hands the unwinder its modules) fed all its mappings, unwinding in
/// `mode`. Where
/// enough of them copied 4 KiB or more, only those. The kernel copies up to the end of the
/// stack mapping, and the stack starts a random distance (up to 8 KiB) below that end,
/// above the environment: with a small environment a whole run's copies can be shorter
/// (seen in CI, and here with `env -i`: 848 to 8192 bytes from run to run).
fn samples(path: &Path, mode: Mode) -> Result<(Vec<Owned>, StackNamer), String> {
    let data = PerfData::open(path).map_err(|e| e.to_string())?;
    let options = StackOptions {
        unwind: mode,
        ..StackOptions::default()
    };
    let mut namer = StackNamer::for_capture(&data, &options);
    let mut out = Vec::new();
    data.for_each_record(|e| {
        namer.observe(&e.record);
        if let Record::Sample(s) = &e.record {
            if let Some((r, st)) = support::user_stack(s) {
                out.push(Owned {
                    pid: s.pid.unwrap_or(0),
                    ip: s.ip.unwrap_or(0),
                    mask: r.mask,
                    regs: r.values.0.to_vec(),
                    stack: st.valid().to_vec(),
                });
            }
        }
        Ok::<(), sparkles_perf_data::Error>(())
    })
    .map_err(|e| e.to_string())?;
    if out.iter().filter(|o| o.stack.len() >= 4096).count() >= 20 {
        out.retain(|o| o.stack.len() >= 4096);
    }
    Ok((out, namer))
}

fn as_sample(o: &Owned) -> Sample<'_> {
    Sample {
        pid: Some(o.pid),
        tid: Some(o.pid),
        ip: Some(o.ip),
        regs_user: Some(Regs {
            abi: 2,
            mask: o.mask,
            values: U64s(&o.regs),
        }),
        stack_user: Some(StackUser {
            data: &o.stack,
            dyn_size: o.stack.len() as u64,
        }),
        ..Sample::default()
    }
}

fn tool(program: &Path, args: &[&str], capture: &Path) -> Result<u64, String> {
    let out = Command::new(program)
        .args(args)
        .arg(capture)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e}", program.display()))?;
    if !out.status.success() {
        return Err(format!("{} failed ({})", program.display(), out.status));
    }
    Ok(out.stdout.len() as u64)
}

fn main() {
    let args = HarnessArgs::parse();
    let mut suite = Suite::new("unwind");
    suite.default_samples(8);
    let measuring = args.bench && !args.list;
    let dir = sparkles_bench::output::out_dir(args.out_dir.as_deref()).join("bench-data");
    match support::callchains_capture(&dir, "unwind", if measuring { 3 } else { 0 }, 4000, 8192) {
        Ok(path) => {
            suite.group("unwind", move |g| {
                let p = path.clone();
                // Setup on the case's own thread (the namer is not Send): the samples, and
                // a namer fed all the capture's mappings.
                g.case("sample_8k", move |bench| {
                    let (owned, mut namer) = samples(&p, Mode::Dwarf)?;
                    if owned.is_empty() {
                        return Err(format!("{}: no user samples with stacks", p.display()));
                    }
                    // Warm: every sample once (modules added, rules cached).
                    for o in &owned {
                        namer.unwind(&as_sample(o));
                    }
                    let mut i = 0usize;
                    bench.iter(|| {
                        let o = &owned[i % owned.len()];
                        i += 1;
                        namer.unwind(&as_sample(o)).frames.len()
                    });
                    Ok(())
                });
                let p = path.clone();
                // The walk alone: one sample over and over, its bytes in cache.
                g.case("sample_8k_hot", move |bench| {
                    let (owned, mut namer) = samples(&p, Mode::Dwarf)?;
                    let deepest = owned
                        .iter()
                        .max_by_key(|o| namer.unwind(&as_sample(o)).frames.len())
                        .ok_or_else(|| format!("{}: no user samples with stacks", p.display()))?;
                    let frames = namer.unwind(&as_sample(deepest)).frames.len();
                    eprintln!("unwind/sample_8k_hot: the deepest stack, {frames} frames");
                    bench.iter(|| namer.unwind(&as_sample(deepest)).frames.len());
                    Ok::<(), String>(())
                });
                let sparkles_cli = PathBuf::from(env!("CARGO_BIN_EXE_sparkles"));
                let p = path.clone();
                g.case("script_stacks", move |bench| {
                    bench.try_iter(|| tool(&sparkles_cli, &["script", "--stacks"], &p))
                });
                let p = path.clone();
                g.case("perf_script", move |bench| {
                    bench.try_iter(|| tool(Path::new("perf"), &["script", "-i"], &p))
                });
            });
        }
        Err(why) => eprintln!("unwind: no capture, nothing to measure: {why}"),
    }
    let outcome = sparkles_bench::run_or_exit(suite, &args);
    for case in ["unwind/sample_8k", "unwind/sample_8k_hot"] {
        if let Some(m) = outcome.median(case) {
            println!("{case}: {:.2} µs per sample", m / 1e3);
        }
    }
    if let (Some(ours), Some(perf)) = (
        outcome.median("unwind/script_stacks"),
        outcome.median("unwind/perf_script"),
    ) {
        println!(
            "unwind/script_stacks: {:.1}x faster than perf script",
            perf / ours
        );
    }
    std::process::exit(if outcome.all_ok() { 0 } else { 1 });
}
