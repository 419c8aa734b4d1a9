//! What sampling costs the body being profiled, against perf record in the same run.
//!
//! - `sampling/plain`: a CPU-bound body (the demo's sieve) with nothing attached.
//! - `sampling/sparkles`: the same body while a sparkles session samples its thread at
//!   4 kHz with 8 KiB stack copies and the drain thread empties the ring buffers.
//! - `sampling/perf_record`: the same body while `perf record -F 4000 --call-graph
//!   dwarf,8192 -t TID` samples it (needs perf).
//!
//! The slowdowns (median over `plain`) are printed as a ratio, and so are the capture
//! sizes of one second of sampling with and without stack compaction. Cases run in
//! blocked order: a session attaches to every thread of the process, so no other case
//! may time while one is active.

mod demo_suite;
use demo_suite as demo;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;
use sparkles_bench::args::SampleOrder;
use sparkles_bench::{HarnessArgs, Suite};
use sparkles_sampler::session::{default_event, CallGraph, Rate, SamplingConfig, Session, Target};
use sparkles_sampler::system::System;
use sparkles_sampler::EventResolver;

fn config(compact: bool) -> Option<SamplingConfig> {
    let resolver = EventResolver::live().ok()?;
    let (event, _) = default_event(&resolver, &System::probe());
    Some(SamplingConfig {
        events: vec![event.into()],
        rate: Rate::Frequency(4000),
        call_graph: CallGraph::Dwarf(8192),
        buffer_pages: 256,
        compact_stacks: compact,
        memory: None,
    })
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

fn body() -> usize {
    demo::sieve(std::hint::black_box(1 << 18))
}

/// Bytes of a one-second capture of the body.
fn capture_size(compact: bool) -> Option<(u64, u64)> {
    let config = config(compact)?;
    let session = Session::start(&config, Target::CurrentThread, &System::probe()).ok()?;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(1) {
        body();
    }
    let capture = session.finish();
    Some((capture.writer.to_bytes().len() as u64, capture.samples))
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
        let refused = config(true).and_then(|c| {
            Session::start(&c, Target::CurrentThread, &System::probe())
                .map(|s| drop(s.finish()))
                .err()
        });
        if let Some(why) = &refused {
            eprintln!("sampling/sparkles: not measured: {why}");
        }
        if refused.is_none() {
            g.case("sparkles", |b| -> Result<(), String> {
                let config = config(true).ok_or("no event resolves here")?;
                let session = Session::start(&config, Target::CurrentThread, &System::probe())
                    .map_err(|e| e.to_string())?;
                b.iter(body);
                let capture = session.finish();
                eprintln!(
                    "sampling/sparkles: {} samples, {} lost",
                    capture.samples,
                    capture.lost + capture.lost_samples
                );
                Ok(())
            });
        }
        if Command::new("perf").arg("--version").output().is_ok() {
            g.case("perf_record", |b| -> Result<(), String> {
                let out = std::env::temp_dir().join(format!(
                    "sparkles-sampling-{}.perf.data",
                    std::process::id()
                ));
                let mut perf = Command::new("perf")
                    .args([
                        "record",
                        "-q",
                        "-F",
                        "4000",
                        "--call-graph",
                        "dwarf,8192",
                        "-t",
                        &gettid().to_string(),
                        "-o",
                    ])
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
            });
        }
    });
    let outcome = sparkles_bench::run_or_exit(suite, &args);
    let median = |case: &str| outcome.median(case);
    if let Some(plain) = median("sampling/plain") {
        let slowdown = |case| median(case).map(|m| (m / plain - 1.0) * 100.0);
        if let Some(ours) = slowdown("sampling/sparkles") {
            print!("sampling slowdown of the body: sparkles {ours:+.1}%");
            match slowdown("sampling/perf_record") {
                Some(perf) => println!(
                    ", perf record {perf:+.1}% (ratio of slowdowns {:.2})",
                    ours / perf.max(0.01)
                ),
                None => println!(" (perf not installed: no peer)"),
            }
        }
    }
    if args.bench && !args.list {
        if let (Some((compact, n1)), Some((full, n2))) = (capture_size(true), capture_size(false)) {
            println!(
                "one second of capture: {:.1} MB compacted ({n1} samples), {:.1} MB full ({n2} samples): {:.1}x smaller",
                compact as f64 / 1e6,
                full as f64 / 1e6,
                (full as f64 / n2.max(1) as f64) / (compact as f64 / n1.max(1) as f64)
            );
        }
    }
    std::process::exit(if outcome.all_ok() { 0 } else { 1 });
}
