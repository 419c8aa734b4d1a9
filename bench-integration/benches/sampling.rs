//! What sampling costs the body being profiled, against perf record in the same run.
//!
//! - `sampling/plain`: a CPU-bound body (the demo's sieve) with nothing attached.
//! - `sampling/sparkles`: the same body while a sparkles session samples its thread at
//!   4 kHz with the default stack copies (16 KiB) and the drain thread empties the ring
//!   buffers, streaming the records zstd-compressed to a file (the default).
//! - `sampling/sparkles_uncompressed`: the same, the records stored as they are.
//! - `sampling/sparkles_8k`: the same with 8 KiB stack copies (perf's default): what the
//!   larger default costs per sample.
//! - `sampling/perf_record` and `sampling/perf_record_z`: the same body while
//!   `perf record -F 4000 --call-graph dwarf,16384 -t TID` (with `-z`) samples it (needs
//!   perf).
//!
//! - `sampling/pingpong_plain`, `sampling/pingpong_sampled`, `sampling/pingpong_offcpu`:
//!   100 channel round trips with a helper thread (the demo's `sync/channel_pingpong`),
//!   alone, sampled, and sampled with off-CPU capture (`--profile=wall`: switch records
//!   and, where allowed, a `sched:sched_switch` sample with its stack at each switch-out).
//!   Their difference over the switch-outs of an iteration is what off-CPU capture costs
//!   per context switch.
//!
//! The slowdowns (median over `plain`) are printed as ratios, and so are the capture
//! sizes of one second of sampling with and without stack compaction and compression. Cases run in
//! blocked order: a session attaches to every thread of the process, so no other case
//! may time while one is active.

mod demo_suite;
use demo_suite as demo;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;
use sparkles_bench::args::SampleOrder;
use sparkles_bench::{HarnessArgs, Suite};
use sparkles_perf_data::writer::Compression;
use sparkles_sampler::session::{
    default_event, CallGraph, Rate, SamplingConfig, Session, Target, DEFAULT_STACK_BYTES,
};
use sparkles_sampler::system::System;
use sparkles_sampler::EventResolver;

fn config(compact: bool, compression: Compression) -> Option<SamplingConfig> {
    config_with(compact, compression, DEFAULT_STACK_BYTES)
}

fn config_with(compact: bool, compression: Compression, stack: u32) -> Option<SamplingConfig> {
    let resolver = EventResolver::live().ok()?;
    let (event, _) = default_event(&resolver, &System::probe());
    Some(SamplingConfig {
        buffer_pages: 256,
        compact_stacks: compact,
        compression,
        ..SamplingConfig::new(
            vec![event.into()],
            Rate::Frequency(4000),
            CallGraph::Dwarf(stack),
        )
    })
}

/// A capture file of this process, removed when dropped.
fn scratch(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "sparkles-sampling-{}-{name}.perf.data",
        std::process::id()
    ))
}

/// The body timed while a session samples it, streaming its capture to a file.
fn sampled(
    b: &mut sparkles_bench::Bencher,
    compression: Compression,
    stack: u32,
) -> Result<(), String> {
    let path = scratch("ours");
    let config = SamplingConfig {
        stream_to: Some(path.clone()),
        ..config_with(true, compression, stack).ok_or("no event resolves here")?
    };
    let session = Session::start(&config, Target::CurrentThread, &System::probe())
        .map_err(|e| e.to_string())?;
    b.iter(body);
    let mut capture = session.finish();
    let written = capture.writer.write(&path).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(&path);
    eprintln!(
        "sampling/sparkles: {} samples, {} lost, {:.1} MB of records stored in {:.1} MB",
        capture.samples,
        capture.lost + capture.lost_samples,
        written.record_bytes as f64 / 1e6,
        written.bytes as f64 / 1e6
    );
    Ok(())
}

/// The body timed while `perf record` (with `extra` flags) samples its thread.
fn perf_sampled(b: &mut sparkles_bench::Bencher, extra: &[&str]) -> Result<(), String> {
    let out = scratch("perf");
    let mut perf = Command::new("perf")
        .args(["record", "-q", "-F", "4000", "--call-graph"])
        .arg(format!("dwarf,{DEFAULT_STACK_BYTES}"))
        .args(extra)
        .args(["-t", &gettid().to_string(), "-o"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("perf record: {e}"))?;
    // perf attaches within a fraction of a second; give it one.
    std::thread::sleep(Duration::from_secs(1));
    b.iter(body);
    interrupt(&mut perf);
    let _ = perf.wait();
    let _ = std::fs::remove_file(&out);
    Ok(())
}

/// The calling thread's kernel id (perf record's `-t`); there is no perf off Linux.
#[cfg(target_os = "linux")]
fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}

#[cfg(not(target_os = "linux"))]
fn gettid() -> u32 {
    0
}

/// Stops perf record as Ctrl-C does, so that it writes its capture.
#[cfg(unix)]
fn interrupt(child: &mut std::process::Child) {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
}

#[cfg(not(unix))]
fn interrupt(child: &mut std::process::Child) {
    let _ = child.kill();
}

