//! Shared by tests of several crates (included with `#[path]`): running the tools a test
//! needs (gcc, perf) in a folder, saying why and skipping where one is missing or refused.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `args` in `dir`; its standard output, or `None` after printing why it could not.
pub fn run_in(dir: &Path, args: &[&str]) -> Option<String> {
    match Command::new(args[0])
        .args(&args[1..])
        .current_dir(dir)
        .output()
    {
        Ok(o) if o.status.success() => Some(String::from_utf8_lossy(&o.stdout).into_owned()),
        Ok(o) => {
            eprintln!(
                "skipped: {args:?} failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            None
        }
        Err(e) => {
            eprintln!("skipped: {args:?}: {e}");
            None
        }
    }
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
    sparkles_sampler::session::max_sample_rate().map_or(4000, |limit| (limit / 2).clamp(1, 4000))
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
    let runs = runs_for(SAMPLES, hz, seconds);
    let hz = hz.to_string();
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
        if run_in(dir, &args).is_some() {
            return Some(dir.join(out));
        }
    }
    None
}
