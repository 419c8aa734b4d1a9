//! Shared by tests of several crates (included with `#[path]`): running the tools a test
//! needs (gcc, perf) in a folder, saying why and skipping where one is missing or refused.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::skip;

/// What a test lacks when `program` cannot run: the tool, or (for perf) the tool or
/// the kernel's leave to record.
fn need_of(program: &str) -> &'static str {
    match program {
        "gcc" | "g++" | "cc" => "gcc",
        "perf" => "perf",
        "addr2line" | "objcopy" | "strip" | "readelf" => "binutils",
        _ => "gcc",
    }
}

/// Runs `args` in `dir`: its standard output, or why not (the program missing, or its
/// failure and what it printed).
pub fn try_run_in(dir: &Path, args: &[&str]) -> Result<String, (std::io::ErrorKind, String)> {
    match Command::new(args[0])
        .args(&args[1..])
        .current_dir(dir)
        .output()
    {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).into_owned()),
        Ok(o) => Err((
            std::io::ErrorKind::Other,
            format!(
                "{args:?} failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ),
        )),
        Err(e) => Err((e.kind(), format!("{args:?}: {e}"))),
    }
}

/// Runs `args` in `dir`; its standard output, or `None` after saying why it could not
/// (a skip of the tool's need).
pub fn run_in(dir: &Path, args: &[&str]) -> Option<String> {
    try_run_in(dir, args)
        .map_err(|(_, why)| skip::skip(need_of(args[0]), why))
        .ok()
}

/// How many runs of a program, each about `seconds`, give about `samples` samples with
/// `perf record -F HZ` here: perf samples at the kernel's limit,
/// `kernel.perf_event_max_sample_rate`, where that is lower than `hz`. The kernel lowers it
/// by itself when sampling interrupts run long (a VM's virtual PMU does), so after other
/// tests have sampled it can be as low as the tick rate.
pub fn runs_for(samples: u64, hz: u64, seconds: f64) -> usize {
    let rate = sparkles_sampler::session::allowed_frequency(hz);
    (samples as f64 / (rate as f64 * seconds)).ceil().max(1.0) as usize
}

/// Samples a capture of [`perf_record`] is made long enough to hold, about.
pub const SAMPLES: u64 = 600;

/// The frequency the test captures sample at: 4000 Hz, or half the kernel's limit where
/// that is lower. At the limit itself the kernel throttles the event for the rest of a
/// tick whenever the adjusted period overshoots the per-tick budget, and sampling that
/// follows the tick leans toward what runs after it: at a 1000 Hz limit, `perf record -F
/// 1000` of hotspots.c was throttled 143 to 299 times in about 1000 samples, and in a
/// diff test run one function's share was 30.1% in one capture and 21.7% in the next, of
/// the same code. At half the limit it was throttled 0 to 4 times.
pub fn test_frequency() -> u64 {
    frequency_up_to(4000)
}

/// `max_hz`, or half the kernel's limit where that is lower ([`test_frequency`]'s rule).
pub fn frequency_up_to(max_hz: u64) -> u64 {
    sparkles_sampler::session::max_sample_rate()
        .map_or(max_hz, |limit| (limit / 2).clamp(1, max_hz))
}

/// `perf record -F HZ --call-graph CALL_GRAPH -o OUT PROGRAM [x …]` in `dir`, at
/// [`test_frequency`], with cycles where the PMU counts, else the CPU clock; the capture's
/// path. The test programs take their argument count as the number of runs of their work,
/// each about `seconds`: they are given as many as [`SAMPLES`] needs ([`runs_for`]).
pub fn perf_record(
    dir: &Path,
    call_graph: &str,
    out: &str,
    program: &str,
    seconds: f64,
) -> Option<PathBuf> {
    let hz = test_frequency();
    perf_record_samples(dir, call_graph, out, program, seconds, SAMPLES, hz)
}

/// [`perf_record`] made long enough for about `samples` samples, at up to `max_hz` (half
/// the kernel's limit where that is lower).
pub fn perf_record_samples(
    dir: &Path,
    call_graph: &str,
    out: &str,
    program: &str,
    seconds: f64,
    samples: u64,
    max_hz: u64,
) -> Option<PathBuf> {
    let hz = frequency_up_to(max_hz);
    let runs = runs_for(samples, hz, seconds);
    let hz = hz.to_string();
    let mut last = String::new();
    for event in ["cycles", "cpu-clock"] {
        let mut args = vec![
            "perf",
            "record",
            "-q",
            "-e",
            event,
            "-F",
            &hz,
            "--call-graph",
            call_graph,
            "-o",
            out,
            program,
        ];
        args.extend(std::iter::repeat_n("x", runs - 1));
        match try_run_in(dir, &args) {
            Ok(_) => return Some(dir.join(out)),
            Err((std::io::ErrorKind::NotFound, why)) => {
                skip::skip("perf", why);
                return None;
            }
            // cycles where there is no PMU: cpu-clock next.
            Err((_, why)) => last = why,
        }
    }
    skip::skip("perf_event", last);
    None
}