/// The ping-pong timed while a session samples both of its threads, with off-CPU capture
/// where `off_cpu`.
fn sampled_pingpong(b: &mut sparkles_bench::Bencher, off_cpu: bool) -> Result<(), String> {
    let echo = demo::Echo::start();
    let path = scratch(if off_cpu { "offcpu" } else { "pingpong" });
    let mut config = SamplingConfig {
        stream_to: Some(path.clone()),
        ..config_with(true, Compression::default(), DEFAULT_STACK_BYTES)
            .ok_or("no event resolves here")?
    };
    if off_cpu {
        let resolver = EventResolver::live().map_err(|e| e.to_string())?;
        let source = sparkles_sampler::off_cpu::add_off_cpu(&mut config, &resolver);
        eprintln!("sampling/pingpong_offcpu: {source}");
    }
    let session = Session::start(&config, Target::CurrentThread, &System::probe())
        .map_err(|e| e.to_string())?;
    b.iter(|| echo.ping(std::hint::black_box(demo::HANDOFFS)));
    let mut capture = session.finish();
    let written = capture.writer.write(&path).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(&path);
    eprintln!(
        "sampling/pingpong: {} samples, {:.1} MB of records stored in {:.1} MB",
        capture.samples,
        written.record_bytes as f64 / 1e6,
        written.bytes as f64 / 1e6
    );
    Ok(())
}

fn body() -> usize {
    demo::sieve(std::hint::black_box(1 << 18))
}

/// Bytes of a one-second capture of the body, as written; and its samples.
fn capture_size(compact: bool, compression: Compression) -> Option<(u64, u64)> {
    let config = config(compact, compression)?;
    let session = Session::start(&config, Target::CurrentThread, &System::probe()).ok()?;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(1) {
        body();
    }
    let capture = session.finish();
    let (_, written) = capture.writer.encode().ok()?;
    Some((written.bytes, capture.samples))
}

fn main() {
    let mut args = HarnessArgs::parse();
    args.sample_order = SampleOrder::Blocked;
    let mut suite = Suite::new("sampling");
    suite.default_samples(12);
    suite.group("sampling", |g| {
        g.case("plain", |b| b.iter(body));
        // Where sampling is refused here (a seccomp filter, paranoid 3, no kernel edge),
        // there is nothing to measure: said, not failed.
        let refused = config(true, Compression::Off).and_then(|c| {
            Session::start(&c, Target::CurrentThread, &System::probe())
                .map(|s| drop(s.finish()))
                .err()
        });
        if let Some(why) = &refused {
            eprintln!("sampling/sparkles: not measured: {why}");
        }
        if refused.is_none() {
            g.case("sparkles", |b| {
                sampled(b, Compression::default(), DEFAULT_STACK_BYTES)
            });
            g.case("sparkles_uncompressed", |b| {
                sampled(b, Compression::Off, DEFAULT_STACK_BYTES)
            });
            g.case("sparkles_8k", |b| sampled(b, Compression::default(), 8192));
        }
        g.case("pingpong_plain", |b| {
            let echo = demo::Echo::start();
            b.iter(|| echo.ping(std::hint::black_box(demo::HANDOFFS)));
        });
        if refused.is_none() {
            g.case("pingpong_sampled", |b| sampled_pingpong(b, false));
            g.case("pingpong_offcpu", |b| sampled_pingpong(b, true));
        }
        if Command::new("perf").arg("--version").output().is_ok() {
            g.case("perf_record", |b| perf_sampled(b, &[]));
            g.case("perf_record_z", |b| perf_sampled(b, &["-z"]));
        }
    });
    let outcome = sparkles_bench::run_or_exit(suite, &args);
    let median = |case: &str| outcome.median(case);
    if let Some(plain) = median("sampling/plain") {
        let slowdown = |case| median(case).map(|m| (m / plain - 1.0) * 100.0);
        for (ours, theirs) in [
            ("sampling/sparkles", "sampling/perf_record_z"),
            ("sampling/sparkles_uncompressed", "sampling/perf_record"),
            ("sampling/sparkles_8k", "sampling/sparkles"),
        ] {
            if let Some(o) = slowdown(ours) {
                print!("sampling slowdown of the body: {ours} {o:+.1}%");
                match slowdown(theirs) {
                    Some(t) => println!(
                        ", {theirs} {t:+.1}% (ratio of slowdowns {:.2})",
                        o / t.max(0.01)
                    ),
                    None => println!(" (perf not installed: no peer)"),
                }
            }
        }
    }
    if let (Some(sampled), Some(off)) = (
        median("sampling/pingpong_sampled"),
        median("sampling/pingpong_offcpu"),
    ) {
        // Each round trip switches each thread out once.
        let switches = 2.0 * demo::HANDOFFS as f64;
        println!(
            "off-CPU capture: {:+.0} ns per context switch ({:.1} µs per round trip sampled, {:.1} µs with off-CPU capture{})",
            (off - sampled) / switches,
            sampled / demo::HANDOFFS as f64 / 1e3,
            off / demo::HANDOFFS as f64 / 1e3,
            median("sampling/pingpong_plain")
                .map(|p| format!(", {:.1} µs alone", p / demo::HANDOFFS as f64 / 1e3))
                .unwrap_or_default()
        );
    }
    if args.bench && !args.list {
        let sizes = [
            ("compacted, zstd", true, Compression::default()),
            ("compacted", true, Compression::Off),
            ("full stacks", false, Compression::Off),
        ];
        let measured: Vec<_> = sizes
            .iter()
            .filter_map(|(what, compact, c)| Some((*what, capture_size(*compact, *c)?)))
            .collect();
        if let Some((_, (base, base_n))) = measured.last().copied() {
            let per_sample = |bytes: u64, n: u64| bytes as f64 / n.max(1) as f64;
            let line: Vec<String> = measured
                .iter()
                .map(|(what, (bytes, n))| {
                    format!(
                        "{:.1} MB {what} ({n} samples, {:.1}x smaller)",
                        *bytes as f64 / 1e6,
                        per_sample(base, base_n) / per_sample(*bytes, *n)
                    )
                })
                .collect();
            println!("one second of capture: {}", line.join(", "));
        }
    }
    std::process::exit(if outcome.all_ok() { 0 } else { 1 });
}
