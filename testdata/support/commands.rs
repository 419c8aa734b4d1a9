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

/// `perf record -F 4000 --call-graph CALL_GRAPH -o OUT PROGRAM [x …]` in `dir`, with cycles
/// where the PMU counts, else the CPU clock; the capture's path. The test programs take
/// their argument count as the number of runs of their work, each about `seconds`: they
/// are given as many as [`SAMPLES`] needs ([`runs_for`]).
pub fn perf_record(
    dir: &Path,
    call_graph: &str,
    out: &str,
    program: &str,
    seconds: f64,
) -> Option<PathBuf> {
    let runs = runs_for(SAMPLES, 4000, seconds);
    for event in ["cycles", "cpu-clock"] {
        let mut args = vec![
            "perf",
            "record",
            "-q",
            "-e",
            event,
            "-F",
            "4000",
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
